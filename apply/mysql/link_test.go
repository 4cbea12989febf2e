package mysql

import (
	"errors"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

func packet(seq byte, p ...byte) []byte {
	return append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), seq}, p...)
}

// TestKeyGuardScan: the packet carrying the server's public key is found
// however the stream is cut into reads, behind other packets; after OK
// or ERR nothing is judged; before the client's first packet nothing is.
func TestKeyGuardScan(t *testing.T) {
	key := packet(4, append([]byte("\x01-----BEGIN PUBLIC KEY-----\n"), make([]byte, 300)...)...)
	greet := packet(0, append([]byte{0x0a}, make([]byte, 60)...)...)
	cat := func(ps ...[]byte) []byte {
		var b []byte
		for _, p := range ps {
			b = append(b, p...)
		}
		return b
	}
	for _, c := range []struct {
		name    string
		stream  []byte
		wrote   bool
		refused bool
	}{
		{"key", cat(packet(2, 0x01, 0x04), key), true, true},
		{"short packets first", cat(packet(2), packet(3, 0x01), key), true, true},
		{"ok first", cat(packet(2, 0x00, 0, 0), key), true, false},
		{"err first", cat(packet(2, 0xFF, 0x15, 0x04), key), true, false},
		{"before the client spoke", cat(greet, key), false, false},
		{"more data, no key", cat(packet(2, 0x01, 0x03), packet(3, 0x00)), true, false},
	} {
		for _, step := range []int{1, 3, 4, 7, 16, 4096} {
			k := &keyGuard{addr: "db:3306", refuse: true, wrote: c.wrote}
			var err error
			for b := c.stream; len(b) > 0 && err == nil; b = b[min(step, len(b)):] {
				err = k.scan(b[:min(step, len(b))])
			}
			var refused *source.RefusedError
			if got := errors.As(err, &refused); got != c.refused {
				t.Errorf("%s in reads of %d: refused %v, want %v (%v)", c.name, step, got, c.refused, err)
			}
			if err != nil && !strings.Contains(err.Error(), AllowKeyParam+"=true") {
				t.Errorf("%s: %v does not name %s", c.name, err, AllowKeyParam)
			}
		}
	}
}

// TestAllowKeyParam: decant's parameter leaves the driver's config (it
// would be a session variable) and must be a boolean.
func TestAllowKeyParam(t *testing.T) {
	_, g, err := parseDSN("mysql://u:p@db:3306/x?allowPublicKeyRetrieval=true")
	if err != nil || !g.allowKey {
		t.Fatalf("parse: %v, allow %v", err, g != nil && g.allowKey)
	}
	cfg, err := ParseDSN("mysql://u:p@db:3306/x?allowPublicKeyRetrieval=1")
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := cfg.Params[AllowKeyParam]; kept {
		t.Errorf("%s stays among the session variables: %v", AllowKeyParam, cfg.Params)
	}
	if _, err := ParseDSN("mysql://u:p@db:3306/x?allowPublicKeyRetrieval=perhaps"); err == nil || !strings.Contains(err.Error(), "want true or false") {
		t.Errorf("a bad value: %v", err)
	}
}
