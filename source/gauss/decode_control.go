package gauss

import (
	"github.com/decant/decant/source"
)

// GaussDB heartbeat ('h') and decode-position ('L') messages (§2.6):
//
//	'h' read:u64 flush:u64 time:i64  terminator
//	'L' csn:u64 lsn:u64 time:u32     terminator
//
// The seed describes them bare, with a terminator that depends on the
// format ('F' in binary, a zero length in text/JSON batches, nothing
// otherwise); a third-party reader expects them wrapped like a record
// (len, lsn, 'h', ...). Both forms are accepted in every format, and so is
// any of the three terminators: the framing is unverified, and a stricter
// check would buy nothing.

// decodeBareControl decodes a payload that starts with 'h' or 'L'.
func decodeBareControl(f Format, p []byte) (Record, error) {
	c := newCursor(f, p)
	letter, _ := c.u8("message type")
	rec, err := controlBody(c, letter)
	if err != nil {
		return Record{}, err
	}
	return rec, controlTerminator(c)
}

// decodeFramedControl decodes a heartbeat or position message wrapped like
// a record, in a format whose payloads otherwise carry bare text.
func decodeFramedControl(f Format, p []byte) (Record, error) {
	c := newCursor(f, p)
	n, err := c.u32("record length")
	if err != nil {
		return Record{}, err
	}
	if n < 9 || uint64(n) > uint64(c.remaining()) {
		return Record{}, c.failAt(0, "a heartbeat or position record length")
	}
	c.end = c.pos + int(n)
	lsn, _ := c.u64("record LSN")
	letter, _ := c.u8("message type")
	if letter != 'h' && letter != 'L' {
		return Record{}, c.failAt(c.pos-1, "a text record or a heartbeat ('h') or position ('L') message")
	}
	rec, err := controlBody(c, letter)
	if err != nil {
		return Record{}, err
	}
	if !c.atEnd() {
		return Record{}, c.fail("end of record")
	}
	rec.LSN = source.LSN(lsn)
	c.end = len(p)
	return rec, controlTerminator(c)
}

// controlBody reads the fields after the 'h' or 'L' byte.
func controlBody(c *cursor, letter byte) (Record, error) {
	if letter == 'h' {
		if err := c.need(24, "heartbeat fields"); err != nil {
			return Record{}, err
		}
		read, _ := c.u64("")
		flush, _ := c.u64("")
		ts, _ := c.u64("")
		return Record{Kind: KindHeartbeat, HeartbeatRead: read, HeartbeatFlush: flush, HeartbeatTime: int64(ts)}, nil
	}
	if err := c.need(20, "decode-position fields"); err != nil {
		return Record{}, err
	}
	csn, _ := c.u64("")
	lsn, _ := c.u64("")
	ts, _ := c.u32("")
	return Record{Kind: KindPosition, PositionCSN: csn, PositionLSN: lsn, PositionTime: ts}, nil
}

// controlTerminator accepts nothing, 'F' or a zero length after a message.
func controlTerminator(c *cursor) error {
	switch rest := c.buf[c.pos:]; {
	case len(rest) == 0,
		len(rest) == 1 && rest[0] == 'F',
		len(rest) == 4 && rest[0] == 0 && rest[1] == 0 && rest[2] == 0 && rest[3] == 0:
		return nil
	}
	return c.fail("the end of the message: nothing, 'F' or 00000000")
}
