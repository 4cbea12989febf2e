package gauss

import (
	"encoding/binary"
	"fmt"
)

// cursor reads big-endian fields from a payload without ever reading past
// end, which is the end of the payload or of the record being read. Every
// failure is a *DecodeError at the offset where the field should start.
type cursor struct {
	buf []byte
	pos int
	end int
	f   Format
}

func newCursor(f Format, b []byte) *cursor { return &cursor{buf: b, end: len(b), f: f} }

func (c *cursor) fail(expected string) error {
	return &DecodeError{Offset: c.pos, Expected: expected, Format: c.f}
}

func (c *cursor) failAt(off int, expected string) error {
	return &DecodeError{Offset: off, Expected: expected, Format: c.f}
}

func (c *cursor) remaining() int { return c.end - c.pos }

func (c *cursor) atEnd() bool { return c.pos >= c.end }

// need fails unless n more bytes are available.
func (c *cursor) need(n int, what string) error {
	if n < 0 || c.remaining() < n {
		return c.fail(fmt.Sprintf("%s (%d bytes, %d left)", what, n, max(c.remaining(), 0)))
	}
	return nil
}

func (c *cursor) u8(what string) (byte, error) {
	if err := c.need(1, what); err != nil {
		return 0, err
	}
	c.pos++
	return c.buf[c.pos-1], nil
}

func (c *cursor) u16(what string) (uint16, error) {
	if err := c.need(2, what); err != nil {
		return 0, err
	}
	c.pos += 2
	return binary.BigEndian.Uint16(c.buf[c.pos-2:]), nil
}

func (c *cursor) u32(what string) (uint32, error) {
	if err := c.need(4, what); err != nil {
		return 0, err
	}
	c.pos += 4
	return binary.BigEndian.Uint32(c.buf[c.pos-4:]), nil
}

func (c *cursor) u64(what string) (uint64, error) {
	if err := c.need(8, what); err != nil {
		return 0, err
	}
	c.pos += 8
	return binary.BigEndian.Uint64(c.buf[c.pos-8:]), nil
}

// bytes returns a copy of the next n bytes; n is checked before anything
// is allocated.
func (c *cursor) bytes(n int, what string) ([]byte, error) {
	if err := c.need(n, what); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	copy(b, c.buf[c.pos:])
	c.pos += n
	return b, nil
}

// str16 reads a u16 length and that many bytes as a string.
func (c *cursor) str16(what string) (string, error) {
	n, err := c.u16(what + " length")
	if err != nil {
		return "", err
	}
	if err := c.need(int(n), what); err != nil {
		return "", err
	}
	c.pos += int(n)
	return string(c.buf[c.pos-int(n) : c.pos]), nil
}

// str32 reads a u32 length and that many bytes as a string.
func (c *cursor) str32(what string) (string, error) {
	n, err := c.u32(what + " length")
	if err != nil {
		return "", err
	}
	if uint64(n) > uint64(c.remaining()) {
		return "", c.fail(fmt.Sprintf("%s (%d bytes, %d left)", what, n, c.remaining()))
	}
	c.pos += int(n)
	return string(c.buf[c.pos-int(n) : c.pos]), nil
}
