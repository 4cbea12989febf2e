package gaussstub

import (
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/decant/decant/source"
)

// statusUpdateLen is the size of openGauss's 'r': the type byte and the
// 64-byte StandbyReplyMessage struct (spec §1.6).
const statusUpdateLen = 65

// pgEpoch is the origin of the protocol's timestamps.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// pgTime is t in microseconds since 2000-01-01 UTC.
func pgTime(t time.Time) int64 { return t.Sub(pgEpoch).Microseconds() }

// xlogData wraps a payload in the 25-byte big-endian 'w' header (spec
// §1.4): dataStart, walEnd (= dataStart for logical decoding), send time.
func xlogData(dataStart source.LSN, payload []byte) *pgproto3.CopyData {
	b := make([]byte, 0, 25+len(payload))
	b = append(b, 'w')
	b = binary.BigEndian.AppendUint64(b, uint64(dataStart))
	b = binary.BigEndian.AppendUint64(b, uint64(dataStart))
	b = binary.BigEndian.AppendUint64(b, uint64(pgTime(time.Now())))
	return &pgproto3.CopyData{Data: append(b, payload...)}
}

// keepaliveMessage is the 33-byte 'k' (spec §1.5): the server's
// PrimaryKeepaliveMessage struct copied in native (little-endian) order.
func keepaliveMessage(walEnd source.LSN, now time.Time, replyRequested bool) []byte {
	const (
		peerRolePrimary = 2
		peerStateNormal = 1
	)
	b := make([]byte, 33)
	b[0] = 'k'
	binary.LittleEndian.PutUint64(b[1:], uint64(walEnd))
	binary.LittleEndian.PutUint32(b[9:], peerRolePrimary)
	binary.LittleEndian.PutUint32(b[13:], peerStateNormal)
	binary.LittleEndian.PutUint64(b[17:], uint64(pgTime(now)))
	if replyRequested {
		b[25] = 1
	}
	// catchup, uwal_catchup, fullSync and the 4 padding bytes stay zero.
	return b
}
