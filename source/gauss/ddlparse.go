package gauss

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/decant/decant/source"
)

// DDL statements (§3) are SQL text: what GaussDB logs as TDDL, what
// expandDDL makes of a JDDL document, what openGauss's mppdb_decoding
// prints after "decode to:". The server deparses them from the parse
// tree, so they are normalised: names schema-qualified and quoted by
// quote_identifier, types as pg_catalog.int4 or in SQL spelling
// ("character varying(32)"), keywords in any case, and empty fmt
// parameters leave runs of spaces ("CREATE  TABLE  public.t4 (...)").
//
// parseDDL reads one into a statement value (the *Stmt types below),
// which the Catalog (ddlcatalog.go) applies to the definitions of the
// replicated tables. The grammar is PostgreSQL's (gram.y) for
// CREATE/ALTER/DROP TABLE, CREATE/ALTER/DROP INDEX and TRUNCATE, plus
// openGauss's RENAME TABLE and the GaussDB clauses that only set storage
// (WITH (...), COMPRESS, DISTRIBUTE BY, PARTITION BY, ...). Statements are
// read as tokens (lexDDL), never by regular expressions over the text.
//
// A statement is an error only when it names no table; whatever else the
// parser does not understand is kept in the statement as an error of its
// part (err fields), after what it read of that part, for the catalog to
// report when the statement is about a replicated table. Nothing here
// knows which tables those are.

// --- statement values -----------------------------------------------------

// ddlStmt is a statement about tables or indexes: one of the *Stmt types.
type ddlStmt interface{ ddlStmt() }

// createTableStmt: CREATE TABLE [IF NOT EXISTS] name (elements) [clauses].
type createTableStmt struct {
	name  source.TableName
	elems []tableElement // as far as they were read
	err   error          // what could not be read, after elems
}

// tableElement is one entry of CREATE TABLE's list: a column or a table
// constraint.
type tableElement struct {
	column     *columnSpec
	constraint *constraintSpec
}

// alterTableStmt: ALTER TABLE [IF EXISTS] [ONLY] name subcommand[, ...].
type alterTableStmt struct {
	name source.TableName
	cmds []subcommand
}

// subcommand is one of ALTER TABLE's subcommands.
type subcommand struct {
	text string      // as written, for messages
	do   alterAction // what it changes; nil when nothing (storage, ownership, ...) or when nothing was read
	err  error       // what was not understood, after do when the subcommand was read in part
}

// moveTableStmt: ALTER TABLE name RENAME TO new | SET SCHEMA s.
type moveTableStmt struct {
	from source.TableName
	to   source.TableName // when err is nil
	err  error            // the new name could not be read, or more follows it
}

// renameTablesStmt: openGauss's RENAME TABLE a TO b[, c TO d ...].
type renameTablesStmt struct {
	pairs []renamePair // as far as they were read
	err   error        // what ended the list early, or followed it
	from  source.TableName
	// from is the table of the pair that err ended, when it was read.
}

type renamePair struct{ from, to source.TableName }

// dropTablesStmt: DROP TABLE [IF EXISTS] a[, b ...] [CASCADE | RESTRICT] [PURGE].
type dropTablesStmt struct {
	names []source.TableName
	err   error // what ended the list early
}

// truncateStmt: TRUNCATE [TABLE] [ONLY] a [*][, ...] [RESTART | CONTINUE
// IDENTITY] [CASCADE | RESTRICT].
type truncateStmt struct {
	tables           []source.TableName
	restart, cascade bool
	err              error // a table name that could not be read
	optErr           error // an option that is not understood
}

// timecapsuleStmt: GaussDB's TIMECAPSULE TABLE name TO {BEFORE DROP |
// BEFORE TRUNCATE | TIMECAPSULE ... | CSN ...}.
type timecapsuleStmt struct{ name source.TableName }

// createIndexStmt: CREATE [UNIQUE] INDEX [CONCURRENTLY] [IF NOT EXISTS]
// [name] ON [ONLY] table [USING method] (keys) [INCLUDE (...)] [storage]
// [WHERE ...].
type createIndexStmt struct {
	name   string // "" when the server chooses it; the index lives in its table's schema
	unique bool
	table  source.TableName
	body   indexBody
	err    error // the definition after the table name could not be read
}

// dropIndexesStmt: DROP INDEX [CONCURRENTLY] [IF EXISTS] a[, b ...]
// [CASCADE | RESTRICT].
type dropIndexesStmt struct {
	names []source.TableName
	err   error // what ended the list early
}

// alterIndexStmt: ALTER INDEX [IF EXISTS] name RENAME TO new.
type alterIndexStmt struct {
	name source.TableName
	to   string
	err  error // the new name could not be read, or more follows it
}

func (*createTableStmt) ddlStmt()  {}
func (*alterTableStmt) ddlStmt()   {}
func (*moveTableStmt) ddlStmt()    {}
func (*renameTablesStmt) ddlStmt() {}
func (*dropTablesStmt) ddlStmt()   {}
func (*truncateStmt) ddlStmt()     {}
func (*timecapsuleStmt) ddlStmt()  {}
func (*createIndexStmt) ddlStmt()  {}
func (*dropIndexesStmt) ddlStmt()  {}
func (*alterIndexStmt) ddlStmt()   {}

// alterAction is what an ALTER TABLE subcommand changes: one of the *Cmd
// types.
type alterAction interface{ alterAction() }

// addColumnsCmd: ADD [COLUMN] [IF NOT EXISTS] coldef | ADD (coldef, ...).
type addColumnsCmd struct{ cols []columnSpec }

// addConstraintCmd: ADD table_constraint.
type addConstraintCmd struct{ spec constraintSpec }

// dropColumnCmd: DROP [COLUMN] [IF EXISTS] c [CASCADE | RESTRICT].
type dropColumnCmd struct{ name string }

