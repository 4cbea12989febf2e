package main

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// syscallCost times a system call that finds nothing to do: a
// non-blocking read of an empty socket, which is what the walsender makes
// after every WAL record it decodes (README, "the walsender's system
// calls"). Its price is the host's and moves between runs by more than
// any change decant makes, so the run prints it: it tells a slow machine
// from a slow change.
func syscallCost() (time.Duration, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		return 0, err
	}
	const calls = 200000
	var b [1]byte
	start := time.Now()
	for range calls {
		if _, err := syscall.Read(fds[0], b[:]); !errors.Is(err, syscall.EAGAIN) {
			return 0, fmt.Errorf("read of an empty socket: got %v, want EAGAIN", err)
		}
	}
	return time.Since(start) / calls, nil
}
