package mapping

import (
	"fmt"
	"slices"
	"strings"

	"github.com/decant/decant/source"
)

// Checks of the SQL text a source provides and decant pastes into the
// statements it runs on the target: an index definition (run as is), a
// column's type, default and generation expression. Whoever can run DDL
// on a replicated source table, or forge a DDL event, writes that text;
// the checks make sure it is one thing of the expected kind, so that it
// cannot carry a second statement or a clause of its own. They are
// defence in depth behind the source's own proof that its capture wrote
// the event, and refuse rather than repair: no comments, no semicolons
// (pg_get_indexdef, format_type and pg_get_expr never print either).

// UnsafeSQLError is source-provided SQL text that failed its check. It
// names the table, the column or index and why, never the text, which
// may hold data. SchemaChange and CreatePG return it inside an
// *UnsupportedDDL, so that decant run follows --on-unsupported-ddl.
type UnsafeSQLError struct {
	What   string // "index i", "column c type", "column c default"...
	Table  source.TableName
	Reason string
}

func (e *UnsafeSQLError) Error() string {
	return fmt.Sprintf("table %s: %s", e.Table, e.step())
}

// step is the message without the table, for a list of one table's
// refusals.
func (e *UnsafeSQLError) step() string {
	return fmt.Sprintf("the source's SQL for %s is refused: %s; create it on the target by hand (decant run --on-unsupported-ddl skip goes on without it)",
		e.What, e.Reason)
}

// tokenStream walks the tokens of one piece of SQL text.
type tokenStream struct {
	toks []sqlToken
	i    int
}

func (s *tokenStream) atEnd() bool { return s.i >= len(s.toks) }

func (s *tokenStream) peek() sqlToken {
	if s.atEnd() {
		return sqlToken{}
	}
	return s.toks[s.i]
}

// word accepts the next token when it is one of the unquoted keywords.
func (s *tokenStream) word(words ...string) bool {
	if t := s.peek(); t.kind == sqlWord && slices.Contains(words, t.val) {
		s.i++
		return true
	}
	return false
}

func (s *tokenStream) op(op string) bool {
	if t := s.peek(); t.kind == sqlOp && t.val == op {
		s.i++
		return true
	}
	return false
}

// ident accepts an identifier, quoted or not, and returns its name.
func (s *tokenStream) ident() (string, bool) {
	if t := s.peek(); t.kind == sqlWord || t.kind == sqlQuoted {
		s.i++
		return t.val, true
	}
	return "", false
}

// group accepts a parenthesised or bracketed group, nested ones inside,
// and returns the tokens between its outer parentheses.
func (s *tokenStream) group() ([]sqlToken, bool) {
	if t := s.peek(); t.kind != sqlOp || t.val != "(" {
		return nil, false
	}
	depth := 0
	for j := s.i; j < len(s.toks); j++ {
		depth += nesting(s.toks[j])
		if depth == 0 {
			inner := s.toks[s.i+1 : j]
			s.i = j + 1
			return inner, true
		}
	}
	return nil, false
}

// nesting is +1 for an opening parenthesis or bracket, -1 for a closing
// one, 0 for any other token.
func nesting(t sqlToken) int {
	if t.kind != sqlOp {
		return 0
	}
	switch t.val {
	case "(", "[":
		return 1
	case ")", "]":
		return -1
	}
	return 0
}

// lexChecked lexes text and refuses comments and semicolons anywhere:
// outside quotes neither belongs in one index definition, type or
// expression.
func lexChecked(text string) ([]sqlToken, string) {
	toks, reason := lexSQL(text)
	if reason != "" {
		return nil, reason
	}
	for _, t := range toks {
		switch {
		case t.kind == sqlComment:
			return nil, "it holds a comment"
		case t.kind == sqlOp && t.val == ";":
			return nil, "it holds a statement separator (;)"
		}
	}
	if len(toks) == 0 {
		return nil, "it is empty"
	}
	return toks, ""
}

// balanced reports why toks are not one expression: parentheses and
// brackets that do not pair, or a comma outside them.
func balanced(toks []sqlToken) string {
	depth := 0
	for _, t := range toks {
		depth += nesting(t)
		switch {
		case depth < 0:
			return "a parenthesis closes what it did not open"
		case depth == 0 && t.kind == sqlOp && t.val == ",":
			return "a comma outside parentheses"
		}
	}
	if depth != 0 {
		return "a parenthesis is not closed"
	}
	return ""
}

