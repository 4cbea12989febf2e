package bulk

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// This file reads PostgreSQL's COPY text format ("Text Format" in the COPY
// reference: one row per line, columns separated by tabs, \N for NULL,
// backslash escapes) and writes the text LOAD DATA reads (MySQL's "LOAD
// DATA Statement": FIELDS TERMINATED BY '\t' ESCAPED BY '\\' LINES
// TERMINATED BY '\n'). Both are pure apart from the reader.

// copyDecoder reads COPY text rows one at a time, reusing its buffers.
type copyDecoder struct {
	r      *bufio.Reader
	long   []byte   // a line longer than the reader's buffer
	buf    []byte   // unescaped values of the current row
	bounds []int    // start and end in buf of each value; -1, -1 for NULL
	fields [][]byte // the current row: nil for NULL
}

func newCopyDecoder(r io.Reader) *copyDecoder {
	return &copyDecoder{r: bufio.NewReaderSize(r, 64<<10), buf: make([]byte, 0, 4<<10)}
}

var errTruncatedRow = errors.New("COPY data ends inside a row")

// next returns the next row's values (nil for NULL, never nil otherwise),
// valid until the following call; io.EOF after the last row.
func (d *copyDecoder) next() ([][]byte, error) {
	line, err := d.line()
	if err != nil {
		return nil, err
	}
	d.buf, d.bounds = d.buf[:0], d.bounds[:0]
	for {
		end := bytes.IndexByte(line, '\t')
		raw := line
		if end >= 0 {
			raw = line[:end]
		}
		if len(raw) == 2 && raw[0] == '\\' && raw[1] == 'N' {
			d.bounds = append(d.bounds, -1, -1)
		} else {
			start := len(d.buf)
			d.buf = unescapeCopy(d.buf, raw)
			d.bounds = append(d.bounds, start, len(d.buf))
		}
		if end < 0 {
			break
		}
		line = line[end+1:]
	}
	d.fields = d.fields[:0]
	for i := 0; i < len(d.bounds); i += 2 {
		if d.bounds[i] < 0 {
			d.fields = append(d.fields, nil)
		} else {
			d.fields = append(d.fields, d.buf[d.bounds[i]:d.bounds[i+1]:d.bounds[i+1]])
		}
	}
	return d.fields, nil
}

// line reads one line without its newline.
func (d *copyDecoder) line() ([]byte, error) {
	d.long = d.long[:0]
	for {
		part, err := d.r.ReadSlice('\n')
		switch {
		case err == nil && len(d.long) == 0:
			return part[:len(part)-1], nil
		case err == nil:
			d.long = append(d.long, part[:len(part)-1]...)
			return d.long, nil
		case errors.Is(err, bufio.ErrBufferFull):
			d.long = append(d.long, part...)
		case errors.Is(err, io.EOF) && len(part) == 0 && len(d.long) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, errTruncatedRow
		default:
			return nil, err
		}
	}
}

// unescapeCopy appends a COPY text value with its escapes resolved:
// \b \f \n \r \t \v, \ and one to three octal digits, \x and one or two
// hex digits, and a backslash before anything else stands for that.
func unescapeCopy(dst, s []byte) []byte {
	for {
		i := bytes.IndexByte(s, '\\')
		if i < 0 || i == len(s)-1 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		c := s[i+1]
		s = s[i+2:]
		switch c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'v':
			dst = append(dst, '\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := c - '0'
			for n := 0; n < 2 && len(s) > 0 && s[0] >= '0' && s[0] <= '7'; n++ {
				v = v<<3 | (s[0] - '0')
				s = s[1:]
			}
			dst = append(dst, v)
		case 'x':
			if len(s) == 0 || hexVal(s[0]) < 0 {
				dst = append(dst, 'x')
				break
			}
			v := byte(hexVal(s[0]))
			s = s[1:]
			if len(s) > 0 && hexVal(s[0]) >= 0 {
				v = v<<4 | byte(hexVal(s[0]))
				s = s[1:]
			}
			dst = append(dst, v)
		default:
			dst = append(dst, c)
		}
	}
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// appendLoadText appends a value escaped for LOAD DATA: backslash, tab,
// newline, carriage return and NUL get a backslash escape, so that no
// value can end a field or a line, or read as \N.
func appendLoadText[S ~string | ~[]byte](dst []byte, v S) []byte {
	start := 0
	for i := 0; i < len(v); i++ {
		var esc byte
		c := v[i]
		switch c {
		case '\\':
			esc = '\\'
		case '\t':
			esc = 't'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case 0:
			esc = '0'
		default:
			continue
		}
		dst = append(dst, v[start:i]...)
		dst = append(dst, '\\', esc)
		start = i + 1
	}
	return append(dst, v[start:]...)
}