// dropConstraintCmd: DROP CONSTRAINT [IF EXISTS] n [CASCADE | RESTRICT].
type dropConstraintCmd struct{ name string }

// dropKeyCmd: B compatibility's DROP PRIMARY KEY.
type dropKeyCmd struct{}

// alterColumnCmd: ALTER [COLUMN] c and one change of the column.
type alterColumnCmd struct {
	name     string
	op       colOp
	typ      colType // setType
	expr     string  // setDefault
	identity byte    // addIdentity, setIdentity: 'a' or 'd' (0: not read)
}

// renameColumnCmd: RENAME [COLUMN] a TO b.
type renameColumnCmd struct{ from, to string }

// renameConstraintCmd: RENAME CONSTRAINT a TO b.
type renameConstraintCmd struct{ from, to string }

func (addColumnsCmd) alterAction()       {}
func (addConstraintCmd) alterAction()    {}
func (dropColumnCmd) alterAction()       {}
func (dropConstraintCmd) alterAction()   {}
func (dropKeyCmd) alterAction()          {}
func (alterColumnCmd) alterAction()      {}
func (renameColumnCmd) alterAction()     {}
func (renameConstraintCmd) alterAction() {}

// colOp is the change ALTER COLUMN makes.
type colOp uint8

const (
	setType        colOp = iota + 1 // [SET DATA] TYPE t [COLLATE c] [USING expr]
	setDefault                      // SET DEFAULT expr
	dropDefault                     // DROP DEFAULT
	setNotNull                      // SET NOT NULL
	dropNotNull                     // DROP NOT NULL
	addIdentity                     // ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)]
	setIdentity                     // SET GENERATED {ALWAYS | BY DEFAULT} [options]
	dropIdentity                    // DROP IDENTITY [IF EXISTS]
	dropExpression                  // DROP EXPRESSION [IF EXISTS]
)

// --- reading statements ---------------------------------------------------

// parseDDL reads a statement. It gives nil for an empty one and for one
// about nothing the catalog follows (views, sequences, types, schemas,
// functions, comments, grants, temporary tables, ALTER INDEX other than
// RENAME TO). An error means that the statement is not SQL or names no
// table (or index); anything else it does not understand is kept in the
// statement.
func parseDDL(src string) (ddlStmt, error) {
	p := newDDLParser(src)
	if p.atEnd() {
		return nil, nil
	}
	if p.peek().kind != tIdent {
		return nil, errors.New("not SQL: it does not start with a keyword")
	}
	switch {
	case p.acceptKw("create"):
		return p.create()
	case p.acceptKw("alter", "table"):
		return p.alterTable()
	case p.acceptKw("alter", "index"):
		return p.alterIndex()
	case p.acceptKw("drop", "table"):
		return p.dropTables()
	case p.acceptKw("drop", "index"):
		return p.dropIndexes()
	case p.acceptKw("rename", "table"):
		return p.renameTables()
	case p.acceptKw("truncate"):
		return p.truncate()
	case p.acceptKw("timecapsule", "table"):
		return p.timecapsule()
	}
	return nil, nil
}

func (p *ddlParser) create() (ddlStmt, error) {
	p.acceptKw("or", "replace")
	if !p.acceptKw("global") {
		p.acceptKw("local")
	}
	if p.acceptKw("temp") || p.acceptKw("temporary") {
		return nil, nil // session-local: never decoded, never replicated
	}
	p.acceptKw("unlogged")
	switch {
	case p.acceptKw("table"):
		return p.createTable()
	case p.acceptKw("unique", "index"):
		return p.createIndex(true)
	case p.acceptKw("index"):
		return p.createIndex(false)
	}
	return nil, nil
}

// --- tables ---------------------------------------------------------------

func (p *ddlParser) createTable() (ddlStmt, error) {
	p.acceptKw("if", "not", "exists")
	name, err := p.tableName()
	if err != nil {
		return nil, fmt.Errorf("CREATE TABLE names no table: %w", err)
	}
	s := &createTableStmt{name: name}
	s.err = p.tableElements(s)
	return s, nil
}

// tableElements reads the column list into s and checks the clauses after
// it.
func (p *ddlParser) tableElements(s *createTableStmt) error {
	if !p.acceptOp("(") {
		return errors.New("the statement does not list the columns (CREATE TABLE ... AS, OF, PARTITION OF or LIKE)")
	}
	if !p.acceptOp(")") {
		for {
			el, err := p.tableElement()
			if err != nil {
				return err
			}
			s.elems = append(s.elems, el)
			if p.acceptOp(",") {
				continue
			}
			if err := p.expectOp(")"); err != nil {
				return err
			}
			break
		}
	}
	return createTrailer(p)
}

// tableElement reads a column or a table constraint.
func (p *ddlParser) tableElement() (tableElement, error) {
	if p.isKw("like") {
		return tableElement{}, errors.New("LIKE copies columns the statement does not list")
	}
	if isConstraintStart(p) {
		s, err := p.tableConstraint()
		return tableElement{constraint: &s}, err
	}
	s, err := p.columnDef()
	return tableElement{column: &s}, err
}

// createTrailer checks the clauses after the column list. They set storage
// (WITH (...), TABLESPACE, COMPRESS, DISTRIBUTE BY, TO GROUP, PARTITION BY)
// and are ignored, except those that bring columns the list does not show.
func createTrailer(p *ddlParser) error {
	depth := 0
	for ; !p.atEnd(); p.i++ {
		switch {
		case p.peek().kind == tBad:
			return p.expected("a storage clause")
		case p.isOp("("):
			depth++
		case p.isOp(")"):
			depth--
		case depth == 0 && p.isKw("inherits"):
			return errors.New("INHERITS adds the parent's columns, which the statement does not list")
		case depth == 0 && p.isKw("as"):
			return errors.New("CREATE TABLE ... AS fills the table from a query")
		}
	}
	return nil
}

