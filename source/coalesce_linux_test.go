package source

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// pair returns a coalescing client connection and the server end of a
// loopback TCP connection.
func pair(t *testing.T) (*coalescingConn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c
	}()
	c, err := CoalescingDialer(t.Context(), "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv := <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); srv.Close() })
	cc, ok := c.(*coalescingConn)
	if !ok {
		t.Fatalf("CoalescingDialer gave a %T", c)
	}
	return cc, srv
}

func lowWater(t *testing.T, c *coalescingConn) int { return sockopt(t, c, syscall.SO_RCVLOWAT) }

func sockopt(t *testing.T, c *coalescingConn, opt int) int {
	t.Helper()
	raw, err := c.Conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		got, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, opt)
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return got
}

// Everything written arrives intact and in order, in a burst (which
// makes the reader batch) followed by small messages spaced out (which
// must each arrive well before the caller's deadline, not wait for more).
func TestCoalesceBurstThenTrickle(t *testing.T) {
	c, srv := pair(t)
	// The kernel reports twice what was set (its bookkeeping's share).
	if got := sockopt(t, c, syscall.SO_RCVBUF); got < coalesceRcvbuf {
		t.Fatalf("SO_RCVBUF = %d, want at least %d", got, coalesceRcvbuf)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	burst := make([]byte, 4<<20)
	for i := range burst {
		burst[i] = byte(rng.Uint32())
	}
	go func() {
		for rest := burst; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(3000))
			srv.Write(rest[:n])
			rest = rest[n:]
		}
	}()
	got := make([]byte, len(burst))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, burst) {
		t.Fatal("the burst arrived changed")
	}
	c.mu.Lock()
	batches := c.batches
	c.mu.Unlock()
	if batches == 0 {
		t.Fatal("a 4 MiB burst did not switch the connection to batching")
	}
	// Small messages, spaced: each must come within the linger (plus
	// scheduling slack), far under the 5 s deadline.
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	for i := range 5 {
		msg := []byte{byte(i), 1, 2, 3}
		sent := time.Now()
		if _, err := srv.Write(msg); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !bytes.Equal(buf[:n], msg) {
			t.Fatalf("message %d: got %v, want %v", i, buf[:n], msg)
		}
		if wait := time.Since(sent); wait > time.Second {
			t.Fatalf("message %d took %s to arrive", i, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.mu.Lock()
	batching := c.batching
	c.mu.Unlock()
	if batching {
		t.Fatal("still batching after a trickle")
	}
	if lw := lowWater(t, c); lw != 1 {
		t.Fatalf("SO_RCVLOWAT after the trickle = %d, want 1", lw)
	}
}

// The caller's deadline ends a read as it would without coalescing, in
// either mode, and a deadline moved to now from another goroutine (how a
// cancelled context stops a read) ends a read that waits.
func TestCoalesceDeadlines(t *testing.T) {
	for _, batching := range []bool{false, true} {
		c, srv := pair(t)
		if batching {
			if lw := lowWater(t, c); lw != 1 {
				t.Fatalf("SO_RCVLOWAT of a new connection = %d, want 1", lw)
			}
			c.mu.Lock()
			c.batching = true
			c.linger = time.Now().Add(time.Hour) // no linger in the way
			c.mu.Unlock()
			if err := c.lowWater(coalesceBytes); err != nil {
				t.Fatal(err)
			}
			if lw := lowWater(t, c); lw != coalesceBytes {
				t.Fatalf("SO_RCVLOWAT = %d, want %d", lw, coalesceBytes)
			}
		}
		if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := c.Read(make([]byte, 10))
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("batching %v: read past the deadline: %v, want a timeout", batching, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("batching %v: the deadline ended the read after %s", batching, d)
		}
		if err := c.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(50 * time.Millisecond)
			c.SetReadDeadline(time.Now())
		}()
		if _, err := c.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("batching %v: read after SetReadDeadline(now): %v, want a timeout", batching, err)
		}
		// The connection still works after a timeout.
		c.SetReadDeadline(time.Time{})
		srv.Write([]byte("abc"))
		if !batching {
			buf := make([]byte, 10)
			n, err := c.Read(buf)
			if err != nil || string(buf[:n]) != "abc" {
				t.Fatalf("read after a timeout: %q, %v", buf[:n], err)
			}
		}
	}
}

// A connection that is not TCP is left as it is.
func TestCoalesceOnlyTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if Coalesce(a) != a {
		t.Fatal("a pipe was wrapped")
	}
}
