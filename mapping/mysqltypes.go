package mapping

// PostgreSQL → MySQL 8 / MariaDB 10.11 type mapping and value conversion.
// docs/type-mapping.md is the table MySQLType implements (a test keeps the
// two equal). Source values are PostgreSQL's text output under DateStyle=ISO,
// TimeZone=UTC, extra_float_digits=3, IntervalStyle=postgres and
// bytea_output=hex; target sessions use time_zone='+00:00', strict sql_mode
// and utf8mb4.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/decant/decant/source"
)

// Policy says what happens to a value the target column cannot hold.
type Policy uint8

const (
	PolicyError Policy = iota // stop with *Unrepresentable
	PolicyNull                // write NULL (an error if the column is NOT NULL)
	PolicyClamp               // write the nearest value the column holds
)

// ParsePolicy reads a policy name: "error", "null" or "clamp".
func ParsePolicy(s string) (Policy, error) {
	for p := PolicyError; p <= PolicyClamp; p++ {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown policy %q: want error, null or clamp", s)
}

func (p Policy) String() string {
	switch p {
	case PolicyError:
		return "error"
	case PolicyNull:
		return "null"
	case PolicyClamp:
		return "clamp"
	}
	return "policy(" + strconv.Itoa(int(p)) + ")"
}

// Unrepresentable is a value a target column cannot hold. Rule names the
// rule that failed; it never contains the value itself.
type Unrepresentable struct{ Rule string }

func (e *Unrepresentable) Error() string { return "unrepresentable value: " + e.Rule }

// MySQLColumn is a target column as information_schema.COLUMNS describes
// it. MariaDB reports a JSON column as longtext with a json_valid CHECK
// constraint; describe such a column with DataType "json", or values that
// need JSON are written as PostgreSQL text and fail the CHECK.
type MySQLColumn struct {
	Name              string
	DataType          string // DATA_TYPE, lower case: "int", "decimal", "varchar", "json", "datetime", ...
	ColumnType        string // COLUMN_TYPE, lower case: "decimal(12,4)", "enum('a','b')", "int(10) unsigned"
	MaxLength         int64  // CHARACTER_MAXIMUM_LENGTH (characters for text types, bytes for binary); 0 if none
	Precision, Scale  int    // NUMERIC_PRECISION, NUMERIC_SCALE
	DatetimePrecision int    // DATETIME_PRECISION
	Nullable          bool
	Generated         bool // a GENERATED column: never written
}

// MySQLType is the column type decant creates on MySQL for a source column
// type (oid, typmod and info as in source.Column): the table of
// docs/type-mapping.md.
func MySQLType(oid uint32, typmod int32, info *source.Type) (string, error) {
	t, err := TypeOf(oid, info)
	if err != nil {
		return "", err
	}
	t, typmod, err = underlying(t, typmod)
	if err != nil {
		return "", err
	}
	switch t.Kind {
	case source.KindEnum:
		return enumType(t)
	case source.KindArray, source.KindComposite, source.KindRange, source.KindMultirange:
		return "JSON", nil
	}
	return scalarType(t.OID, typmod), nil
}

// scalarType maps a base type. Base types without a mapping of their own
// (extension types such as citext or hstore) keep their text in LONGTEXT.
func scalarType(oid uint32, typmod int32) string {
	switch oid {
	case oidBool:
		return "TINYINT(1)"
	case oidInt2:
		return "SMALLINT"
	case oidInt4:
		return "INT"
	case oidInt8, oidOID, oidXID, oidCID:
		return "BIGINT"
	case oidXID8:
		return "BIGINT UNSIGNED"
	case oidNumeric:
		return decimalType(typmod)
	case oidMoney:
		return "DECIMAL(19,2)"
	case oidFloat4:
		return "FLOAT"
	case oidFloat8:
		return "DOUBLE"
	case oidBpchar:
		return charType(typmod)
	case oidVarchar:
		return varcharType(int64(typmod) - 4)
	case oidBit, oidVarbit:
		return varcharType(int64(typmod))
	case oidName:
		return "VARCHAR(63)"
	case oidChar:
		return "CHAR(1)"
	case oidBytea:
		return "LONGBLOB"
	case oidDate:
		return "DATE"
	case oidTime, oidTimetz:
		return "TIME(" + strconv.Itoa(fsp(typmod)) + ")"
	case oidTimestamp, oidTimestamptz:
		return "DATETIME(" + strconv.Itoa(fsp(typmod)) + ")"
	case oidJSON, oidJSONB:
		return "JSON"
	case oidJSONPath:
		return "TEXT"
	}
	return fixedTextType(oid)
}

// fixedTextType maps the types kept as their PostgreSQL text, sized for
// the longest text each prints (floats with extra_float_digits=3 take at
// most 24 characters).
func fixedTextType(oid uint32) string {
	switch oid {
	case oidUUID:
		return "CHAR(36)"
	case oidTID:
		return "VARCHAR(32)"
	case oidPgLSN:
		return "VARCHAR(17)"
	case oidMacaddr:
		return "VARCHAR(17)"
	case oidMacaddr8:
		return "VARCHAR(23)"
	case oidInet, oidCIDR:
		return "VARCHAR(43)"
	case oidInterval:
		return "VARCHAR(80)"
	case oidPoint:
		return "VARCHAR(64)"
	case oidLseg, oidBox, oidLine, oidCircle:
		return "VARCHAR(128)"
	}
	return "LONGTEXT" // text, xml, tsvector, tsquery, path, polygon, unknown base types
}

// MySQL limits that decide string column types under utf8mb4 (4 bytes a
// character): a row holds 65,535 bytes, TEXT 65,535 bytes, MEDIUMTEXT
// 16,777,215 bytes.
const (
	maxChar       = 255
	maxVarchar    = 65535 / 4
	maxMediumText = 16777215 / 4
)

// varcharType maps a length limit in characters; n < 0 means none.
func varcharType(n int64) string {
	switch {
	case n < 0:
		return "LONGTEXT"
	case n <= maxVarchar:
		return "VARCHAR(" + strconv.FormatInt(n, 10) + ")"
	}
	return textBySize(n)
}

// charType maps bpchar(n); bpchar without a length is unlimited.
func charType(typmod int32) string {
	n := int64(typmod) - 4
	switch {
	case n < 0:
		return "LONGTEXT"
	case n <= maxChar:
		return "CHAR(" + strconv.FormatInt(n, 10) + ")"
	}
	return textBySize(n)
}

func textBySize(chars int64) string {
	switch {
	case chars <= maxVarchar:
		return "TEXT"
	case chars <= maxMediumText:
		return "MEDIUMTEXT"
	}
	return "LONGTEXT"
}

// fsp is the fractional seconds precision of a time type's typmod; 6 (the
// most MySQL keeps, and PostgreSQL's default) without one.
func fsp(typmod int32) int {
	if typmod < 0 || typmod > 6 {
		return 6
	}
	return int(typmod)
}

// numericMod decodes numeric's typmod: ((precision << 16) | scale) + 4,
// the scale an 11-bit signed number (PostgreSQL 15 allows negative scales).
func numericMod(typmod int32) (precision, scale int, ok bool) {
	if typmod < 4 {
		return 0, 0, false
	}
	m := typmod - 4
	return int(m>>16) & 0xffff, (int(m&0x7ff) ^ 1024) - 1024, true
}

// decimalType maps numeric(p,s) to the DECIMAL that holds every value the
// column can: p-s integer digits (a negative scale adds integer digits, a
// scale above the precision leaves none) and s fraction digits, within
// MySQL's limits of 65 digits, 30 of them after the point. Where the
// column allows more, its converter rejects the values that do not fit.
// numeric without a typmod becomes DECIMAL(65,30).
func decimalType(typmod int32) string {
	p, s, ok := numericMod(typmod)
	if !ok {
		return "DECIMAL(65,30)"
	}
	scale := min(max(s, 0), 30)
	precision := min(max(p-s, 0)+scale, 65)
	return "DECIMAL(" + strconv.Itoa(precision) + "," + strconv.Itoa(scale) + ")"
}

// enumType lists the labels in order. Labels are MySQL string literals:
// quotes and backslashes doubled (the statement must run without
// NO_BACKSLASH_ESCAPES).
func enumType(t *source.Type) (string, error) {
	if len(t.Labels) == 0 {
		return "", fmt.Errorf("enum %s has no labels; a MySQL ENUM needs at least one", t.Name)
	}
	var b strings.Builder
	b.WriteString("ENUM(")
	for i, l := range t.Labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(quoteLiteral(l, true))
	}
	b.WriteByte(')')
	return b.String(), nil
}