// checkIndexDef refuses def unless it is one statement creating index
// name on table, as pg_get_indexdef prints it: CREATE [UNIQUE] INDEX
// [CONCURRENTLY] [IF NOT EXISTS] name ON [ONLY] schema.table [USING
// method] (keys) [INCLUDE (...)] [NULLS [NOT] DISTINCT] [WITH (...)]
// [TABLESPACE name] [WHERE predicate]. The table is compared by name, not
// spelling, so quoting only where needed (pg_get_indexdef) and quoting
// always compare alike; it must be schema-qualified, as pg_get_indexdef
// always prints it.
func checkIndexDef(table source.TableName, name, def string) error {
	if reason := indexProblem(table, name, def); reason != "" {
		return &UnsafeSQLError{What: "index " + name, Table: table, Reason: reason}
	}
	return nil
}

func indexProblem(table source.TableName, name, def string) string {
	toks, reason := lexChecked(def)
	if reason != "" {
		return reason
	}
	s := &tokenStream{toks: toks}
	if !s.word("create") {
		return "it is not a CREATE INDEX statement"
	}
	s.word("unique")
	if !s.word("index") {
		return "it is not a CREATE INDEX statement"
	}
	s.word("concurrently")
	if s.word("if") && !(s.word("not") && s.word("exists")) {
		return "it is not a CREATE INDEX statement"
	}
	if got, ok := s.ident(); !ok || got != name {
		return "it does not name that index"
	}
	if !s.word("on") {
		return "it is not a CREATE INDEX statement"
	}
	s.word("only")
	if !s.table(table) {
		return "it is not on that table (or not schema-qualified)"
	}
	return s.indexTail()
}

// table accepts schema.name when it names t.
func (s *tokenStream) table(t source.TableName) bool {
	schema, ok := s.ident()
	if !ok || schema != t.Schema || !s.op(".") {
		return false
	}
	n, ok := s.ident()
	return ok && n == t.Name
}

// indexClauses are the clauses pg_get_indexdef prints after the keys,
// in its order, each a keyword and then a parenthesised group or a name.
var indexClauses = []struct {
	word  string
	group bool
}{{"include", true}, {"with", true}, {"tablespace", false}}

// indexTail checks what follows the table: the method, the keys and the
// clauses pg_get_indexdef prints after them, in its order.
func (s *tokenStream) indexTail() string {
	if s.word("using") {
		if _, ok := s.ident(); !ok {
			return "USING names no access method"
		}
	}
	if _, ok := s.group(); !ok {
		return "it has no parenthesised key list"
	}
	for i, c := range indexClauses {
		if i == 1 && s.word("nulls") { // NULLS [NOT] DISTINCT follows INCLUDE
			s.word("not")
			if !s.word("distinct") {
				return "NULLS is not followed by [NOT] DISTINCT"
			}
		}
		if !s.word(c.word) {
			continue
		}
		if c.group {
			if _, ok := s.group(); !ok {
				return strings.ToUpper(c.word) + " is not followed by a parenthesised list"
			}
		} else if _, ok := s.ident(); !ok {
			return strings.ToUpper(c.word) + " is not followed by a name"
		}
	}
	if s.word("where") {
		return predicateProblem(s.toks[s.i:])
	}
	if !s.atEnd() {
		return "something follows the index definition"
	}
	return ""
}

// predicateProblem says why toks are not one index predicate: they must
// be one balanced expression.
func predicateProblem(toks []sqlToken) string {
	if len(toks) == 0 {
		return "WHERE has no predicate"
	}
	if reason := balanced(toks); reason != "" {
		return "the predicate has " + reason
	}
	return ""
}

// checkExpr refuses text unless it is one expression, as pg_get_expr
// prints a default or a generation expression: parentheses that pair, no
// comma outside them (which would start another column), and none of the
// keywords that would start a column clause of its own (CHECK,
// REFERENCES...) outside them. what names the column and the part.
func checkExpr(table source.TableName, what, text string) error {
	if reason := exprProblem(text); reason != "" {
		return &UnsafeSQLError{What: what, Table: table, Reason: reason}
	}
	return nil
}

