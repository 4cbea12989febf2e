package mapping

import (
	"strings"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// QuotePG quotes a PostgreSQL identifier: it is pgsession.QuoteIdent,
// the one implementation of the rule, named here beside QuoteMySQL for
// the SQL builders of both dialects.
func QuotePG(s string) string { return pgsession.QuoteIdent(s) }

// QuotePGTable quotes schema.table (pgsession.QuoteTable).
func QuotePGTable(t source.TableName) string { return pgsession.QuoteTable(t) }

// QuoteMySQL quotes a MySQL identifier: backticks, inner ones doubled.
// The one quoting function for MySQL names.
func QuoteMySQL(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// QuoteMySQLTable quotes db.table, or the table alone (the connection's
// database) when the schema is empty.
func QuoteMySQLTable(t source.TableName) string {
	if t.Schema == "" {
		return QuoteMySQL(t.Name)
	}
	return QuoteMySQL(t.Schema) + "." + QuoteMySQL(t.Name)
}

// quoteLiteral quotes a string literal for either dialect in strict mode
// (single quotes doubled; MySQL also treats backslash as an escape unless
// NO_BACKSLASH_ESCAPES, so it is doubled too where mysql is set).
func quoteLiteral(s string, mysql bool) string {
	s = strings.ReplaceAll(s, "'", "''")
	if mysql {
		s = strings.ReplaceAll(s, `\`, `\\`)
	}
	return "'" + s + "'"
}
