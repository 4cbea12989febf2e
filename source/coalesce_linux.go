//go:build linux

package source

import "syscall"

// setLowWater sets the socket's SO_RCVLOWAT: the bytes that must have
// arrived before the kernel signals it readable.
func setLowWater(raw syscall.RawConn, n int) error {
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	}); err != nil {
		return err
	}
	return serr
}
