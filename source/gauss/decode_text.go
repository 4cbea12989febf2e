package gauss

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/decant/decant/source"
)

// Parallel text and JSON formats, decode-style 't' and 'j' (§2.4, §2.5).
// BEGIN and COMMIT are text lines in both; DML is a text line in 't' and a
// JSON object in 'j'; DDL is {"TDDL":...} or {"JDDL":...} in both.
//
//	begin  := "BEGIN CSN: " csn " first_lsn: " X/X [" xid: " n] [" commit_time: " ts] [" origin_id: " n]
//	commit := ("commit xid: " n | "COMMIT XID: " n | "commit") [" (at " ts ")"]
//
// Without sending-batch each payload is one record; with it, records are
// framed as len:u32 lsn:u64 text, and a zero length ends the batch.

// decodeTextSingle decodes a non-batch payload: one record, whose only LSN
// is the header's dataStart (given to COMMIT).
func decodeTextSingle(f Format, p []byte, dataStart source.LSN) ([]Record, error) {
	if len(p) > 0 && p[0] < 0x40 { // text records start with a letter or '{'
		rec, err := decodeFramedControl(f, p)
		return []Record{rec}, err
	}
	rec, err := textRecord(f, p, 0, len(p))
	if err != nil {
		return nil, err
	}
	if rec.Kind == KindCommit {
		rec.LSN = dataStart
	}
	return []Record{rec}, nil
}

// decodeTextBatch decodes len/lsn/text frames up to the zero length.
func decodeTextBatch(f Format, p []byte) ([]Record, error) {
	c := newCursor(f, p)
	var recs []Record
	for {
		start := c.pos
		n, err := c.u32("record length")
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return recs, endOfPayload(c)
		}
		if n < 8 || uint64(n) > uint64(c.remaining()) {
			return nil, c.failAt(start, fmt.Sprintf("a record length between 8 and %d, not %d", c.remaining(), n))
		}
		lsn, _ := c.u64("record LSN")
		end := start + 4 + int(n)
		rec, err := textRecord(f, p, c.pos, end)
		if err != nil {
			return nil, err
		}
		rec.LSN = source.LSN(lsn)
		recs = append(recs, rec)
		c.pos = end
	}
}

// textRecord decodes the record text p[start:end] of a 't' or 'j' stream.
func textRecord(f Format, p []byte, start, end int) (Record, error) {
	s := string(p[start:end])
	switch {
	case hasWordPrefix(s, "BEGIN"):
		return textBegin(f, s, start)
	case hasWordPrefix(s, "COMMIT"):
		return textCommit(f, s, start)
	case f.Style == 't' && strings.HasPrefix(s, "table "):
		return textDML(f, s, start)
	case strings.HasPrefix(s, "{"):
		return jsonRecord(f, p, start, end, f.Style == 'j')
	case len(s) > 0 && (s[0] == 'h' || s[0] == 'L'):
		c := &cursor{buf: p, pos: start + 1, end: end, f: f}
		rec, err := controlBody(c, s[0])
		if err == nil && !c.atEnd() {
			err = c.fail("end of record")
		}
		return rec, err
	}
	want := "BEGIN, COMMIT, table or DDL JSON record"
	if f.Style == 'j' {
		want = "BEGIN, COMMIT or JSON record"
	}
	return Record{}, &DecodeError{Offset: start, Expected: want, Format: f}
}

// hasWordPrefix reports whether s starts with word, in any case, followed
// by a space or the end.
func hasWordPrefix(s, word string) bool {
	return len(s) >= len(word) && strings.EqualFold(s[:len(word)], word) &&
		(len(s) == len(word) || s[len(word)] == ' ')
}