// alterTable reads ALTER TABLE's subcommands, or RENAME TO / SET SCHEMA.
func (p *ddlParser) alterTable() (ddlStmt, error) {
	p.acceptKw("if", "exists")
	p.acceptKw("only")
	name, err := p.tableName()
	if err != nil {
		return nil, fmt.Errorf("ALTER TABLE names no table: %w", err)
	}
	p.acceptOp("*")
	if p.isKw("rename", "to") || p.isKw("set", "schema") {
		return p.moveTable(name), nil
	}
	return &alterTableStmt{name: name, cmds: p.subcommands()}, nil
}

func (p *ddlParser) moveTable(from source.TableName) *moveTableStmt {
	s := &moveTableStmt{from: from, to: from}
	var err error
	if p.acceptKw("rename", "to") {
		var parts []string
		if parts, err = p.qualifiedName(); err == nil {
			s.to.Name = parts[len(parts)-1]
			if len(parts) > 1 {
				s.to.Schema = parts[len(parts)-2]
			}
		}
	} else {
		p.acceptKw("set", "schema")
		s.to.Schema, err = p.name()
	}
	if err == nil && !p.atEnd() {
		err = p.expected("the end of the statement")
	}
	s.err = err
	return s
}

func (p *ddlParser) renameTables() (ddlStmt, error) {
	s := &renameTablesStmt{}
	for {
		from, err := p.tableName()
		if err != nil && len(s.pairs) == 0 {
			return nil, fmt.Errorf("RENAME TABLE names no table: %w", err)
		}
		if err == nil {
			err = p.expectKw("to")
		}
		var to source.TableName
		if err == nil {
			to, err = p.tableName()
		}
		if err != nil {
			s.err, s.from = err, from
			return s, nil
		}
		s.pairs = append(s.pairs, renamePair{from: from, to: to})
		if !p.acceptOp(",") {
			break
		}
	}
	if !p.atEnd() {
		s.err = p.expected("a comma or the end of the statement")
	}
	return s, nil
}

func (p *ddlParser) dropTables() (ddlStmt, error) {
	p.acceptKw("if", "exists")
	names, err := p.nameSeries()
	if len(names) == 0 {
		return nil, fmt.Errorf("DROP TABLE names no table: %w", err)
	}
	return &dropTablesStmt{names: names, err: err}, nil
}

// nameSeries reads a, b, ...: the names up to the first that cannot be
// read (err). What follows the series is left.
func (p *ddlParser) nameSeries() ([]source.TableName, error) {
	var names []source.TableName
	for {
		name, err := p.tableName()
		if err != nil {
			return names, err
		}
		names = append(names, name)
		if !p.acceptOp(",") {
			return names, nil
		}
	}
}

func (p *ddlParser) truncate() (ddlStmt, error) {
	p.acceptKw("table")
	s := &truncateStmt{}
	for {
		p.acceptKw("only")
		name, err := p.tableName()
		if err != nil && len(s.tables) == 0 {
			return nil, fmt.Errorf("TRUNCATE names no table: %w", err)
		}
		if err != nil {
			s.err = err
			return s, nil
		}
		p.acceptOp("*")
		s.tables = append(s.tables, name)
		if !p.acceptOp(",") {
			break
		}
	}
	for !p.atEnd() {
		switch {
		case p.acceptKw("restart", "identity"):
			s.restart = true
		case p.acceptKw("continue", "identity"):
			s.restart = false
		case p.acceptKw("cascade"):
			s.cascade = true
		case p.acceptKw("restrict"), p.acceptKw("purge"):
		default:
			s.optErr = p.expected("RESTART IDENTITY, CONTINUE IDENTITY, CASCADE or RESTRICT")
			return s, nil
		}
	}
	return s, nil
}

func (p *ddlParser) timecapsule() (ddlStmt, error) {
	name, err := p.tableName()
	if err != nil {
		return nil, fmt.Errorf("TIMECAPSULE TABLE names no table: %w", err)
	}
	return &timecapsuleStmt{name: name}, nil
}

// --- ALTER TABLE subcommands ----------------------------------------------

// subcommands reads ALTER TABLE's comma-separated subcommands. One that is
// not understood is kept with its error, and the next is read after the
// comma that ends it.
func (p *ddlParser) subcommands() []subcommand {
	var cmds []subcommand
	for {
		start := p.i
		do, err := p.subcommand()
		if err == nil && !p.atEnd() && !p.isOp(",") {
			err = p.expected("a comma or the end of the statement")
		}
		if err != nil {
			p.i = start
			p.skipElement()
		}
		cmds = append(cmds, subcommand{text: p.span(start, p.i), do: do, err: err})
		// skipElement stops only at a comma or the end.
		if !p.acceptOp(",") {
			return cmds
		}
	}
}

func (p *ddlParser) subcommand() (alterAction, error) {
	switch {
	case rowsClause(p):
		return nil, errors.New("it changes rows the stream does not carry")
	case storageClause(p):
		p.skipElement()
		return nil, nil
	case p.acceptKw("add"):
		return p.add()
	case p.acceptKw("drop"):
		return p.drop()
	case p.acceptKw("alter"):
		return p.alterColumn()
	case p.acceptKw("rename"):
		return p.rename()
	case p.isKw("modify"), p.isKw("change"):
		return nil, errors.New("MODIFY and CHANGE redefine a column by rules that depend on the database's compatibility mode")
	}
	return nil, p.expected("an ALTER TABLE subcommand")
}

