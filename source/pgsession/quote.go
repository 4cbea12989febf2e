package pgsession

import (
	"strings"

	"github.com/decant/decant/source"
)

// QuoteIdent quotes a PostgreSQL (or GaussDB) identifier: in double
// quotes, inner ones doubled, so the name reaches the server exactly as
// given, case and all. The one implementation of the rule: every
// PostgreSQL name decant puts into SQL goes through it (mapping.QuotePG
// is this). A NUL byte is kept, not dropped: the server refuses the
// statement rather than act on another name.
func QuoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// QuoteTable quotes schema.table.
func QuoteTable(t source.TableName) string { return QuoteIdent(t.Schema) + "." + QuoteIdent(t.Name) }