func textBegin(f Format, s string, base int) (Record, error) {
	rec := Record{Kind: KindBegin}
	fields, err := keyFields(f, s, len("BEGIN"), base)
	if err != nil {
		return rec, err
	}
	var haveCSN, haveFirst bool
	for _, kv := range fields {
		switch kv.key {
		case "csn":
			rec.CSN, err = kv.uint(f, 64)
			haveCSN = true
		case "first_lsn":
			var lsn source.LSN
			if lsn, err = source.ParseLSN(kv.val); err != nil {
				err = kv.fail(f, "an LSN X/X")
			}
			rec.FirstLSN, haveFirst = lsn, true
		default:
			err = commonField(f, kv, &rec)
		}
		if err != nil {
			return rec, err
		}
	}
	if !haveCSN || !haveFirst {
		return rec, &DecodeError{Offset: base, Expected: "BEGIN with CSN: and first_lsn:", Format: f}
	}
	return rec, nil
}

func textCommit(f Format, s string, base int) (Record, error) {
	rec := Record{Kind: KindCommit}
	if i := strings.Index(s, " (at "); i >= 0 {
		if !strings.HasSuffix(s, ")") {
			return rec, &DecodeError{Offset: base + len(s), Expected: "')' closing the commit time", Format: f}
		}
		rec.Time = s[i+len(" (at ") : len(s)-1]
		s = s[:i]
	}
	fields, err := keyFields(f, s, len("COMMIT"), base)
	if err != nil {
		return rec, err
	}
	for _, kv := range fields {
		if kv.key == "csn" {
			rec.CSN, err = kv.uint(f, 64)
		} else {
			err = commonField(f, kv, &rec)
		}
		if err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// commonField takes the fields BEGIN and COMMIT share; unknown keys are
// skipped, so trailing fields a newer server adds do not break decoding.
// How GaussDB prints include-user in text is not known (§2.7): user:,
// username: and user_name: are guesses.
func commonField(f Format, kv keyField, rec *Record) error {
	var err error
	switch kv.key {
	case "xid":
		rec.Xid, err = kv.uint(f, 64)
		rec.HasXid = true
	case "commit_time":
		rec.Time = kv.val
	case "origin_id":
		var o uint64
		o, err = kv.uint(f, 32)
		rec.Origin, rec.HasOrigin = uint32(o), true
	case "user", "username", "user_name":
		rec.User = kv.val
	}
	return err
}

// keyField is one "key: value" pair of a BEGIN or COMMIT line; the value
// may contain spaces (a timestamp) and runs to the next key.
type keyField struct {
	key string // lower case, without the colon
	val string
	off int // payload offset of the value
}

func (kv keyField) fail(f Format, expected string) error {
	return &DecodeError{Offset: kv.off, Expected: expected, Format: f}
}

func (kv keyField) uint(f Format, bits int) (uint64, error) {
	n, err := strconv.ParseUint(kv.val, 10, bits)
	if err != nil {
		return 0, kv.fail(f, fmt.Sprintf("an unsigned %d-bit number after %s:", bits, kv.key))
	}
	return n, nil
}

// keyFields splits s[from:] into key: value pairs. A key is a word of
// letters and underscores ending in ':'; every other word belongs to the
// value of the key before it.
func keyFields(f Format, s string, from, base int) ([]keyField, error) {
	var out []keyField
	vs, ve := -1, -1
	flush := func() {
		if len(out) > 0 && vs >= 0 {
			out[len(out)-1].val, out[len(out)-1].off = s[vs:ve], base+vs
		}
	}
	for i := from; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] != ' ' {
			j++
		}
		switch word := s[i:j]; {
		case isKeyWord(word):
			flush()
			out = append(out, keyField{key: strings.ToLower(word[:len(word)-1]), off: base + j})
			vs, ve = -1, -1
		case len(out) == 0:
			return nil, &DecodeError{Offset: base + i, Expected: "a 'key:' field", Format: f}
		default:
			if vs < 0 {
				vs = i
			}
			ve = j
		}
		i = j
	}
	flush()
	return out, nil
}

func isKeyWord(w string) bool {
	if len(w) < 2 || w[len(w)-1] != ':' {
		return false
	}
	for i := 0; i < len(w)-1; i++ {
		if c := w[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}