// storageClauses begin subcommands that change storage, ownership,
// triggers, statistics or partitions' layout: nothing a definition holds.
var storageClauses = [][]string{
	{"owner", "to"}, {"set", "tablespace"}, {"set", "with"}, {"set", "without"}, {"set", "logged"},
	{"set", "unlogged"}, {"set", "compress"}, {"set", "nocompress"}, {"set", "access", "method"},
	{"enable"}, {"disable"}, {"force"}, {"no", "force"}, {"inherit"}, {"no", "inherit"}, {"of"},
	{"not", "of"}, {"cluster", "on"}, {"replica", "identity"}, {"validate", "constraint"},
	{"alter", "constraint"}, {"add", "partition"}, {"add", "subpartition"}, {"split", "partition"},
	{"split", "subpartition"}, {"merge", "partitions"}, {"move", "partition"}, {"rename", "partition"},
	{"rename", "subpartition"}, {"modify", "partition"}, {"add", "statistics"}, {"delete", "statistics"},
	{"comment"}, {"auto_increment"}, {"character", "set"}, {"charset"}, {"default", "charset"},
	{"default", "character", "set"}, {"collate"}, {"gsiwaitall"},
}

// rowsClauses begin partition subcommands that delete or swap rows,
// which the stream does not carry as row changes.
var rowsClauses = [][]string{
	{"truncate", "partition"}, {"truncate", "subpartition"}, {"drop", "partition"},
	{"drop", "subpartition"}, {"exchange", "partition"},
}

func storageClause(p *ddlParser) bool {
	if (p.isKw("set") || p.isKw("reset")) && p.peekN(1).kind == tOp && p.peekN(1).val == "(" {
		return true // storage parameters
	}
	return slices.ContainsFunc(storageClauses, func(words []string) bool { return p.isKw(words...) })
}

func rowsClause(p *ddlParser) bool {
	return slices.ContainsFunc(rowsClauses, func(words []string) bool { return p.isKw(words...) })
}

// add: ADD [COLUMN] [IF NOT EXISTS] coldef | ADD (coldef, ...) | ADD
// table_constraint. Of a list, the columns before one that cannot be read
// are kept.
func (p *ddlParser) add() (alterAction, error) {
	if isConstraintStart(p) {
		s, err := p.tableConstraint()
		if err != nil {
			return nil, err
		}
		return addConstraintCmd{spec: s}, nil
	}
	list := p.acceptOp("(") // A compatibility: ADD (c1 type, c2 type)
	if !list {
		p.acceptKw("column")
		p.acceptKw("if", "not", "exists")
	}
	var a addColumnsCmd
	for {
		s, err := p.columnDef()
		if err != nil {
			return a, err
		}
		a.cols = append(a.cols, s)
		if !list {
			return a, nil
		}
		if !p.acceptOp(",") {
			return a, p.expectOp(")")
		}
	}
}

// drop: DROP [COLUMN] [IF EXISTS] c [CASCADE | RESTRICT] | DROP CONSTRAINT
// [IF EXISTS] n [CASCADE | RESTRICT] | DROP PRIMARY KEY.
func (p *ddlParser) drop() (alterAction, error) {
	switch {
	case p.acceptKw("constraint"):
		p.acceptKw("if", "exists")
		name, err := p.name()
		if err != nil {
			return nil, err
		}
		dropBehavior(p)
		return dropConstraintCmd{name: name}, nil
	case p.acceptKw("primary", "key"):
		return dropKeyCmd{}, nil
	}
	p.acceptKw("column")
	p.acceptKw("if", "exists")
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	dropBehavior(p)
	return dropColumnCmd{name: name}, nil
}

func dropBehavior(p *ddlParser) {
	if !p.acceptKw("cascade") {
		p.acceptKw("restrict")
	}
}

// alterColumn: ALTER [COLUMN] c {[SET DATA] TYPE t [COLLATE x] [USING
// expr] | SET DEFAULT expr | DROP DEFAULT | SET NOT NULL | DROP NOT NULL |
// identity and generation changes | SET STATISTICS and other storage
// settings}. A default that cannot be read is kept as none, and ADD
// GENERATED whose kind cannot be read still makes the column an identity
// (NOT NULL, no default): what the server did, as far as it is known.
func (p *ddlParser) alterColumn() (alterAction, error) {
	p.acceptKw("column")
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	a := alterColumnCmd{name: name}
	switch {
	case p.acceptKw("set", "data", "type"), p.acceptKw("type"):
		if a.typ, err = p.alterType(); err != nil {
			return nil, err
		}
		a.op = setType
	case p.acceptKw("set", "default"):
		a.op = setDefault
		a.expr, err = p.expr(nil)
	case p.acceptKw("drop", "default"):
		a.op = dropDefault
	case p.acceptKw("set", "not", "null"):
		a.op = setNotNull
	case p.acceptKw("drop", "not", "null"):
		a.op = dropNotNull
	case p.acceptKw("add", "generated"):
		a.op = addIdentity
		a.identity, err = p.identity()
		if err == nil && p.isOp("(") { // sequence options
			_, err = p.group()
		}
	case p.acceptKw("set", "generated", "always"):
		a.op, a.identity = setIdentity, 'a'
		p.skipElement() // sequence options
	case p.acceptKw("set", "generated", "by", "default"):
		a.op, a.identity = setIdentity, 'd'
		p.skipElement()
	case p.acceptKw("drop", "identity"):
		p.acceptKw("if", "exists")
		a.op = dropIdentity
	case p.acceptKw("drop", "expression"):
		p.acceptKw("if", "exists")
		a.op = dropExpression
	case columnStorageClause(p):
		p.skipElement()
		return nil, nil
	default:
		return nil, p.expected("a column change (TYPE, SET DEFAULT, DROP DEFAULT, SET NOT NULL, ...)")
	}
	return a, err
}

// columnStorageClauses begin column changes that leave the definition as
// it is: statistics targets, storage, options, identity sequence settings.
var columnStorageClauses = [][]string{
	{"set", "statistics"}, {"set", "storage"}, {"set", "compression"}, {"restart"},
	{"set", "increment"}, {"set", "start"}, {"set", "minvalue"}, {"set", "maxvalue"},
	{"set", "no"}, {"set", "cache"}, {"set", "cycle"},
}

