//go:build !linux

package source

import (
	"errors"
	"syscall"
)

// setLowWater fails where SO_RCVLOWAT is not known: Coalesce then leaves
// the connection as it is.
func setLowWater(syscall.RawConn, int) error {
	return errors.New("SO_RCVLOWAT is not supported here")
}
