package integration

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestProxy checks the fault proxy itself against an echo server.
func TestProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	prx := newProxy(t, ln.Addr().String())
	c, err := net.Dial("tcp", prx.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 16)
	echo := func(msg string, want bool) {
		t.Helper()
		if msg != "" {
			if _, err := c.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
		}
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := c.Read(buf)
		if got := err == nil; got != want {
			t.Fatalf("after %q: read %q, %v; want an answer: %v", msg, buf[:n], err, want)
		}
	}
	echo("a", true)
	prx.Stall()
	echo("b", false)
	prx.Resume()
	echo("", true) // what was held comes through
	prx.HoldOn("COMMIT")
	echo("x COMMIT", false)
	if !prx.Held() {
		t.Fatal("the pattern was not seen")
	}
	echo("c", false) // the link stays held
	prx.Resume()
	echo("", true)
	prx.CloseAll()
	c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := c.Read(buf); err == nil {
		t.Fatal("the connection survived CloseAll")
	}
}
