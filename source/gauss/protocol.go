package gauss

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/decant/decant/source"
)

// The replication protocol is PostgreSQL's, except for two messages that
// GaussDB and openGauss copy as raw C structs in the server's byte order
// (little-endian on x86-64 and aarch64): the keepalive 'k' (33 bytes) and
// the standby status update 'r' (65 bytes). See gaussdb-decoding.md §1.5,
// §1.6; pglogrepl's helpers for them cannot be used.

// pgEpoch is the zero of replication timestamps: 2000-01-01 UTC.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// keepalive is a decoded 'k'.
type keepalive struct {
	WALEnd         source.LSN
	SendTime       time.Time
	ReplyRequested bool
}

// parseKeepalive decodes a 'k' message (b includes the 'k'): walEnd u64,
// peer_role i32, peer_state i32, sendTime i64, replyRequested u8, all
// little-endian; later fields are ignored.
func parseKeepalive(b []byte) (keepalive, error) {
	if len(b) < 26 || b[0] != 'k' {
		return keepalive{}, fmt.Errorf("keepalive message of %d bytes: want at least 26", len(b))
	}
	return keepalive{
		WALEnd:         source.LSN(binary.LittleEndian.Uint64(b[1:])),
		SendTime:       pgEpoch.Add(time.Duration(int64(binary.LittleEndian.Uint64(b[17:]))) * time.Microsecond),
		ReplyRequested: b[25] != 0,
	}, nil
}

// statusUpdate encodes the 65-byte 'r': receive, write, flush, apply and
// applyRead all set to pos (the position the target has durably applied:
// an LSN, or a CSN on CSN-ordered slots), peer role and state 0, the send
// time in microseconds since 2000, replyRequested when reply is set (the
// server then answers with a keepalive at once), no flags. Only flush
// advances the slot.
func statusUpdate(pos uint64, now time.Time, reply bool) []byte {
	b := make([]byte, 65)
	b[0] = 'r'
	for _, off := range []int{1, 9, 17, 25, 33} {
		binary.LittleEndian.PutUint64(b[off:], pos)
	}
	binary.LittleEndian.PutUint64(b[49:], uint64(now.Sub(pgEpoch).Microseconds()))
	if reply {
		b[57] = 1
	}
	return b
}

// parseXLogData splits a 'w' message (b includes the 'w'): dataStart,
// walEnd and sendTime, big-endian as in PostgreSQL, then the payload.
func parseXLogData(b []byte) (dataStart source.LSN, payload []byte, err error) {
	if len(b) < 25 || b[0] != 'w' {
		return 0, nil, fmt.Errorf("XLogData message of %d bytes: want at least 25", len(b))
	}
	return source.LSN(binary.BigEndian.Uint64(b[1:])), b[25:], nil
}
