package gaussenc

import (
	"strings"

	"github.com/decant/decant/source/gauss"
)

// jsonDML renders the DML object of §2.1 as cJSON_PrintUnformatted does:
// no whitespace, keys in this order, every value a string.
func jsonDML(r gauss.Record) string {
	var b strings.Builder
	b.WriteString(`{"table_name":` + cJSONString(gauss.QuoteIdentifier(r.Schema)+"."+gauss.QuoteIdentifier(r.Table)))
	b.WriteString(`,"op_type":` + cJSONString(opName(r.Kind)))
	var cur, old []gauss.Column
	if r.Kind != gauss.KindDelete {
		cur = r.New
	}
	if r.Kind != gauss.KindInsert {
		old = r.Old
	}
	jsonColumns(&b, "columns", cur)
	jsonColumns(&b, "old_keys", old)
	b.WriteString("}")
	return b.String()
}

func jsonColumns(b *strings.Builder, prefix string, cols []gauss.Column) {
	parts := [3]func(gauss.Column) string{
		func(c gauss.Column) string { return gauss.QuoteIdentifier(c.Name) },
		typeName,
		Literal,
	}
	for i, suffix := range []string{"_name", "_type", "_val"} {
		b.WriteString(`,"` + prefix + suffix + `":[`)
		for j, c := range cols {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(cJSONString(parts[i](c)))
		}
		b.WriteString("]")
	}
}

// cJSONString quotes s as cJSON does: '"', '\\', \b \f \n \r \t escaped,
// other bytes below 0x20 as \u00xx (lower-case hex), everything else,
// including '/' and bytes that are not UTF-8, copied.
func cJSONString(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xF])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
