package mapping

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// targetKind is what a MySQL column holds, as far as conversion cares.
type targetKind uint8

const (
	tgInt       targetKind = iota + 1 // tinyint .. bigint, year: lo..hi
	tgDecimal                         // precision, scale
	tgFloat                           // FLOAT: float32
	tgDouble                          // DOUBLE
	tgChars                           // char, varchar: limit in characters
	tgTextBytes                       // tinytext .. longtext: limit in bytes
	tgBinary                          // binary, varbinary, blobs: limit in bytes
	tgJSON                            //
	tgDate                            //
	tgDatetime                        // scale is the fractional seconds precision
	tgTimestamp                       // like tgDatetime, with TIMESTAMP's range
	tgTime                            // scale is the fractional seconds precision
	tgEnum                            // labels
	tgSet                             // labels
	tgBit                             // limit in bits
)

// targetCol is a MySQLColumn compiled for conversion.
type targetCol struct {
	kind             targetKind
	name             string // for rules: "VARCHAR(10)", "INT(10) UNSIGNED", "ENUM"
	dataType         string
	limit            int64
	lo               int64
	hi               uint64
	precision, scale int
	labels           []string
}

// lobLimit is the byte limit of MySQL's text and blob types.
func lobLimit(dataType string) int64 {
	switch dataType {
	case "tinytext", "tinyblob":
		return 1<<8 - 1
	case "text", "blob":
		return 1<<16 - 1
	case "mediumtext", "mediumblob":
		return 1<<24 - 1
	}
	return 1<<32 - 1
}

// intMax is the largest value of a signed MySQL integer type; UNSIGNED
// holds 0..2*intMax+1.
func intMax(dataType string) int64 {
	switch dataType {
	case "tinyint":
		return math.MaxInt8
	case "smallint":
		return math.MaxInt16
	case "mediumint":
		return 1<<23 - 1
	case "bigint":
		return math.MaxInt64
	}
	return math.MaxInt32
}

func parseTarget(c MySQLColumn) (targetCol, error) {
	dt := strings.ToLower(c.DataType)
	tg := targetCol{dataType: dt, name: strings.ToUpper(c.ColumnType)}
	if tg.name == "" {
		tg.name = strings.ToUpper(dt)
	}
	params := typeParams(c.ColumnType)
	switch dt {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		tg.kind, tg.lo, tg.hi = tgInt, -intMax(dt)-1, uint64(intMax(dt))
		if strings.Contains(strings.ToLower(c.ColumnType), "unsigned") {
			tg.lo, tg.hi = 0, 2*tg.hi+1
		}
	case "year":
		tg.kind, tg.lo, tg.hi = tgInt, 1901, 2155
	case "decimal", "numeric":
		tg.kind, tg.precision, tg.scale = tgDecimal, c.Precision, c.Scale
		if tg.precision == 0 {
			tg.precision, tg.scale = param(params, 0, 10), param(params, 1, 0)
		}
	case "float":
		tg.kind = tgFloat
	case "double", "real", "double precision":
		tg.kind = tgDouble
	case "char", "varchar":
		tg.kind, tg.limit = tgChars, lengthOf(c.MaxLength, params, 1)
	case "binary", "varbinary":
		tg.kind, tg.limit = tgBinary, lengthOf(c.MaxLength, params, 1)
	case "tinytext", "text", "mediumtext", "longtext":
		tg.kind, tg.limit = tgTextBytes, lobLimit(dt)
	case "tinyblob", "blob", "mediumblob", "longblob":
		tg.kind, tg.limit = tgBinary, lobLimit(dt)
	case "json":
		tg.kind = tgJSON
	case "date":
		tg.kind = tgDate
	case "datetime":
		tg.kind, tg.scale = tgDatetime, clampFSP(c.DatetimePrecision)
	case "timestamp":
		tg.kind, tg.scale = tgTimestamp, clampFSP(c.DatetimePrecision)
	case "time":
		tg.kind, tg.scale = tgTime, clampFSP(c.DatetimePrecision)
	case "enum", "set":
		tg.kind, tg.name = tgEnum, "ENUM"
		if dt == "set" {
			tg.kind, tg.name = tgSet, "SET"
		}
		labels, err := parseLabels(c.ColumnType)
		if err != nil {
			return targetCol{}, fmt.Errorf("column %s: %w", c.Name, err)
		}
		tg.labels = labels
	case "bit":
		tg.kind, tg.limit = tgBit, int64(c.Precision)
		if tg.limit == 0 {
			tg.limit = int64(param(params, 0, 1))
		}
	default:
		return targetCol{}, fmt.Errorf("column %s: unsupported MySQL type %s", c.Name, c.ColumnType)
	}
	return tg, nil
}

func clampFSP(p int) int { return min(max(p, 0), 6) }

// typeParams reads the numbers in a COLUMN_TYPE's parentheses:
// "decimal(12,4)" gives [12 4]; enum and set lists give nothing.
func typeParams(columnType string) []int {
	_, rest, ok := strings.Cut(columnType, "(")
	inner, _, ok2 := strings.Cut(rest, ")")
	if !ok || !ok2 {
		return nil
	}
	var out []int
	for _, f := range strings.Split(inner, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil
		}
		out = append(out, n)
	}
	return out
}

func param(params []int, i, def int) int {
	if i < len(params) {
		return params[i]
	}
	return def
}

func lengthOf(maxLength int64, params []int, def int) int64 {
	if maxLength > 0 {
		return maxLength
	}
	return int64(param(params, 0, def))
}

// parseLabels reads the values of an ENUM or SET COLUMN_TYPE:
// enum('a','b”c','d\\e') gives a, b'c, d\e.
func parseLabels(columnType string) ([]string, error) {
	_, s, ok := strings.Cut(columnType, "(")
	if !ok || !strings.HasSuffix(s, ")") {
		return nil, fmt.Errorf("malformed COLUMN_TYPE %s", columnType)
	}
	s = s[:len(s)-1]
	var labels []string
	for len(s) > 0 {
		label, rest, err := cutQuoted(s)
		if err != nil {
			return nil, fmt.Errorf("malformed COLUMN_TYPE %s: %w", columnType, err)
		}
		labels = append(labels, label)
		s = strings.TrimPrefix(rest, ",")
	}
	return labels, nil
}

// cutQuoted reads one single-quoted MySQL string literal at the start of s.
func cutQuoted(s string) (string, string, error) {
	if !strings.HasPrefix(s, "'") {
		return "", "", fmt.Errorf("label does not start with a quote")
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
			b.WriteByte('\'')
		case c == '\'':
			return b.String(), s[i+1:], nil
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("unterminated label")
}
