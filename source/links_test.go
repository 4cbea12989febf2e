package source

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestLinksLocal: the decision is by the address reached; the override
// makes every address remote.
func TestLinksLocal(t *testing.T) {
	l := NewLinks(slog.New(slog.DiscardHandler), false)
	strict := NewLinks(slog.New(slog.DiscardHandler), true)
	for _, c := range []struct {
		addr  net.Addr
		local bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5432}, true},
		{&net.TCPAddr{IP: net.IPv4(127, 8, 9, 10), Port: 5432}, true},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 5432}, true},
		{&net.UnixAddr{Name: "/tmp/.s.PGSQL.5432", Net: "unix"}, true},
		{&net.TCPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 5432}, false},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 3306}, false},
		{&net.TCPAddr{IP: net.ParseIP("fd00::2"), Port: 3306}, false},
	} {
		if got := l.Local(c.addr); got != c.local {
			t.Errorf("Local(%s) = %v, want %v", c.addr, got, c.local)
		}
		if strict.Local(c.addr) {
			t.Errorf("with loopbackIsRemote, Local(%s) = true", c.addr)
		}
	}
}

// TestLinksWarnOncePerSide: a side is warned about once, at its first
// link that is remote and not verified, whatever links follow; a local or
// verified link is not warned about.
func TestLinksWarnOncePerSide(t *testing.T) {
	var buf bytes.Buffer
	l := NewLinks(slog.New(slog.NewTextHandler(&buf, nil)), false)
	l.Observe(Link{Side: "source", Addr: "127.0.0.1:5432", Local: true})
	l.Observe(Link{Side: "target", Addr: "db:5432", Encrypted: true, Verified: true})
	if buf.Len() != 0 {
		t.Fatalf("local and verified links warned: %s", buf.String())
	}
	for range 3 {
		l.Observe(Link{Side: "source", Addr: "db:5432", Fix: "sslmode=verify-full"})
		l.Observe(Link{Side: "target", Addr: "db:3306", Encrypted: true, Fix: "tls-ca=FILE"})
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d warnings, want one per side:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{"source connection is not encrypted", "target connection is encrypted but"} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], "fix=") {
			t.Errorf("warning %q lacks %q or the fix", lines[i], want)
		}
	}
	st := l.States()
	if len(st) != 2 || st[0] != (LinkState{Side: "source"}) || st[1] != (LinkState{Side: "target", Encrypted: true}) {
		t.Errorf("States() = %+v", st)
	}
}
