package mysql

import (
	"net"
	"syscall"
	"testing"
)

// The driver dials through source.Dialer: short keepalives.
func TestParseDSNKeepalive(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg, err := ParseDSN("mysql://u@" + l.Addr().String() + "/db")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DialFunc == nil {
		t.Fatal("no DialFunc")
	}
	c, err := cfg.DialFunc(t.Context(), cfg.Net, cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Wrapped by the link guard (link.go), which lends its socket out.
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	// Go's own default is 15 s idle, 15 s apart, 9 probes.
	for opt, want := range map[int]int{syscall.TCP_KEEPIDLE: 15, syscall.TCP_KEEPINTVL: 5, syscall.TCP_KEEPCNT: 3} {
		var got int
		var gerr error
		raw.Control(func(fd uintptr) { got, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, opt) })
		if gerr != nil || got != want {
			t.Errorf("TCP option %d = %d (%v), want %d", opt, got, gerr, want)
		}
	}
}
