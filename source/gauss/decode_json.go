package gauss

import "fmt"

// JSON DML records (serial mppdb_decoding and decode-style 'j', §2.1):
//
//	{"table_name":S,"op_type":"INSERT"|"UPDATE"|"DELETE",
//	 "columns_name":[S...],"columns_type":[S...],"columns_val":[S...],
//	 "old_keys_name":[S...],"old_keys_type":[S...],"old_keys_val":[S...]}
//
// Values are JSON strings holding PrintLiteral text ("1", "'abc'", "null").
// table_name is quote_qualified_identifier output; column names are
// quote_identifier-ed. The columns_* arrays are the new tuple (empty for
// DELETE), old_keys_* the old key (empty when none was logged), so an
// INSERT or UPDATE always has a non-nil New, a DELETE a non-nil Old, and
// an UPDATE's Old is nil when empty. An empty New (or a DELETE's empty
// Old) is a row the server left out, compressed (unavailable.go).

// jsonRecord decodes the JSON object in p[start:end]: a DDL wrapper, or a
// DML object when dml is set.
func jsonRecord(f Format, p []byte, start, end int, dml bool) (Record, error) {
	doc, err := parseJSON(f, p, start, end)
	if err != nil {
		return Record{}, err
	}
	if doc.kind != jsonObject {
		return Record{}, &DecodeError{Offset: start, Expected: "a JSON object", Format: f}
	}
	if v := doc.get("TDDL"); v != nil {
		return textDDL(f, v)
	}
	if v := doc.get("JDDL"); v != nil {
		return jsonDDL(f, p, v)
	}
	if !dml {
		return Record{}, &DecodeError{Offset: start, Expected: `a DDL object ({"TDDL":...} or {"JDDL":...})`, Format: f}
	}
	return jsonDML(f, &doc)
}

func jsonDML(f Format, doc *jsonValue) (Record, error) {
	var rec Record
	table, err := stringMember(f, doc, "table_name")
	if err != nil {
		return rec, err
	}
	var ok bool
	if rec.Schema, rec.Table, ok = splitQualifiedName(table.str); !ok {
		return rec, &DecodeError{Offset: table.start, Expected: "a schema-qualified table name", Format: f}
	}
	op, err := stringMember(f, doc, "op_type")
	if err != nil {
		return rec, err
	}
	switch op.str {
	case "INSERT":
		rec.Kind = KindInsert
	case "UPDATE":
		rec.Kind = KindUpdate
	case "DELETE":
		rec.Kind = KindDelete
	default:
		return rec, &DecodeError{Offset: op.start, Expected: "op_type INSERT, UPDATE or DELETE", Format: f}
	}
	cur, err := jsonColumns(f, doc, "columns")
	if err != nil {
		return rec, err
	}
	old, err := jsonColumns(f, doc, "old_keys")
	if err != nil {
		return rec, err
	}
	if rec.Kind != KindDelete {
		rec.New = cur
	}
	if len(old) > 0 || rec.Kind == KindDelete {
		rec.Old = old
	}
	return rec, nil
}

func stringMember(f Format, doc *jsonValue, key string) (*jsonValue, error) {
	v := doc.get(key)
	if v == nil || v.kind != jsonString {
		return nil, &DecodeError{Offset: doc.start, Expected: fmt.Sprintf("a string member %q", key), Format: f}
	}
	return v, nil
}

// jsonColumns reads the prefix_name, prefix_type and prefix_val arrays.
func jsonColumns(f Format, doc *jsonValue, prefix string) ([]Column, error) {
	var arrs [3]*jsonValue
	for i, suffix := range []string{"_name", "_type", "_val"} {
		v := doc.get(prefix + suffix)
		if v == nil || v.kind != jsonArray {
			return nil, &DecodeError{Offset: doc.start, Expected: fmt.Sprintf("an array member %q", prefix+suffix), Format: f}
		}
		for j := range v.arr {
			if v.arr[j].kind != jsonString {
				return nil, &DecodeError{Offset: v.arr[j].start, Expected: "a string", Format: f}
			}
		}
		if i > 0 && len(v.arr) != len(arrs[0].arr) {
			return nil, &DecodeError{Offset: v.start, Expected: fmt.Sprintf("%d elements, one per %s_name", len(arrs[0].arr), prefix), Format: f}
		}
		arrs[i] = v
	}
	cols := make([]Column, len(arrs[0].arr))
	for i := range cols {
		col := &cols[i]
		col.Name = unquoteIdentifier(arrs[0].arr[i].str)
		col.TypeName = arrs[1].arr[i].str
		col.Type, _ = TypeOID(col.TypeName)
		if val := &arrs[2].arr[i]; !literalValue(val.str, col) {
			return nil, &DecodeError{Offset: val.start, Expected: "a value: null, a number, true, false, B'bits' or a quoted literal", Format: f}
		}
	}
	return cols, nil
}
