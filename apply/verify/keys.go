package verify

import (
	"bytes"
	"cmp"
	"math/big"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/decant/decant/mapping"
)

// Both sides are read in key order and merged, so the servers' orders and
// the comparison here must agree. A key column is compared one of two ways:
//
//   - orderNumber: integers, numeric and floats, by value. Both servers
//     sort them natively, so ranges of them use the key's index.
//   - orderLexical: dates, timestamps and booleans, whose text forms
//     (ISO dates in UTC, t/f, 0/1) sort as the values do. Also native.
//   - orderText: anything else, by the bytes of its text form. The
//     servers are told to sort that way: ::text COLLATE "C" on
//     PostgreSQL, CAST(... AS BINARY) on MySQL. No index serves such an
//     order, so a table with such a key is read as one span.
type order uint8

const (
	orderText order = iota
	orderNumber
	orderLexical
)

// orderOf picks the comparison for a key column of source type oid. On a
// MySQL target the target column must sort natively the same way
// (mysqlType is its DATA_TYPE, "" for a PostgreSQL target).
func orderOf(oid uint32, mysql bool, mysqlType string) order {
	var o order
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.OIDOID, pgtype.Float4OID, pgtype.Float8OID, pgtype.NumericOID:
		o = orderNumber
	case pgtype.DateOID, pgtype.TimestampOID, pgtype.TimestamptzOID, pgtype.BoolOID:
		o = orderLexical
	default:
		return orderText
	}
	if !mysql {
		return o
	}
	numeric := map[string]bool{"tinyint": true, "smallint": true, "mediumint": true, "int": true,
		"bigint": true, "decimal": true, "float": true, "double": true}
	switch {
	case o == orderNumber && numeric[mysqlType]:
		return o
	case oid == pgtype.BoolOID && numeric[mysqlType]:
		return orderLexical // 0 and 1
	case oid != pgtype.BoolOID && (mysqlType == "date" || mysqlType == "datetime" || mysqlType == "timestamp"):
		return o
	}
	return orderText
}

// compareKeys compares two keys in normal form column by column.
func compareKeys(orders []order, a, b [][]byte) int {
	for i, o := range orders {
		var c int
		if o == orderNumber {
			c = compareNumbers(a[i], b[i])
		} else {
			c = bytes.Compare(a[i], b[i])
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// compareNumbers compares numbers as PostgreSQL sorts them: -Infinity
// first, then finite values, Infinity, NaN. Text that is no number sorts
// after them all, by its bytes. Integer keys, the common case, are
// compared without allocating.
func compareNumbers(a, b []byte) int {
	if x, ok := parseInt(a); ok {
		if y, ok := parseInt(b); ok {
			return cmp.Compare(x, y)
		}
	}
	ra, fa := numberRank(a)
	rb, fb := numberRank(b)
	if ra != rb {
		return ra - rb
	}
	switch ra {
	case 1:
		return compareFinite(a, b, fa, fb)
	case 4:
		return bytes.Compare(a, b)
	}
	return 0
}

// numberRank: 0 -Infinity, 1 finite, 2 Infinity, 3 NaN, 4 not a number.
func numberRank(v []byte) (int, bool) {
	switch strings.ToLower(string(v)) {
	case "-infinity", "-inf":
		return 0, false
	case "infinity", "inf", "+infinity":
		return 2, false
	case "nan":
		return 3, false
	}
	if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return 1, true
	}
	if _, ok := new(big.Rat).SetString(string(v)); ok {
		return 1, false
	}
	return 4, false
}

// parseInt reads a decimal integer that fits an int64 (an optional minus
// sign and up to 18 digits).
func parseInt(v []byte) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// compareFinite compares two finite numbers; integers cheaply.
func compareFinite(a, b []byte, intA, intB bool) int {
	if intA && intB {
		x, _ := strconv.ParseInt(string(a), 10, 64)
		y, _ := strconv.ParseInt(string(b), 10, 64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	x, _ := new(big.Rat).SetString(string(a))
	y, _ := new(big.Rat).SetString(string(b))
	return x.Cmp(y)
}

// pgOrderExpr is the ORDER BY expression of a key column on PostgreSQL.
func pgOrderExpr(col string, o order) string {
	if o == orderText {
		return "(" + mapping.QuotePG(col) + ")::text COLLATE \"C\""
	}
	return mapping.QuotePG(col)
}

// mysqlOrderExpr is the ORDER BY expression of a key column on MySQL.
func mysqlOrderExpr(col string, o order) string {
	if o == orderText {
		return "CAST(" + mapping.QuoteMySQL(col) + " AS BINARY)"
	}
	return mapping.QuoteMySQL(col)
}
