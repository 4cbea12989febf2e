package gauss

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// MarshalJSON renders a record for `decant decode`: one object whose keys
// come in a fixed order, kind first, and only where they apply: lsn
// ("X/X"), csn, xid, first_lsn, time, user, origin, schema, table, new,
// old, truncated, cascade, restart_seqs, ddl, ddl_json, heartbeat,
// position. Column values are strings or null; bytes that are not UTF-8
// show as U+FFFD.
func (r Record) MarshalJSON() ([]byte, error) {
	w := &jsonWriter{b: []byte{'{'}}
	w.str("kind", r.Kind.String())
	if r.LSN != 0 {
		w.str("lsn", r.LSN.String())
	}
	if r.CSN != 0 || r.Kind == KindBegin {
		w.uint("csn", r.CSN)
	}
	if r.HasXid {
		w.uint("xid", r.Xid)
	}
	if r.Kind == KindBegin {
		w.str("first_lsn", r.FirstLSN.String())
	}
	w.optStr("time", r.Time)
	w.optStr("user", r.User)
	if r.HasOrigin {
		w.uint("origin", uint64(r.Origin))
	}
	w.optStr("schema", r.Schema)
	w.optStr("table", r.Table)
	if r.New != nil {
		w.columns("new", r.New)
	}
	if r.Old != nil {
		w.columns("old", r.Old)
	}
	r.marshalRest(w)
	w.b = append(w.b, '}')
	return w.b, nil
}

func (r Record) marshalRest(w *jsonWriter) {
	switch r.Kind {
	case KindTruncate:
		w.key("truncated")
		w.b = append(w.b, '[')
		for i, t := range r.Truncated {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendJSONString(w.b, t.String())
		}
		w.b = append(w.b, ']')
		w.flag("cascade", r.Cascade)
		w.flag("restart_seqs", r.RestartSeqs)
	case KindDDL:
		w.str("ddl", r.DDL)
		if len(r.DDLJSON) > 0 {
			w.key("ddl_json")
			if json.Valid(r.DDLJSON) {
				w.b = append(w.b, r.DDLJSON...)
			} else {
				w.b = appendJSONString(w.b, string(r.DDLJSON))
			}
		}
	case KindHeartbeat:
		w.key("heartbeat")
		w.b = append(w.b, '{')
		w.uint("read", r.HeartbeatRead)
		w.uint("flush", r.HeartbeatFlush)
		w.key("time")
		w.b = strconv.AppendInt(w.b, r.HeartbeatTime, 10)
		w.b = append(w.b, '}')
	case KindPosition:
		w.key("position")
		w.b = append(w.b, '{')
		w.uint("csn", r.PositionCSN)
		w.uint("lsn", r.PositionLSN)
		w.uint("time", uint64(r.PositionTime))
		w.b = append(w.b, '}')
	}
}

type jsonWriter struct{ b []byte }

// key writes a key, preceded by a comma unless it opens an object.
func (w *jsonWriter) key(k string) {
	if last := w.b[len(w.b)-1]; last != '{' && last != '[' {
		w.b = append(w.b, ',')
	}
	w.b = appendJSONString(w.b, k)
	w.b = append(w.b, ':')
}

func (w *jsonWriter) str(k, v string) {
	w.key(k)
	w.b = appendJSONString(w.b, v)
}

func (w *jsonWriter) optStr(k, v string) {
	if v != "" {
		w.str(k, v)
	}
}

func (w *jsonWriter) uint(k string, v uint64) {
	w.key(k)
	w.b = strconv.AppendUint(w.b, v, 10)
}

func (w *jsonWriter) flag(k string, v bool) {
	if v {
		w.key(k)
		w.b = append(w.b, "true"...)
	}
}

func (w *jsonWriter) columns(k string, cols []Column) {
	w.key(k)
	w.b = append(w.b, '[')
	for i, c := range cols {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, '{')
		w.str("name", c.Name)
		w.uint("type", uint64(c.Type))
		w.optStr("type_name", c.TypeName)
		w.key("value")
		if c.Null || c.Unchanged || c.Rowno {
			w.b = append(w.b, "null"...)
		} else {
			w.b = appendJSONString(w.b, string(c.Value))
		}
		if c.Rowno {
			w.uint("rowno", c.RowNo)
		}
		w.flag("unchanged", c.Unchanged)
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ']')
}

// appendJSONString quotes s as a JSON string without HTML escaping.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