func columnStorageClause(p *ddlParser) bool {
	return (p.isKw("set") || p.isKw("reset")) && p.peekN(1).kind == tOp && p.peekN(1).val == "(" ||
		slices.ContainsFunc(columnStorageClauses, func(words []string) bool { return p.isKw(words...) })
}

// alterType reads [SET DATA] TYPE's type and what may follow it.
func (p *ddlParser) alterType() (colType, error) {
	ts, err := p.typeSpec()
	if err != nil {
		return colType{}, err
	}
	t, err := ts.resolve()
	if err != nil {
		return colType{}, err
	}
	if ts.serial {
		return colType{}, errors.New("serial is not a type a column can be changed to")
	}
	if p.acceptKw("collate") {
		if _, err := p.qualifiedName(); err != nil {
			return colType{}, err
		}
	}
	if p.acceptKw("using") {
		if _, err := p.expr(nil); err != nil {
			return colType{}, err
		}
	}
	return t, nil
}

// rename: RENAME [COLUMN] a TO b | RENAME CONSTRAINT a TO b.
func (p *ddlParser) rename() (alterAction, error) {
	constraint := p.acceptKw("constraint")
	if !constraint {
		p.acceptKw("column")
	}
	from, err := p.name()
	if err == nil {
		err = p.expectKw("to")
	}
	var to string
	if err == nil {
		to, err = p.name()
	}
	if err != nil {
		return nil, err
	}
	if constraint {
		return renameConstraintCmd{from: from, to: to}, nil
	}
	return renameColumnCmd{from: from, to: to}, nil
}

// --- indexes --------------------------------------------------------------

func (p *ddlParser) createIndex(unique bool) (ddlStmt, error) {
	p.acceptKw("concurrently")
	p.acceptKw("if", "not", "exists")
	s := &createIndexStmt{unique: unique}
	if !p.isKw("on") {
		parts, err := p.qualifiedName()
		if err != nil {
			return nil, fmt.Errorf("CREATE INDEX names no index: %w", err)
		}
		s.name = parts[len(parts)-1]
	}
	err := p.expectKw("on")
	p.acceptKw("only")
	if err == nil {
		s.table, err = p.tableName()
	}
	if err != nil {
		return nil, fmt.Errorf("CREATE INDEX names no table: %w", err)
	}
	s.body, s.err = p.indexBody()
	return s, nil
}

func (p *ddlParser) dropIndexes() (ddlStmt, error) {
	p.acceptKw("concurrently")
	p.acceptKw("if", "exists")
	names, err := p.nameSeries()
	if len(names) == 0 {
		return nil, fmt.Errorf("DROP INDEX names no index: %w", err)
	}
	return &dropIndexesStmt{names: names, err: err}, nil
}

// alterIndex reads ALTER INDEX ... RENAME TO; other forms (tablespace,
// storage parameters, UNUSABLE, REBUILD) change nothing the definitions
// hold.
func (p *ddlParser) alterIndex() (ddlStmt, error) {
	p.acceptKw("if", "exists")
	name, err := p.tableName()
	if err != nil {
		return nil, fmt.Errorf("ALTER INDEX names no index: %w", err)
	}
	if !p.acceptKw("rename", "to") {
		return nil, nil
	}
	s := &alterIndexStmt{name: name}
	s.to, s.err = p.name()
	if s.err == nil && !p.atEnd() {
		s.err = p.expected("the end of the statement")
	}
	return s, nil
}

// indexBody is an index definition after the table name.
type indexBody struct {
	method  string
	columns []string // key columns when every key is one
	names   []string // names for choosing an index name: columns, "expr" for expressions
	keys    string   // "(...)" as written
	include string   // "INCLUDE (...)" as written, or ""
	where   string   // the predicate, or ""
	expr    bool     // an expression key, a predicate, or a method other than btree
}

func (p *ddlParser) indexBody() (indexBody, error) {
	b := indexBody{method: "btree"}
	if p.acceptKw("using") {
		m, err := p.name()
		if err != nil {
			return b, err
		}
		b.method = m
	}
	open := p.i
	if err := p.expectOp("("); err != nil {
		return b, err
	}
	for {
		col, plain, err := p.indexElement()
		if err != nil {
			return b, err
		}
		if plain {
			b.columns = append(b.columns, col)
			b.names = append(b.names, col)
		} else {
			b.expr = true
			b.names = append(b.names, "expr")
		}
		if p.acceptOp(",") {
			continue
		}
		if err := p.expectOp(")"); err != nil {
			return b, err
		}
		break
	}
	b.keys = p.span(open, p.i)
	if err := p.indexTrailer(&b); err != nil {
		return b, err
	}
	// GaussDB's ubtree (Ustore tables) is a B-tree by another name.
	if b.method == "ubtree" {
		b.method = "btree"
	}
	if b.method != "btree" || b.where != "" {
		b.expr = true
	}
	return b, nil
}

