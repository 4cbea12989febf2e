package gauss

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseHexDump reads captured payloads written as text, the way people
// paste them:
//   - one payload per line in plain hex, spaces (and "|" marking off
//     fields) allowed between bytes;
//   - hexdump -C (or hexdump's "0000  64 00 ...  |d...|" without the
//     long offsets): an offset, 16 bytes, the ASCII column; a "*" line for
//     lines hexdump left out as repeats of the one before; a closing line
//     of the offset alone;
//   - xxd: "00000000: 6400 0000 6677 ...  d...fw..".
//
// In the dumps a payload runs until its offsets start again from 0 or a
// line "--"; every offset must follow on from the bytes before it. Blank
// lines and lines starting with '#' are skipped. Errors name the line.
func ParseHexDump(r io.Reader) ([][]byte, error) {
	var d dumpReader
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for line := 1; sc.Scan(); line++ {
		if err := d.line(strings.TrimSpace(sc.Text())); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if d.repeat {
		return nil, fmt.Errorf("the dump ends in a \"*\" line: the offset after it, which says how many bytes it stands for, is missing")
	}
	d.end()
	return d.payloads, nil
}

// dumpReader is ParseHexDump's state.
type dumpReader struct {
	payloads [][]byte
	cur      []byte // the payload of a dump, being read
	inDump   bool   // cur is a dump's payload (possibly still empty)
	last     []byte // the bytes of the dump's last line, for "*"
	repeat   bool   // a "*" line waits for the next offset
}

func (d *dumpReader) line(text string) error {
	switch {
	case text == "" || strings.HasPrefix(text, "#"):
		return nil
	case text == "--":
		d.end()
		return nil
	case text == "*":
		if !d.inDump || len(d.last) == 0 {
			return fmt.Errorf("a \"*\" line (hexdump's repeat of the line before) with no dump line before it")
		}
		d.repeat = true
		return nil
	}
	off, data, isDump, err := splitDumpLine(text)
	if err != nil {
		return err
	}
	if !isDump {
		d.end()
		b, err := hex.DecodeString(plainHex.Replace(text))
		if err != nil {
			return fmt.Errorf("not hex, and not a hexdump -C or xxd line: %v", err)
		}
		d.payloads = append(d.payloads, b)
		return nil
	}
	return d.dumpLine(off, data)
}

// plainHex drops what may separate the bytes of a plain hex line: spaces,
// and the "|" that marks off a payload's fields in docs and fixtures.
var plainHex = strings.NewReplacer(" ", "", "\t", "", "|", "")

// dumpLine takes the bytes of a dump line at offset off.
func (d *dumpReader) dumpLine(off int, data []byte) error {
	if off == 0 && d.inDump && len(d.cur) > 0 && !d.repeat {
		d.end()
	}
	if d.repeat {
		for len(d.cur) < off {
			d.cur = append(d.cur, d.last[:min(len(d.last), off-len(d.cur))]...)
		}
		d.repeat = false
	}
	if off != len(d.cur) {
		return fmt.Errorf("offset %x, but the bytes before it end at %x", off, len(d.cur))
	}
	d.inDump = true
	d.cur = append(d.cur, data...)
	if len(data) > 0 {
		d.last = data
	}
	return nil
}

// end closes the dump's payload, if one is open.
func (d *dumpReader) end() {
	if d.inDump && len(d.cur) > 0 {
		d.payloads = append(d.payloads, d.cur)
	}
	d.cur, d.inDump, d.last, d.repeat = nil, false, nil, false
}

// splitDumpLine reads a hexdump -C or xxd line: its offset and bytes.
// isDump is false for a line that is neither (a plain hex payload).
func splitDumpLine(text string) (off int, data []byte, isDump bool, err error) {
	head, rest, _ := strings.Cut(text, " ")
	xxd := strings.HasSuffix(head, ":")
	head = strings.TrimSuffix(head, ":")
	if !xxd && (rest == "" || !strings.HasPrefix(rest, " ")) && len(head) != len(text) {
		// Plain hex bytes separated by single spaces: no offset column.
		return 0, nil, false, nil
	}
	if len(head) < 4 || len(head)%2 != 0 && !xxd {
		return 0, nil, false, nil
	}
	o, perr := strconv.ParseUint(head, 16, 31)
	if perr != nil {
		return 0, nil, false, nil
	}
	hexPart := strings.TrimSpace(rest)
	if xxd {
		// The ASCII column follows the hex groups after two spaces.
		if i := strings.Index(hexPart, "  "); i >= 0 {
			hexPart = hexPart[:i]
		}
	} else if i := strings.Index(hexPart, "|"); i >= 0 {
		hexPart = hexPart[:i]
	}
	data, derr := hex.DecodeString(strings.ReplaceAll(hexPart, " ", ""))
	if derr != nil {
		return 0, nil, true, fmt.Errorf("offset %s: bytes not hex: %v", head, derr)
	}
	return int(o), data, true, nil
}
