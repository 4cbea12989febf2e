package gauss

import (
	"strconv"
	"strings"

	"github.com/decant/decant/source"
)

// Serial mppdb_decoding output (§2.1, §3.2): one record per payload.
//
//	begin    := "BEGIN" [" " xid] [" ORIGIN_ID " origin]
//	commit   := "COMMIT" [" " xid] [" (at " timestamptz ")"] " CSN " csn
//	dml      := the JSON object of decode_json.go
//	truncate := "table " qualname {", " qualname} ": TRUNCATE:" (" restart_seqs" | " cascade")* | " (no-flags)"
//	ddl      := "prefix: deparse, ..." (openGauss) | {"TDDL":...} | {"JDDL":...} (GaussDB)
//
// ABORT and PREPARE lines come only from area decoding
// (pg_logical_get_area_changes), never from streaming; they are rejected.

func decodeMppdb(f Format, p []byte, dataStart source.LSN) ([]Record, error) {
	if len(p) > 0 && p[0] < 0x40 { // records start with a letter or '{'
		rec, err := decodeFramedControl(f, p)
		return []Record{rec}, err
	}
	s := string(p)
	var rec Record
	var err error
	switch {
	case hasWordPrefix(s, "BEGIN"):
		rec, err = mppdbBegin(f, s)
	case hasWordPrefix(s, "COMMIT"):
		rec, err = mppdbCommit(f, s)
		rec.LSN = dataStart
	case strings.HasPrefix(s, "{"):
		rec, err = jsonRecord(f, p, 0, len(p), true)
	case strings.HasPrefix(s, "table "):
		rec, err = mppdbTruncate(f, s)
	case strings.HasPrefix(s, "prefix: deparse, "):
		// Only the server's own deparse (LogLogicalDDLMessage("deparse",
		// ...) from the publication's event trigger functions, og:ddlmsg)
		// writes a DDL record; any other prefix is not one of them.
		rec, err = deparseDDL(f, p)
	case strings.HasPrefix(s, "prefix: "):
		err = &DecodeError{Format: f, Expected: `a DDL record with prefix "deparse", the one the server's DDL deparse writes`}
	case hasWordPrefix(s, "ABORT"), hasWordPrefix(s, "PREPARE"):
		err = &DecodeError{Format: f, Expected: "a streamed record (ABORT and PREPARE come only from area decoding)"}
	default:
		err = &DecodeError{Format: f, Expected: "BEGIN, COMMIT, JSON DML, TRUNCATE or DDL record"}
	}
	if err != nil {
		return nil, err
	}
	return []Record{rec}, nil
}

// mppdbWord is one space-separated word of a BEGIN or COMMIT line.
type mppdbWord struct {
	text string
	off  int
}

func mppdbWords(s string, from int) []mppdbWord {
	var out []mppdbWord
	for i := from; i < len(s); {
		if s[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] != ' ' {
			j++
		}
		out = append(out, mppdbWord{s[i:j], i})
		i = j
	}
	return out
}

func mppdbBegin(f Format, s string) (Record, error) {
	rec := Record{Kind: KindBegin}
	words := mppdbWords(s, len("BEGIN"))
	if len(words) > 0 && !strings.EqualFold(words[0].text, "ORIGIN_ID") {
		xid, err := strconv.ParseUint(words[0].text, 10, 64)
		if err != nil {
			return rec, &DecodeError{Offset: words[0].off, Expected: "a transaction id", Format: f}
		}
		rec.Xid, rec.HasXid, words = xid, true, words[1:]
	}
	if len(words) == 2 && strings.EqualFold(words[0].text, "ORIGIN_ID") {
		origin, err := strconv.ParseUint(words[1].text, 10, 32)
		if err != nil {
			return rec, &DecodeError{Offset: words[1].off, Expected: "an origin id", Format: f}
		}
		rec.Origin, rec.HasOrigin, words = uint32(origin), true, nil
	}
	if len(words) > 0 {
		return rec, &DecodeError{Offset: words[0].off, Expected: "the end of BEGIN or ORIGIN_ID <n>", Format: f}
	}
	return rec, nil
}

func mppdbCommit(f Format, s string) (Record, error) {
	rec := Record{Kind: KindCommit}
	if i := strings.Index(s, " (at "); i >= 0 {
		j := strings.IndexByte(s[i:], ')')
		if j < 0 {
			return rec, &DecodeError{Offset: len(s), Expected: "')' closing the commit time", Format: f}
		}
		rec.Time = s[i+len(" (at ") : i+j]
		s = s[:i] + strings.Repeat(" ", j+1) + s[i+j+1:] // keep offsets
	}
	words := mppdbWords(s, len("COMMIT"))
	if len(words) > 0 && !strings.EqualFold(words[0].text, "CSN") {
		xid, err := strconv.ParseUint(words[0].text, 10, 64)
		if err != nil {
			return rec, &DecodeError{Offset: words[0].off, Expected: "a transaction id", Format: f}
		}
		rec.Xid, rec.HasXid, words = xid, true, words[1:]
	}
	if len(words) == 2 && strings.EqualFold(words[0].text, "CSN") {
		csn, err := strconv.ParseUint(words[1].text, 10, 64)
		if err != nil {
			return rec, &DecodeError{Offset: words[1].off, Expected: "a CSN", Format: f}
		}
		rec.CSN, words = csn, nil
	}
	if len(words) > 0 {
		return rec, &DecodeError{Offset: words[0].off, Expected: "the end of COMMIT or CSN <n>", Format: f}
	}
	return rec, nil
}

func mppdbTruncate(f Format, s string) (Record, error) {
	rec := Record{Kind: KindTruncate}
	i := len("table ")
	for {
		schema, next, ok := scanIdentifier(s, i, ".,: ")
		if !ok || next >= len(s) || s[next] != '.' {
			return rec, &DecodeError{Offset: i, Expected: "a schema-qualified table name", Format: f}
		}
		table, next, ok := scanIdentifier(s, next+1, ".,: ")
		if !ok {
			return rec, &DecodeError{Offset: next, Expected: "a table name", Format: f}
		}
		rec.Truncated = append(rec.Truncated, source.TableName{Schema: schema, Name: table})
		i = next
		if strings.HasPrefix(s[i:], ", ") {
			i += 2
			continue
		}
		if strings.HasPrefix(s[i:], ": TRUNCATE:") {
			i += len(": TRUNCATE:")
			break
		}
		return rec, &DecodeError{Offset: i, Expected: "', ' or ': TRUNCATE:'", Format: f}
	}
	if s[i:] == " (no-flags)" {
		return rec, nil
	}
	for _, w := range mppdbWords(s, i) {
		switch w.text {
		case "restart_seqs":
			rec.RestartSeqs = true
		case "cascade":
			rec.Cascade = true
		default:
			return rec, &DecodeError{Offset: w.off, Expected: "restart_seqs, cascade or (no-flags)", Format: f}
		}
	}
	if !rec.RestartSeqs && !rec.Cascade {
		return rec, &DecodeError{Offset: i, Expected: "restart_seqs, cascade or (no-flags)", Format: f}
	}
	return rec, nil
}
