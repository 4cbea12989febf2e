package verify

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/decant/decant/mapping"
)

// A MySQL target does not print a value the way the PostgreSQL source does:
// each source value is first converted as decant converts it for writing
// (mapping.MySQLConverter), then both that and the value read back from
// the target are brought to one normal form per target column type. Equal
// values then have equal normal forms.

// normalizer appends the normal form of one non-NULL value (a converted
// source value or a value read back from the target) to dst.
type normalizer func(dst, v []byte) []byte

// mysqlNormalizer returns the normalizer for a target column.
func mysqlNormalizer(col mapping.MySQLColumn) normalizer {
	switch col.DataType {
	case "decimal":
		return normDecimal
	case "float":
		return func(dst, v []byte) []byte { return normFloat(dst, v, 32) }
	case "double":
		return func(dst, v []byte) []byte { return normFloat(dst, v, 64) }
	case "datetime", "timestamp", "time":
		return normFraction
	case "json":
		return normJSON
	case "char":
		return func(dst, v []byte) []byte { return append(dst, bytes.TrimRight(v, " ")...) }
	}
	return func(dst, v []byte) []byte { return append(dst, v...) }
}

// normDecimal drops trailing fraction zeros: DECIMAL(10,3) prints 1.500
// where the converted source value says 1.5.
func normDecimal(dst, v []byte) []byte {
	if bytes.IndexByte(v, '.') >= 0 {
		v = bytes.TrimRight(bytes.TrimRight(v, "0"), ".")
	}
	if string(v) == "-0" {
		v = v[1:]
	}
	return append(dst, v...)
}

// normFloat prints the shortest text that reads back as the same float of
// the column's width; -0 and 0 are one value in MySQL.
func normFloat(dst, v []byte, bits int) []byte {
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return append(append(dst, "bad float "...), v...)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		dst = append(dst, "non-finite "...)
	}
	if f == 0 {
		f = 0
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

// normFraction drops trailing zeros of fractional seconds.
func normFraction(dst, v []byte) []byte {
	if bytes.IndexByte(v, '.') >= 0 {
		v = bytes.TrimRight(bytes.TrimRight(v, "0"), ".")
	}
	return append(dst, v...)
}

// normJSON reprints a document with sorted keys, no insignificant space
// and numbers as written.
func normJSON(dst, v []byte) []byte {
	var x any
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return append(append(dst, "bad json "...), v...)
	}
	b, _ := json.Marshal(x)
	return append(dst, b...)
}

// appendArg appends a converter's result (string, []byte, int64 or
// float64) as the text the target would hold.
func appendArg(dst []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return append(dst, x...)
	case []byte:
		return append(dst, x...)
	case int64:
		return strconv.AppendInt(dst, x, 10)
	case float64:
		return strconv.AppendFloat(dst, x, 'g', -1, 64)
	case bool:
		if x {
			return append(dst, '1')
		}
		return append(dst, '0')
	}
	return dst
}