// indexTrailer reads what follows the keys: INCLUDE and WHERE are kept;
// WITH (...), TABLESPACE, LOCAL/GLOBAL partition clauses and the like set
// storage and are skipped.
func (p *ddlParser) indexTrailer(b *indexBody) error {
	for !p.atEnd() {
		switch {
		case p.peek().kind == tBad:
			return p.expected("an index clause")
		case p.isKw("include"):
			start := p.i
			p.next()
			if _, err := p.group(); err != nil {
				return err
			}
			b.include = p.span(start, p.i)
		case p.acceptKw("where"):
			start := p.i
			for ; !p.atEnd(); p.i++ {
				if p.peek().kind == tBad {
					return p.expected("a predicate")
				}
			}
			if start == p.i {
				return p.expected("a predicate")
			}
			b.where = p.span(start, p.i)
		default:
			p.next()
			if p.isOp("(") {
				if _, err := p.group(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// indexElement reads one key of an index: a column (plain), with its
// optional collation, operator class, order and NULLS placement, or an
// expression.
func (p *ddlParser) indexElement() (col string, plain bool, err error) {
	start := p.i
	if t := p.peek(); t.kind == tIdent || t.kind == tQuoted {
		p.next()
		if p.plainKeyTail() {
			return t.val, true, nil
		}
	}
	p.i = start
	_, err = p.expr(nil)
	return "", false, err
}

// plainKeyTail consumes [COLLATE c] [opclass [(params)]] [ASC | DESC]
// [NULLS FIRST | LAST] and reports whether the key ends there.
func (p *ddlParser) plainKeyTail() bool {
	if p.acceptKw("collate") {
		if _, err := p.qualifiedName(); err != nil {
			return false
		}
	}
	if t := p.peek(); (t.kind == tIdent || t.kind == tQuoted) && !p.isKw("asc") && !p.isKw("desc") && !p.isKw("nulls") {
		if _, err := p.qualifiedName(); err != nil {
			return false
		}
		if p.isOp("(") {
			if _, err := p.group(); err != nil {
				return false
			}
		}
	}
	if !p.acceptKw("asc") {
		p.acceptKw("desc")
	}
	if p.acceptKw("nulls") && !p.acceptKw("first") && !p.acceptKw("last") {
		return false
	}
	return p.isOp(",") || p.isOp(")")
}

// --- column definitions ---------------------------------------------------

// columnSpec is a column definition with the constraints written on it.
type columnSpec struct {
	def         source.ColumnDef
	serial      bool
	constraints []constraintSpec // PRIMARY KEY and UNIQUE on the column
}

type conKind uint8

const (
	conOther   conKind = iota // CHECK, FOREIGN KEY, EXCLUDE: not modelled
	conPrimary                // PRIMARY KEY
	conUnique                 // UNIQUE
)

// constraintSpec is a table constraint as written.
type constraintSpec struct {
	kind       conKind
	name       string // "" when the server chooses it
	columns    []string
	usingIndex string // ... USING INDEX idx: the index becomes the constraint
}

// columnDef reads name type [options...] up to the comma or parenthesis
// that ends it.
func (p *ddlParser) columnDef() (columnSpec, error) {
	var s columnSpec
	name, err := p.name()
	if err != nil {
		return s, err
	}
	s.def.Name = name
	ts, err := p.typeSpec()
	if err != nil {
		return s, fmt.Errorf("column %s: %w", name, err)
	}
	t, err := ts.resolve()
	if err != nil {
		return s, fmt.Errorf("column %s: %w", name, err)
	}
	s.def.Type, s.def.TypeMod, s.def.SQLType, s.serial = t.oid, t.typmod, t.sql, ts.serial
	for !p.atEnd() && !p.isOp(",") && !p.isOp(")") {
		if err := p.columnOption(&s); err != nil {
			return s, fmt.Errorf("column %s: %w", name, err)
		}
	}
	return s, nil
}

// columnOption reads one option of a column definition.
func (p *ddlParser) columnOption(s *columnSpec) error {
	var conName string
	if p.acceptKw("constraint") {
		var err error
		if conName, err = p.name(); err != nil {
			return err
		}
	}
	var err error
	switch {
	case p.acceptKw("not", "null"):
		s.def.NotNull = true
	case p.acceptKw("null"):
		s.def.NotNull = false
	case p.acceptKw("primary", "key"):
		s.constraints = append(s.constraints, constraintSpec{kind: conPrimary, name: conName})
		err = p.indexParams()
	case p.acceptKw("unique"):
		p.acceptKw("key")
		s.constraints = append(s.constraints, constraintSpec{kind: conUnique, name: conName})
		err = p.indexParams()
	case p.acceptKw("check"):
		_, err = p.group()
	case p.acceptKw("references"):
		err = p.references()
	case p.acceptKw("default"):
		s.def.Default, err = p.expr(columnStop)
	case p.acceptKw("generated"):
		err = p.generated(&s.def)
	case conName != "":
		return p.expected("a constraint after CONSTRAINT " + conName)
	case p.acceptKw("collate"):
		_, err = p.qualifiedName()
	case p.acceptKw("auto_increment"):
		s.def.Identity = 'd'
	case p.acceptKw("on", "update"): // B compatibility: ON UPDATE CURRENT_TIMESTAMP
		_, err = p.expr(columnStop)
	case p.acceptKw("comment"):
		err = p.expectString()
	case p.acceptKw("character", "set"), p.acceptKw("charset"):
		_, err = p.name()
	case p.constraintAttribute():
	default:
		return p.expected("a column option (DEFAULT, NOT NULL, COLLATE, PRIMARY KEY, ...)")
	}
	return err
}

// columnStop ends a DEFAULT expression at the next column option. NULL
// and NOT NULL after IS belong to the expression.
func columnStop(p *ddlParser) bool {
	afterIs := p.i >= 1 && isWord(p.toks[p.i-1], "is") ||
		p.i >= 2 && isWord(p.toks[p.i-1], "not") && isWord(p.toks[p.i-2], "is")
	switch {
	case p.isKw("not", "null"), p.isKw("null"):
		return !afterIs
	case p.isKw("collate"), p.isKw("generated"), p.isKw("constraint"), p.isKw("primary"), p.isKw("unique"),
		p.isKw("check"), p.isKw("references"), p.isKw("auto_increment"), p.isKw("on", "update"):
		return true
	case p.isKw("comment"):
		return p.peekN(1).kind == tString
	}
	return false
}

// generated reads what follows GENERATED: an identity or a stored
// generated column.
func (p *ddlParser) generated(col *source.ColumnDef) error {
	if p.acceptKw("always", "as") && !p.isKw("identity") {
		expr, err := p.group()
		if err != nil {
			return err
		}
		if expr == "" {
			return p.expected("a generation expression")
		}
		col.Generated = expr
		p.acceptKw("stored")
		return nil
	}
	if p.acceptKw("identity") {
		col.Identity = 'a'
	} else {
		kind, err := p.identity()
		if err != nil {
			return err
		}
		col.Identity = kind
	}
	if p.isOp("(") { // sequence options
		_, err := p.group()
		return err
	}
	return nil
}

// identity reads {ALWAYS | BY DEFAULT} AS IDENTITY: 'a' or 'd'.
func (p *ddlParser) identity() (byte, error) {
	switch {
	case p.acceptKw("always", "as", "identity"):
		return 'a', nil
	case p.acceptKw("by", "default", "as", "identity"):
		return 'd', nil
	}
	return 0, p.expected("ALWAYS AS IDENTITY, BY DEFAULT AS IDENTITY or ALWAYS AS (expression)")
}

// references reads a column's REFERENCES clause, which is not modelled.
func (p *ddlParser) references() error {
	if _, err := p.qualifiedName(); err != nil {
		return err
	}
	if p.isOp("(") {
		if _, err := p.group(); err != nil {
			return err
		}
	}
	for {
		switch {
		case p.acceptKw("match"):
			if _, err := p.name(); err != nil {
				return err
			}
		case p.acceptKw("on", "delete"), p.acceptKw("on", "update"):
			switch {
			case p.acceptKw("no", "action"), p.acceptKw("restrict"), p.acceptKw("cascade"):
			case p.acceptKw("set", "null"), p.acceptKw("set", "default"):
				if p.isOp("(") {
					if _, err := p.group(); err != nil {
						return err
					}
				}
			default:
				return p.expected("a referential action")
			}
		case p.constraintAttribute():
		default:
			return nil
		}
	}
}

// constraintAttribute consumes one of DEFERRABLE, NOT DEFERRABLE,
// INITIALLY DEFERRED | IMMEDIATE, NOT VALID, NO INHERIT.
func (p *ddlParser) constraintAttribute() bool {
	return p.acceptKw("deferrable") || p.acceptKw("not", "deferrable") || p.acceptKw("initially", "deferred") ||
		p.acceptKw("initially", "immediate") || p.acceptKw("not", "valid") || p.acceptKw("no", "inherit")
}

// indexParams consumes a key constraint's index options.
func (p *ddlParser) indexParams() error {
	for {
		switch {
		case p.acceptKw("include"), p.acceptKw("with"):
			if _, err := p.group(); err != nil {
				return err
			}
		case p.acceptKw("using", "index", "tablespace"):
			if _, err := p.name(); err != nil {
				return err
			}
		case p.constraintAttribute():
		default:
			return nil
		}
	}
}

func isConstraintStart(p *ddlParser) bool {
	next := p.peekN(1)
	return p.isKw("constraint") || p.isKw("primary", "key") || p.isKw("unique") || p.isKw("check") ||
		p.isKw("foreign", "key") || p.isKw("exclude") && (next.kind == tOp && next.val == "(" || isWord(next, "using"))
}

// tableConstraint reads [CONSTRAINT n] {PRIMARY KEY | UNIQUE} {(cols)
// [index options] | USING INDEX idx} | CHECK (...) | FOREIGN KEY ... |
// EXCLUDE ..., up to the comma or parenthesis that ends it.
func (p *ddlParser) tableConstraint() (constraintSpec, error) {
	var s constraintSpec
	var err error
	if p.acceptKw("constraint") {
		if s.name, err = p.name(); err != nil {
			return s, err
		}
	}
	switch {
	case p.acceptKw("primary", "key"):
		s.kind = conPrimary
	case p.acceptKw("unique"):
		s.kind = conUnique
		if !p.acceptKw("nulls", "distinct") {
			p.acceptKw("nulls", "not", "distinct")
		}
	case p.acceptKw("check"), p.acceptKw("foreign", "key"), p.acceptKw("exclude"):
		_, err = p.expr(nil) // the rest of the element
		return s, err
	default:
		return s, p.expected("PRIMARY KEY, UNIQUE, CHECK, FOREIGN KEY or EXCLUDE")
	}
	if p.acceptKw("using", "index") {
		s.usingIndex, err = p.name()
		for err == nil && p.constraintAttribute() {
		}
		return s, err
	}
	if s.columns, err = p.nameList(); err != nil {
		return s, err
	}
	return s, p.indexParams()
}

// --- parser ---------------------------------------------------------------

// ddlParser walks a statement's tokens. Every loop in the grammar
// consumes a token per round or stops, so the work is linear in the
// statement's length, whatever the input.
type ddlParser struct {
	src  string
	toks []ddlToken // ends with tEOF
	i    int
}

// newDDLParser tokenizes a statement; semicolons that end it are dropped.
func newDDLParser(src string) *ddlParser {
	toks := lexDDL(src)
	for n := len(toks) - 1; n > 0 && toks[n-1].kind == tOp && toks[n-1].val == ";"; n-- {
		toks = append(toks[:n-1], toks[n])
	}
	return &ddlParser{src: src, toks: toks}
}

func (p *ddlParser) peek() ddlToken { return p.toks[p.i] }

func (p *ddlParser) peekN(n int) ddlToken { return p.toks[min(p.i+n, len(p.toks)-1)] }

func (p *ddlParser) next() ddlToken {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *ddlParser) atEnd() bool { return p.peek().kind == tEOF }

// span is the statement's text from token start up to token end (exclusive).
func (p *ddlParser) span(start, end int) string {
	if end <= start {
		return ""
	}
	return p.src[p.toks[start].pos:p.toks[end-1].end]
}

// isKw reports whether the next tokens are the given bare words (lower case).
func (p *ddlParser) isKw(words ...string) bool {
	for n, w := range words {
		if !isWord(p.peekN(n), w) {
			return false
		}
	}
	return true
}

func (p *ddlParser) acceptKw(words ...string) bool {
	if !p.isKw(words...) {
		return false
	}
	p.i += len(words)
	return true
}

func (p *ddlParser) expectKw(words ...string) error {
	if !p.acceptKw(words...) {
		return p.expected(strings.ToUpper(strings.Join(words, " ")))
	}
	return nil
}

func (p *ddlParser) isOp(op string) bool {
	t := p.peek()
	return t.kind == tOp && t.val == op
}

func (p *ddlParser) acceptOp(op string) bool {
	if !p.isOp(op) {
		return false
	}
	p.i++
	return true
}

func (p *ddlParser) expectOp(op string) error {
	if !p.acceptOp(op) {
		return p.expected(strconv.Quote(op))
	}
	return nil
}

func (p *ddlParser) expectString() error {
	if p.peek().kind != tString {
		return p.expected("a string")
	}
	p.next()
	return nil
}

// expected reports what the parser wanted where it is.
func (p *ddlParser) expected(what string) error {
	t := p.peek()
	switch t.kind {
	case tEOF:
		return fmt.Errorf("expected %s at the end of the statement", what)
	case tBad:
		return fmt.Errorf("expected %s, found %s at byte %d", what, t.val, t.pos)
	}
	return fmt.Errorf("expected %s, found %s at byte %d", what, foundToken(p.src, t), t.pos)
}

// foundToken names a token for a message: a word or an operator as
// written, a literal by its kind only, since it may hold a value.
func foundToken(src string, t ddlToken) string {
	switch t.kind {
	case tString:
		return "a string literal"
	case tNumber:
		return "a number"
	}
	return clipDDL(src[t.pos:t.end])
}

// ddlHead names a statement for a message by its leading keywords (up to
// three: "CREATE UNIQUE INDEX"), never its text, which may hold values.
func ddlHead(stmt string) string {
	var words []string
	for _, w := range strings.Fields(stmt) {
		if len(words) == 3 || strings.TrimLeft(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") != "" {
			break
		}
		words = append(words, strings.ToUpper(w))
	}
	if len(words) == 0 {
		return "(not starting with a keyword)"
	}
	return strconv.Quote(strings.Join(words, " "))
}

// name reads one identifier, quoted or not.
func (p *ddlParser) name() (string, error) {
	t := p.peek()
	if t.kind != tIdent && t.kind != tQuoted {
		return "", p.expected("a name")
	}
	p.next()
	return t.val, nil
}

// qualifiedName reads name[.name[.name]].
func (p *ddlParser) qualifiedName() ([]string, error) {
	var parts []string
	for {
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		parts = append(parts, n)
		if !p.isOp(".") {
			return parts, nil
		}
		if len(parts) == 3 {
			return nil, p.expected("a name of at most three parts")
		}
		p.next()
	}
}

// tableName reads [database.][schema.]table; without a schema the table is
// in public.
func (p *ddlParser) tableName() (source.TableName, error) {
	parts, err := p.qualifiedName()
	if err != nil {
		return source.TableName{}, err
	}
	name := source.TableName{Schema: "public", Name: parts[len(parts)-1]}
	if len(parts) > 1 {
		name.Schema = parts[len(parts)-2]
	}
	return name, nil
}

// nameList reads (name, ...).
func (p *ddlParser) nameList() ([]string, error) {
	if err := p.expectOp("("); err != nil {
		return nil, err
	}
	var names []string
	for {
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		names = append(names, n)
		if !p.acceptOp(",") {
			return names, p.expectOp(")")
		}
	}
}

// group reads a parenthesised group and returns its inside, trimmed.
func (p *ddlParser) group() (string, error) {
	if !p.isOp("(") {
		return "", p.expected(`"("`)
	}
	open := p.i
	depth := 0
	for {
		t := p.peek()
		switch {
		case t.kind == tEOF || t.kind == tBad:
			return "", p.expected(`")"`)
		case t.kind == tOp && (t.val == "(" || t.val == "["):
			depth++
		case t.kind == tOp && (t.val == ")" || t.val == "]"):
			depth--
		}
		p.next()
		if depth == 0 {
			return strings.TrimSpace(p.src[p.toks[open].end:t.pos]), nil
		}
	}
}

// expr reads an expression: the tokens up to a comma or closing
// parenthesis outside parentheses and CASE ... END, the end of the
// statement, or (after the first token) a token stop accepts. It returns
// the expression's text.
func (p *ddlParser) expr(stop func(*ddlParser) bool) (string, error) {
	start, depth := p.i, 0
	for {
		t := p.peek()
		if t.kind == tBad || t.kind == tEOF && depth > 0 {
			return "", p.expected("the rest of the expression")
		}
		if t.kind == tEOF || depth == 0 && (p.isOp(",") || p.isOp(")") || p.i > start && stop != nil && stop(p)) {
			break
		}
		switch {
		case t.kind == tOp && (t.val == "(" || t.val == "["), isWord(t, "case"):
			depth++
		case t.kind == tOp && (t.val == ")" || t.val == "]"), isWord(t, "end") && depth > 0:
			depth--
		}
		p.next()
	}
	if p.i == start {
		return "", p.expected("an expression")
	}
	return p.span(start, p.i), nil
}

// skipElement moves past the rest of a list element: to the next comma
// outside parentheses, or to the end of the statement.
func (p *ddlParser) skipElement() {
	depth := 0
	for !p.atEnd() {
		switch {
		case p.isOp("(") || p.isOp("["):
			depth++
		case p.isOp(")") || p.isOp("]"):
			depth = max(0, depth-1)
		case p.isOp(",") && depth == 0:
			return
		}
		p.next()
	}
}

// clipDDL quotes a statement or part of one for a message, on one line and
// at most 120 bytes.
func clipDDL(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = clipUTF8(s, 120) + "…"
	}
	return strconv.Quote(s)
}

func clipUTF8(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
