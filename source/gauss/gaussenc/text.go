package gaussenc

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/decant/decant/source/gauss"
)

// text renders a record of a parallel 't' or 'j' stream (§2.4, §2.5).
func (e encoder) text(r gauss.Record) string {
	switch r.Kind {
	case gauss.KindBegin:
		return e.textBegin(r)
	case gauss.KindCommit:
		return e.textCommit(r)
	case gauss.KindInsert, gauss.KindUpdate, gauss.KindDelete:
		if e.f.Style == 'j' {
			return jsonDML(r)
		}
		return textDML(r)
	case gauss.KindDDL:
		return ddl(r)
	}
	panic(fmt.Sprintf("gaussenc: a %s record has no known %s encoding", r.Kind, e.f))
}

func (e encoder) textBegin(r gauss.Record) string {
	s := "BEGIN CSN: " + strconv.FormatUint(r.CSN, 10) + " first_lsn: " + r.FirstLSN.String()
	if r.HasXid {
		s += " xid: " + strconv.FormatUint(r.Xid, 10)
	}
	if r.Time != "" {
		s += " commit_time: " + r.Time
	}
	if r.HasOrigin {
		s += " origin_id: " + strconv.FormatUint(uint64(r.Origin), 10)
	}
	return s
}

func (e encoder) textCommit(r gauss.Record) string {
	s := "COMMIT"
	if e.openGauss {
		s = "commit"
	}
	if r.HasXid && e.openGauss {
		s += " xid: " + strconv.FormatUint(r.Xid, 10)
	} else if r.HasXid {
		s += " XID: " + strconv.FormatUint(r.Xid, 10)
	}
	if r.Time != "" {
		s += " (at " + r.Time + ")"
	}
	return s
}

func opName(k gauss.Kind) string {
	switch k {
	case gauss.KindInsert:
		return "INSERT"
	case gauss.KindUpdate:
		return "UPDATE"
	}
	return "DELETE"
}

// textDML renders "table schema table OP: cols" (tuple_to_stringinfo).
func textDML(r gauss.Record) string {
	var b strings.Builder
	b.WriteString("table " + r.Schema + " " + r.Table + " " + opName(r.Kind) + ":")
	tuple := func(cols []gauss.Column) {
		if cols == nil {
			b.WriteString(" (no-tuple-data)")
			return
		}
		for _, c := range cols {
			b.WriteString(" " + gauss.QuoteIdentifier(c.Name) + "[" + typeName(c) + "]:" + Literal(c))
		}
	}
	switch r.Kind {
	case gauss.KindInsert:
		tuple(r.New)
	case gauss.KindUpdate:
		if r.Old != nil {
			b.WriteString(" old-key:")
			tuple(r.Old)
			b.WriteString(" new-tuple:")
		}
		tuple(r.New)
	case gauss.KindDelete:
		tuple(r.Old)
	}
	return b.String()
}

// typeName is the column's type as the text and JSON formats print it.
func typeName(c gauss.Column) string {
	if c.TypeName != "" {
		return c.TypeName
	}
	if name, ok := gauss.TypeName(c.Type); ok {
		return name
	}
	panic(fmt.Sprintf("gaussenc: no type name for OID %d (set Column.TypeName)", c.Type))
}

// typeOID is the column's type OID, from the name when Type is not set.
func typeOID(c gauss.Column) uint32 {
	if c.Type != 0 {
		return c.Type
	}
	oid, _ := gauss.TypeOID(c.TypeName)
	return oid
}

// Literal renders a column value as PrintLiteral does: integers, oid,
// floats and numeric bare; bit and varbit as B'...'; bool as true/false;
// everything else single-quoted with quotes doubled (backslashes are not
// doubled). NULL is null, an unchanged TOAST value unchanged-toast-datum.
func Literal(c gauss.Column) string {
	switch {
	case c.Null:
		return "null"
	case c.Unchanged:
		return "unchanged-toast-datum"
	}
	v := string(c.Value)
	switch typeOID(c) {
	case 5545, 21, 23, 20, 26, 700, 701, 1700: // int1, int2, int4, int8, oid, float4, float8, numeric
		return v
	case 1560, 1562: // bit, varbit
		return "B'" + v + "'"
	case 16: // bool
		if v == "t" {
			return "true"
		}
		return "false"
	}
	return "'" + strings.ReplaceAll(v, "'", "''") + "'"
}

// ddl renders a GaussDB DDL record: JDDL when the record has a JSON
// document, TDDL otherwise.
func ddl(r gauss.Record) string {
	if r.DDLJSON != nil {
		return `{"JDDL":` + string(r.DDLJSON) + `}`
	}
	return `{"TDDL":` + cJSONString(r.DDL) + `}`
}

// mppdb renders a serial mppdb_decoding record (§2.1).
func (e encoder) mppdb(r gauss.Record) string {
	switch r.Kind {
	case gauss.KindBegin:
		s := "BEGIN"
		if r.HasXid {
			s += " " + strconv.FormatUint(r.Xid, 10)
		}
		if r.HasOrigin {
			s += " ORIGIN_ID " + strconv.FormatUint(uint64(r.Origin), 10)
		}
		return s
	case gauss.KindCommit:
		s := "COMMIT"
		if r.HasXid {
			s += " " + strconv.FormatUint(r.Xid, 10)
		}
		if r.Time != "" {
			s += " (at " + r.Time + ")"
		}
		return s + " CSN " + strconv.FormatUint(r.CSN, 10)
	case gauss.KindInsert, gauss.KindUpdate, gauss.KindDelete:
		return jsonDML(r)
	case gauss.KindTruncate:
		return truncate(r)
	case gauss.KindDDL:
		return ddl(r)
	}
	panic(fmt.Sprintf("gaussenc: a %s record has no mppdb encoding", r.Kind))
}

func truncate(r gauss.Record) string {
	names := make([]string, len(r.Truncated))
	for i, t := range r.Truncated {
		names[i] = gauss.QuoteIdentifier(t.Schema) + "." + gauss.QuoteIdentifier(t.Name)
	}
	s := "table " + strings.Join(names, ", ") + ": TRUNCATE:"
	if !r.RestartSeqs && !r.Cascade {
		return s + " (no-flags)"
	}
	if r.RestartSeqs {
		s += " restart_seqs"
	}
	if r.Cascade {
		s += " cascade"
	}
	return s
}
