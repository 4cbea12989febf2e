package source

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// A replication stream in full flow arrives as a trickle of small TCP
// segments, one per decoded change: the walsender sends each message as
// soon as it is made. A reader that is waiting wakes for each, so every
// change costs the reader a wakeup and a read, and the walsender, whose
// send does the waking, the loopback delivery and a cross-CPU wakeup. On
// a machine where system calls and wakeups are dear (virtual CPUs), that
// is more than the decoding and applying of the change.
//
// Coalesce makes such a connection wake its reader once per
// coalesceBytes while data arrives fast (SO_RCVLOWAT: the kernel does not
// signal the socket readable below that many bytes), and reads into a
// buffer of its own, so that one read takes whatever has piled up. It
// switches to that only after coalesceBytes arrived within coalesceWindow
// (a backlog, or a burst), and back to waking on any byte when a wait for
// coalesceBytes lasts coalesceLinger: at the end of a burst, the last
// changes wait at most that long, and a stream of small, spaced
// transactions never waits at all.
//
// The socket's receive buffer is set to coalesceRcvbuf: each message is a
// segment of its own, whose kernel overhead is several times its bytes,
// and the autotuned buffer (128 KiB to start with) fills up with
// segments holding well under coalesceBytes, so that the wait would end
// by the linger every time.

const (
	coalesceBytes  = 64 << 10
	coalesceWindow = 20 * time.Millisecond
	coalesceLinger = 5 * time.Millisecond
	coalesceBuffer = 256 << 10
	coalesceRcvbuf = 4 << 20
)

// Coalesce wraps a TCP connection read by one goroutine at a time (a
// replication stream) as the comment above says; other connections are
// returned as they are. Deadlines set on the result keep their meaning.
func Coalesce(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil || setLowWater(raw, 1) != nil || tc.SetReadBuffer(coalesceRcvbuf) != nil {
		return c
	}
	return &coalescingConn{Conn: c, lowWater: func(n int) error { return setLowWater(raw, n) }, buf: make([]byte, coalesceBuffer)}
}

// CoalescingDialer dials as Dialer does and wraps the connection in
// Coalesce; it fits pgconn.Config.DialFunc.
func CoalescingDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := Dialer().DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return Coalesce(c), nil
}

type coalescingConn struct {
	net.Conn
	lowWater func(n int) error // sets SO_RCVLOWAT

	buf  []byte
	r, w int // buf[r:w] is read and not yet handed out

	// Eager reading (any byte wakes the reader): bytes read since when.
	got   int
	since time.Time

	mu       sync.Mutex // deadline, batching and linger: SetReadDeadline may come from another goroutine
	deadline time.Time  // the caller's read deadline
	batching bool       // SO_RCVLOWAT is coalesceBytes
	linger   time.Time  // while batching: when a wait gives up on coalesceBytes
	batches  int        // times batching started
}

func (c *coalescingConn) Read(p []byte) (int, error) {
	if c.r == c.w {
		n, err := c.fill()
		if n == 0 {
			return 0, err
		}
		c.r, c.w = 0, n
	}
	n := copy(p, c.buf[c.r:c.w])
	c.r += n
	return n, nil
}

// fill reads what has arrived into buf. A wait for coalesceBytes that
// lasts coalesceLinger ends batching, and the read is tried again
// waking on any byte; the caller's own deadline ends it as usual.
func (c *coalescingConn) fill() (int, error) {
	for {
		n, err := c.Conn.Read(c.buf)
		if n > 0 {
			c.observe(n)
			return n, nil
		}
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return 0, err
		}
		done, serr := c.lingered()
		if serr != nil {
			return 0, serr
		}
		if !done {
			return 0, err
		}
	}
}

// observe accounts a read of n bytes: while batching it renews the
// linger; otherwise it starts batching once coalesceBytes came within
// coalesceWindow.
func (c *coalescingConn) observe(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batching {
		c.linger = time.Now().Add(coalesceLinger)
		c.Conn.SetReadDeadline(c.effective())
		return
	}
	if c.got += n; c.got < coalesceBytes {
		return
	}
	now := time.Now()
	if now.Sub(c.since) <= coalesceWindow && c.lowWater(coalesceBytes) == nil {
		c.batching = true
		c.batches++
		c.linger = now.Add(coalesceLinger)
		c.Conn.SetReadDeadline(c.effective())
	}
	c.got, c.since = 0, now
}

// lingered handles a read that ended by its deadline: when it was the
// linger's (not the caller's), batching stops and done is true.
func (c *coalescingConn) lingered() (done bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.batching || (!c.deadline.IsZero() && !time.Now().Before(c.deadline)) {
		return false, nil
	}
	c.batching = false
	c.got, c.since = 0, time.Now()
	if err := c.lowWater(1); err != nil {
		return false, err
	}
	return true, c.Conn.SetReadDeadline(c.deadline)
}

// effective is the deadline the socket gets: the caller's, or while
// batching the linger's when that comes first. c.mu is held.
func (c *coalescingConn) effective() time.Time {
	if !c.batching || (!c.deadline.IsZero() && c.deadline.Before(c.linger)) {
		return c.deadline
	}
	return c.linger
}

func (c *coalescingConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadline = t
	return c.Conn.SetReadDeadline(c.effective())
}

func (c *coalescingConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}
