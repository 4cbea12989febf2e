package source

import (
	"net"
	"syscall"
	"testing"
)

// A connection from Dialer probes after 15 s idle, every 5 s, 3 times.
func TestDialerKeepalive(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := Dialer().DialContext(t.Context(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name       string
		level, opt int
		value      int
	}{
		{"SO_KEEPALIVE", syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
		{"TCP_KEEPIDLE", syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, 15},
		{"TCP_KEEPINTVL", syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, 5},
		{"TCP_KEEPCNT", syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, 3},
	}
	for _, w := range want {
		var got int
		var gerr error
		if err := raw.Control(func(fd uintptr) { got, gerr = syscall.GetsockoptInt(int(fd), w.level, w.opt) }); err != nil {
			t.Fatal(err)
		}
		if gerr != nil || got != w.value {
			t.Errorf("%s = %d (%v), want %d", w.name, got, gerr, w.value)
		}
	}
}