func exprProblem(text string) string {
	toks, reason := lexChecked(text)
	if reason != "" {
		return reason
	}
	if reason := balanced(toks); reason != "" {
		return "it has " + reason
	}
	depth := 0
	for _, t := range toks {
		depth += nesting(t)
		if depth == 0 && t.kind == sqlWord && slices.Contains(columnClauseWords, t.val) {
			return "it has a column clause keyword (" + t.val + ") outside parentheses"
		}
	}
	return ""
}

// columnClauseWords begin a column constraint or option. pg_get_expr
// never prints one outside parentheses; pasted after DEFAULT it would
// add a constraint of the source's choosing to the target.
var columnClauseWords = []string{"constraint", "check", "references", "primary", "unique", "default", "generated", "deferrable", "initially"}

// checkType refuses text unless it is a type name as format_type prints
// it: identifiers, schema-qualified or quoted or not, the words of the
// built-in multi-word names (character varying, double precision,
// timestamp(3) with time zone, interval day to second(3)...), at most
// two parenthesised modifier lists of integers or bare words (PostGIS's
// geometry(Point,4326)), and [] suffixes.
func checkType(table source.TableName, column, text string) error {
	if reason := typeProblem(text); reason != "" {
		return &UnsafeSQLError{What: "column " + column + " type", Table: table, Reason: reason}
	}
	return nil
}

// typeWords are the words that follow the first of a built-in type name.
var typeWords = []string{"varying", "precision", "with", "without", "time", "zone", "to", "year", "month", "day", "hour", "minute", "second"}

func typeProblem(text string) string {
	toks, reason := lexChecked(text)
	if reason != "" {
		return reason
	}
	s := &tokenStream{toks: toks}
	if _, ok := s.ident(); !ok {
		return "it does not start with a type name"
	}
	mods := 0
	for !s.atEnd() {
		switch {
		case s.op("["):
			return s.arrayBounds()
		case s.op("."):
			if _, ok := s.ident(); !ok {
				return "a dot is not followed by a name"
			}
		case s.word(typeWords...):
		case mods < 2 && s.modifiers():
			mods++
		default:
			return "it is not a type name"
		}
	}
	return ""
}

// modifiers accepts a parenthesised, comma-separated list of integers
// or bare words.
func (s *tokenStream) modifiers() bool {
	inner, ok := s.group()
	if !ok || len(inner)%2 == 0 {
		return false
	}
	for i, t := range inner {
		mod := t.kind == sqlWord || t.kind == sqlNumber && isDigits(t.val)
		if i%2 == 0 && !mod || i%2 == 1 && (t.kind != sqlOp || t.val != ",") {
			return false
		}
	}
	return true
}

// arrayBounds checks the rest of a type after its first '[' (already
// accepted): [] or [n], repeated.
func (s *tokenStream) arrayBounds() string {
	for {
		if t := s.peek(); t.kind == sqlNumber && isDigits(t.val) {
			s.i++
		}
		if !s.op("]") {
			return "an array bound is not [] or [n]"
		}
		if s.atEnd() {
			return ""
		}
		if !s.op("[") {
			return "something follows the array bounds"
		}
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// checkColumnPG checks the source text a PostgreSQL column definition
// pastes (CreatePG, pgColumnSpec): the type, and the generation
// expression or the default, whichever the definition uses.
func checkColumnPG(table source.TableName, c source.ColumnDef) error {
	if err := checkType(table, c.Name, c.SQLType); err != nil {
		return err
	}
	switch {
	case c.Generated != "":
		return checkExpr(table, "column "+c.Name+" generation expression", c.Generated)
	case c.Identity != 0:
		return nil
	case c.Default != "":
		return checkDefault(table, c)
	}
	return nil
}

// checkColumnMySQL checks the source text a MySQL column definition
// uses (CreateMySQL, mysqlSpec): only the default, which mysqlDefault
// translates; the type is mapped from the OID and a generation
// expression is not carried over.
func checkColumnMySQL(table source.TableName, c source.ColumnDef) error {
	if c.Generated != "" || c.Identity != 0 || c.Default == "" {
		return nil
	}
	return checkDefault(table, c)
}

// checkDefault checks a column's default expression.
func checkDefault(table source.TableName, c source.ColumnDef) error {
	return checkExpr(table, "column "+c.Name+" default", c.Default)
}

// refusal wraps a failed check as an unsupported schema change, so that
// decant run follows --on-unsupported-ddl and init refuses the table.
func refusal(err error) error {
	return &UnsupportedDDL{What: err.Error(), Err: err}
}
