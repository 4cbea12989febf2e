package gauss

import (
	"errors"
	"fmt"
	"math"
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
// A Catalog applies each statement to the definitions of the replicated
// tables, so that the applier gets what a PostgreSQL source sends: the
// whole definition of every table a statement created or changed. The
// grammar is PostgreSQL's (gram.y) for CREATE/ALTER/DROP TABLE,
// CREATE/ALTER/DROP INDEX and TRUNCATE, plus openGauss's RENAME TABLE and
// the GaussDB clauses that only set storage (WITH (...), COMPRESS,
// DISTRIBUTE BY, PARTITION BY, ...). Statements are read as tokens (see
// lexDDL), never by regular expressions over the text. A statement about a
// selected table that the parser does not understand becomes a change
// with DDL.Unsupported set: never an error, never a silent skip.

// Catalog is a GaussDB reader's view of the replicated tables, as
// definitions (the target stores them; the reader loads them at each
// stream start), which DDL statements in the stream change.
//
// Statements apply idempotently, because after a crash the reader may
// replay a statement onto definitions that already include it: adding a
// column that exists, dropping one that does not, renaming a column or
// table that is gone to a name that is taken all leave the definition as
// it is. A Catalog is not safe for concurrent use.
type Catalog struct {
	filter source.TableFilter
	tables map[source.TableName]*source.TableDef // selected tables only; never changed in place
	// lastOID is the largest table OID known (at least firstStreamOID): a
	// new table gets the next, so a replay from the same stored
	// definitions allocates the same OIDs.
	lastOID uint32
	// lastAttnum is, by table OID, the largest attribute number the table
	// had in this catalog. Like the server, the catalog does not reuse a
	// dropped column's number, so a statement that drops one column and
	// adds another is not mistaken for a rename.
	lastAttnum map[uint32]int16
}

// The server's limits (MaxHeapAttributeNumber, INDEX_MAX_KEYS), which
// also bound the catalog's work on a hostile statement.
const (
	maxColumns    = 1600
	maxKeyColumns = 32
)

// firstStreamOID is where the OIDs of tables created in the stream start:
// above any the server hands out in practice, since the real one is not in
// the statement.
const firstStreamOID = 0xF0000000

// NewCatalog starts from stored definitions (by table OID; may be nil/empty)
// and the table selection; statements about tables the filter does not
// match are ignored.
func NewCatalog(defs map[uint32]*source.TableDef, filter source.TableFilter) *Catalog {
	c := &Catalog{filter: filter, tables: map[source.TableName]*source.TableDef{},
		lastOID: firstStreamOID, lastAttnum: map[uint32]int16{}}
	oids := make([]uint32, 0, len(defs))
	for oid := range defs {
		oids = append(oids, oid)
	}
	slices.Sort(oids) // the same definitions always give the same catalog
	for _, oid := range oids {
		if defs[oid] == nil {
			continue
		}
		def := copyDef(defs[oid])
		if oid != 0 {
			def.OID = oid
		}
		c.lastOID = max(c.lastOID, def.OID)
		if c.selected(def.Name) {
			c.tables[def.Name] = def
		}
	}
	return c
}

// Def returns the current definition of a table (nil if unknown), as a
// copy the caller may keep.
func (c *Catalog) Def(name source.TableName) *source.TableDef {
	if def := c.tables[name]; def != nil {
		return copyDef(def)
	}
	return nil
}

// Apply interprets one DDL statement. It returns the change to hand to the
// applier, or ok=false when the statement does not concern replicated
// tables (another schema's table, CREATE VIEW/SEQUENCE/TYPE/SCHEMA/FUNCTION,
// COMMENT, GRANT, ...). A statement about a selected table that the parser
// does not understand gives ok=true and a DDL change whose DDL.Unsupported
// says what was not understood (never an error, never silently dropped).
// An error is only for a statement that is not parseable SQL at all AND
// names no table (the error says so), or an internal inconsistency.
//
// An empty statement (openGauss's "Drop table command start" message
// carries none) gives ok=false. The definitions in DDL.Tables are copies.
func (c *Catalog) Apply(stmt string) (change source.Change, ok bool, err error) {
	p := newDDLParser(stmt)
	if p.atEnd() {
		return source.Change{}, false, nil
	}
	if p.peek().kind != tIdent {
		return source.Change{}, false, fmt.Errorf("ddl statement %s: not SQL: it does not start with a keyword", clipDDL(stmt))
	}
	out, err := c.statement(p)
	if err != nil {
		return source.Change{}, false, fmt.Errorf("ddl statement %s: %w", clipDDL(stmt), err)
	}
	if out.empty() {
		return source.Change{}, false, nil
	}
	return out.change(stmt), true, nil
}

func (c *Catalog) selected(name source.TableName) bool {
	return !systemSchema(name.Schema) && c.filter.Match(name.Schema, name.Name)
}

// outcome is what one statement did to the replicated tables.
type outcome struct {
	tag         string
	tables      []*source.TableDef // created or changed, as the catalog now holds them
	dropped     []source.DroppedTable
	unsupported []string
	more        int            // reasons beyond maxReasons, counted only
	truncate    *source.Change // TRUNCATE: the change itself
}

// maxReasons bounds the reasons an Unsupported lists, however many
// subcommands a statement has.
const maxReasons = 10

func (o *outcome) empty() bool {
	return o == nil || o.truncate == nil && len(o.tables) == 0 && len(o.dropped) == 0 && len(o.unsupported) == 0
}

func (o *outcome) unsupportedf(format string, args ...any) {
	if len(o.unsupported) == maxReasons {
		o.more++
		return
	}
	o.unsupported = append(o.unsupported, fmt.Sprintf(format, args...))
}

// addTable reports a table as created or changed; a table renamed twice
// by one statement is reported once.
func (o *outcome) addTable(def *source.TableDef) {
	for i, t := range o.tables {
		if t.OID == def.OID {
			o.tables[i] = def
			return
		}
	}
	o.tables = append(o.tables, def)
}

func (o *outcome) change(stmt string) source.Change {
	if o.truncate != nil {
		return *o.truncate
	}
	d := &source.DDL{Tag: o.tag, Statement: stmt, Dropped: o.dropped, Unsupported: strings.Join(o.unsupported, "; ")}
	if o.more > 0 {
		d.Unsupported += fmt.Sprintf("; and %d more", o.more)
	}
	for _, t := range o.tables {
		d.Tables = append(d.Tables, copyDef(t)) // the catalog's own may be replaced, the applier keeps these
	}
	return source.Change{Op: source.OpDDL, DDL: d}
}

// statement dispatches on the leading keywords; statements about other
// objects (views, sequences, types, schemas, functions, comments, grants)
// give nil.
func (c *Catalog) statement(p *ddlParser) (*outcome, error) {
	switch {
	case p.acceptKw("create"):
		return c.create(p)
	case p.acceptKw("alter", "table"):
		return c.alterTable(p)
	case p.acceptKw("alter", "index"):
		return c.alterIndex(p)
	case p.acceptKw("drop", "table"):
		return c.dropTables(p)
	case p.acceptKw("drop", "index"):
		return c.dropIndexes(p)
	case p.acceptKw("rename", "table"):
		return c.renameTables(p)
	case p.acceptKw("truncate"):
		return c.truncate(p)
	case p.acceptKw("timecapsule", "table"):
		return c.timecapsule(p)
	}
	return nil, nil
}

func (c *Catalog) create(p *ddlParser) (*outcome, error) {
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
		return c.createTable(p)
	case p.acceptKw("unique", "index"):
		return c.createIndex(p, true)
	case p.acceptKw("index"):
		return c.createIndex(p, false)
	}
	return nil, nil
}

// --- tables ---------------------------------------------------------------

// createTable: CREATE TABLE [IF NOT EXISTS] name (elements) [clauses]. A
// table that exists already (a replay) gets the new definition and keeps
// its OID.
func (c *Catalog) createTable(p *ddlParser) (*outcome, error) {
	p.acceptKw("if", "not", "exists")
	name, err := p.tableName()
	if err != nil {
		return nil, fmt.Errorf("CREATE TABLE names no table: %w", err)
	}
	if !c.selected(name) {
		return nil, nil
	}
	o := &outcome{tag: "CREATE TABLE"}
	def := &source.TableDef{Name: name}
	if old := c.tables[name]; old != nil {
		def.OID = old.OID
	}
	e := &tableEdit{c: c, def: def}
	if err := e.createBody(p); err != nil {
		o.unsupportedf("%s: %v", name, err)
		return o, nil
	}
	if def.OID == 0 {
		if c.lastOID == math.MaxUint32 {
			return nil, errors.New("no table OID left to allocate")
		}
		c.lastOID++
		def.OID = c.lastOID
	}
	return o, c.commit(o, e, name)
}

// createBody reads the column list and checks the clauses after it.
func (e *tableEdit) createBody(p *ddlParser) error {
	if !p.acceptOp("(") {
		return errors.New("the statement does not list the columns (CREATE TABLE ... AS, OF, PARTITION OF or LIKE)")
	}
	if !p.acceptOp(")") {
		for {
			if err := e.element(p); err != nil {
				return err
			}
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

// element is one entry of CREATE TABLE's list: a column or a table constraint.
func (e *tableEdit) element(p *ddlParser) error {
	if p.isKw("like") {
		return errors.New("LIKE copies columns the statement does not list")
	}
	if isConstraintStart(p) {
		s, err := p.tableConstraint()
		if err != nil {
			return err
		}
		return e.constraint(s)
	}
	s, err := p.columnDef()
	if err != nil {
		return err
	}
	if e.column(s.def.Name) != nil {
		return fmt.Errorf("column %s is defined twice", s.def.Name)
	}
	return e.addColumn(s)
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

// alterTable: ALTER TABLE [IF EXISTS] [ONLY] name subcommand[, ...], or
// ... RENAME TO new, or ... SET SCHEMA s.
func (c *Catalog) alterTable(p *ddlParser) (*outcome, error) {
	p.acceptKw("if", "exists")
	p.acceptKw("only")
	name, err := p.tableName()
	if err != nil {
		return nil, fmt.Errorf("ALTER TABLE names no table: %w", err)
	}
	p.acceptOp("*")
	o := &outcome{tag: "ALTER TABLE"}
	if p.isKw("rename", "to") || p.isKw("set", "schema") {
		return c.moveTable(p, o, name)
	}
	if !c.selected(name) {
		return nil, nil
	}
	old := c.tables[name]
	if old == nil {
		o.unsupportedf("%s: decant has no definition of the table", name)
		return o, nil
	}
	e := c.edit(old)
	e.subcommands(p, o)
	return o, c.commit(o, e, name)
}

// moveTable: ALTER TABLE name RENAME TO new | SET SCHEMA s.
func (c *Catalog) moveTable(p *ddlParser, o *outcome, from source.TableName) (*outcome, error) {
	to := from
	var err error
	if p.acceptKw("rename", "to") {
		var parts []string
		if parts, err = p.qualifiedName(); err == nil {
			to.Name = parts[len(parts)-1]
			if len(parts) > 1 {
				to.Schema = parts[len(parts)-2]
			}
		}
	} else {
		p.acceptKw("set", "schema")
		to.Schema, err = p.name()
	}
	if err == nil && !p.atEnd() {
		err = p.expected("the end of the statement")
	}
	if err != nil {
		if c.selected(from) {
			o.unsupportedf("%s: %v", from, err)
		}
		return o, nil
	}
	return o, c.renameTable(o, from, to)
}

// renameTables: openGauss's RENAME TABLE a TO b[, c TO d ...].
func (c *Catalog) renameTables(p *ddlParser) (*outcome, error) {
	o := &outcome{tag: "ALTER TABLE"}
	for n := 0; ; n++ {
		from, err := p.tableName()
		if err != nil && n == 0 {
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
			if n > 0 || c.selected(from) {
				o.unsupportedf("RENAME TABLE: %v", err)
			}
			return o, nil
		}
		if err := c.renameTable(o, from, to); err != nil {
			return nil, err
		}
		if !p.acceptOp(",") {
			break
		}
	}
	if !p.atEnd() {
		o.unsupportedf("RENAME TABLE: %v", p.expected("a comma or the end of the statement"))
	}
	return o, nil
}

// renameTable renames (or moves to another schema) a table. Replays are
// no-ops: when the new name is taken, the table is already renamed (the
// server would refuse otherwise).
func (c *Catalog) renameTable(o *outcome, from, to source.TableName) error {
	if !c.selected(from) && !c.selected(to) {
		return nil
	}
	old, cur := c.tables[from], c.tables[to]
	switch {
	case cur != nil: // a replay, or a rename onto itself
		o.addTable(cur)
	case old == nil && c.selected(to):
		o.unsupportedf("%s renamed to %s: decant has no definition of the table", from, to)
	case old == nil: // an unknown table leaves the selection: nothing to follow
	case !c.selected(to):
		o.unsupportedf("%s renamed to %s, which the table selection does not include", from, to)
		delete(c.tables, from)
	default:
		e := c.edit(old)
		e.def.Name = to
		e.retargetIndexes("", "")
		return c.commit(o, e, from)
	}
	return nil
}

// dropTables: DROP TABLE [IF EXISTS] a[, b ...] [CASCADE | RESTRICT] [PURGE].
func (c *Catalog) dropTables(p *ddlParser) (*outcome, error) {
	p.acceptKw("if", "exists")
	o := &outcome{tag: "DROP TABLE"}
	for n := 0; ; n++ {
		name, err := p.tableName()
		if err != nil && n == 0 {
			return nil, fmt.Errorf("DROP TABLE names no table: %w", err)
		}
		if err != nil {
			o.unsupportedf("DROP TABLE: %v", err)
			break
		}
		if def := c.tables[name]; def != nil {
			o.dropped = append(o.dropped, source.DroppedTable{OID: def.OID, Name: name})
			delete(c.tables, name)
		}
		if !p.acceptOp(",") {
			break
		}
	}
	return o, nil
}

// truncate: TRUNCATE [TABLE] [ONLY] a [*][, ...] [RESTART | CONTINUE
// IDENTITY] [CASCADE | RESTRICT], as a truncate change of the selected
// tables.
func (c *Catalog) truncate(p *ddlParser) (*outcome, error) {
	p.acceptKw("table")
	ch := source.Change{Op: source.OpTruncate}
	o := &outcome{tag: "TRUNCATE TABLE"}
	var names []source.TableName
	for n := 0; ; n++ {
		p.acceptKw("only")
		name, err := p.tableName()
		if err != nil && n == 0 {
			return nil, fmt.Errorf("TRUNCATE names no table: %w", err)
		}
		if err != nil {
			o.unsupportedf("TRUNCATE: %v", err)
			return o, nil
		}
		p.acceptOp("*")
		names = append(names, name)
		if c.selected(name) {
			ch.Truncated = append(ch.Truncated, &source.Relation{Schema: name.Schema, Name: name.Name, Identity: source.IdentityFull})
		}
		if !p.acceptOp(",") {
			break
		}
	}
	if len(ch.Truncated) == 0 {
		return nil, nil
	}
	for !p.atEnd() {
		switch {
		case p.acceptKw("restart", "identity"):
			ch.RestartIdentity = true
		case p.acceptKw("continue", "identity"):
			ch.RestartIdentity = false
		case p.acceptKw("cascade"):
			ch.Cascade = true
		case p.acceptKw("restrict"), p.acceptKw("purge"):
		default:
			// Not knowing what else goes, do not empty the target's tables.
			o.unsupportedf("TRUNCATE of %s: %v", names[0], p.expected("RESTART IDENTITY, CONTINUE IDENTITY, CASCADE or RESTRICT"))
			return o, nil
		}
	}
	o.truncate = &ch
	return o, nil
}

// timecapsule: GaussDB's TIMECAPSULE TABLE name TO {BEFORE DROP | BEFORE
// TRUNCATE | TIMECAPSULE ... | CSN ...} brings back a dropped table or old
// rows, none of which the stream carries.
func (c *Catalog) timecapsule(p *ddlParser) (*outcome, error) {
	name, err := p.tableName()
	if err != nil {
		return nil, fmt.Errorf("TIMECAPSULE TABLE names no table: %w", err)
	}
	if !c.selected(name) {
		return nil, nil
	}
	o := &outcome{tag: "TIMECAPSULE TABLE"}
	o.unsupportedf("%s: TIMECAPSULE restores a table or rows the stream does not carry", name)
	return o, nil
}

// --- indexes --------------------------------------------------------------

// createIndex: CREATE [UNIQUE] INDEX [CONCURRENTLY] [IF NOT EXISTS] [name]
// ON [ONLY] table [USING method] (keys) [INCLUDE (...)] [storage] [WHERE ...].
func (c *Catalog) createIndex(p *ddlParser, unique bool) (*outcome, error) {
	p.acceptKw("concurrently")
	p.acceptKw("if", "not", "exists")
	var name string
	if !p.isKw("on") {
		parts, err := p.qualifiedName() // the index lives in its table's schema
		if err != nil {
			return nil, fmt.Errorf("CREATE INDEX names no index: %w", err)
		}
		name = parts[len(parts)-1]
	}
	err := p.expectKw("on")
	p.acceptKw("only")
	var table source.TableName
	if err == nil {
		table, err = p.tableName()
	}
	if err != nil {
		return nil, fmt.Errorf("CREATE INDEX names no table: %w", err)
	}
	if !c.selected(table) {
		return nil, nil
	}
	o := &outcome{tag: "CREATE INDEX"}
	label := name
	if label == "" {
		label = "without a name"
	}
	def := c.tables[table]
	if def == nil {
		o.unsupportedf("index %s on %s: decant has no definition of the table", label, table)
		return o, nil
	}
	body, err := p.indexBody()
	e := c.edit(def)
	if err == nil {
		err = e.addIndex(name, unique, body)
	}
	if err != nil {
		o.unsupportedf("index %s on %s: %v", label, table, err)
		return o, nil
	}
	return o, c.commit(o, e, table)
}

// dropIndexes: DROP INDEX [CONCURRENTLY] [IF EXISTS] a[, b ...] [CASCADE |
// RESTRICT]; each index is looked for among the tables of its schema.
func (c *Catalog) dropIndexes(p *ddlParser) (*outcome, error) {
	p.acceptKw("concurrently")
	p.acceptKw("if", "exists")
	o := &outcome{tag: "DROP INDEX"}
	for n := 0; ; n++ {
		name, err := p.tableName()
		if err != nil && n == 0 {
			return nil, fmt.Errorf("DROP INDEX names no index: %w", err)
		}
		if err != nil {
			o.unsupportedf("DROP INDEX: %v", err)
			break
		}
		if def := c.indexTable(name, false); def != nil {
			e := c.edit(def)
			e.def.Uniques = removeIndex(e.def.Uniques, name.Name)
			e.def.Indexes = removeIndex(e.def.Indexes, name.Name)
			if err := c.commit(o, e, def.Name); err != nil {
				return nil, err
			}
		}
		if !p.acceptOp(",") {
			break
		}
	}
	return o, nil
}

// alterIndex: ALTER INDEX [IF EXISTS] name RENAME TO new. Other forms
// (tablespace, storage parameters, UNUSABLE, REBUILD) change nothing the
// definitions hold.
func (c *Catalog) alterIndex(p *ddlParser) (*outcome, error) {
	p.acceptKw("if", "exists")
	name, err := p.tableName()
	if err != nil {
		return nil, fmt.Errorf("ALTER INDEX names no index: %w", err)
	}
	if !p.acceptKw("rename", "to") {
		return nil, nil
	}
	def := c.indexTable(name, true)
	if def == nil {
		return nil, nil // another schema's index, or a replay after the rename
	}
	o := &outcome{tag: "ALTER INDEX"}
	to, err := p.name()
	if err == nil && !p.atEnd() {
		err = p.expected("the end of the statement")
	}
	if err != nil {
		o.unsupportedf("index %s of %s: %v", name.Name, def.Name, err)
		return o, nil
	}
	e := c.edit(def)
	e.renameIndex(name.Name, to)
	return o, c.commit(o, e, def.Name)
}

// indexTable finds the selected table that has an index of that name in
// the name's schema; withKey includes primary keys.
func (c *Catalog) indexTable(ix source.TableName, withKey bool) *source.TableDef {
	names := make([]source.TableName, 0, len(c.tables))
	for n := range c.tables {
		if n.Schema == ix.Schema {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b source.TableName) int { return strings.Compare(a.Name, b.Name) })
	for _, n := range names {
		def := c.tables[n]
		if indexNamed(def.Uniques, ix.Name) >= 0 || indexNamed(def.Indexes, ix.Name) >= 0 ||
			withKey && len(def.PrimaryKey) > 0 && primaryKeyName(def) == ix.Name {
			return def
		}
	}
	return nil
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

// addIndex records an index; one of the same name (a replay) is replaced.
func (e *tableEdit) addIndex(name string, unique bool, b indexBody) error {
	if !b.expr {
		if err := e.haveColumns(b.columns); err != nil {
			return err
		}
	}
	if name == "" {
		if !b.expr && e.hasIndexOn(b.columns, unique) {
			return nil // a replay of CREATE INDEX without a name
		}
		name = e.chooseName(e.def.Name.Name, indexNameAddition(b.names), "idx")
	}
	ix := source.IndexDef{Name: name, Columns: b.columns}
	if b.expr {
		ix = source.IndexDef{Name: name, Expr: indexDefinition(unique, name, e.def.Name, b)}
	}
	e.def.Uniques = removeIndex(e.def.Uniques, name)
	e.def.Indexes = removeIndex(e.def.Indexes, name)
	if unique {
		e.def.Uniques = insertIndex(e.def.Uniques, ix)
	} else {
		e.def.Indexes = insertIndex(e.def.Indexes, ix)
	}
	return nil
}

// indexDefinition writes an expression, partial or non-btree index the
// way pg_get_indexdef does (which is what IndexDef.Expr holds for a
// PostgreSQL source, and what a PostgreSQL target runs): CREATE [UNIQUE]
// INDEX name ON schema.table USING method (keys) [INCLUDE (...)] [WHERE ...].
func indexDefinition(unique bool, name string, table source.TableName, b indexBody) string {
	var s strings.Builder
	s.WriteString("CREATE ")
	if unique {
		s.WriteString("UNIQUE ")
	}
	fmt.Fprintf(&s, "INDEX %s ON %s USING %s %s", QuoteIdentifier(name), quoteTable(table), b.method, b.keys)
	if b.include != "" {
		s.WriteString(" " + b.include)
	}
	if b.where != "" {
		s.WriteString(" WHERE " + b.where)
	}
	return s.String()
}

func quoteTable(t source.TableName) string {
	return QuoteIdentifier(t.Schema) + "." + QuoteIdentifier(t.Name)
}

// --- editing one table ----------------------------------------------------

// tableEdit is one statement's change to one table, made on a copy that the
// catalog takes over (commit) once the statement is through.
type tableEdit struct {
	c   *Catalog
	def *source.TableDef
	top int16 // the largest attribute number handed out; new columns get the next
}

func (c *Catalog) edit(def *source.TableDef) *tableEdit {
	e := &tableEdit{c: c, def: copyDef(def), top: c.lastAttnum[def.OID]}
	for _, col := range def.Columns {
		e.top = max(e.top, col.Attnum)
	}
	return e
}

// commit makes the edited definition the catalog's (under its new name,
// after a rename) and reports it as changed. A definition that does not
// hold together is an internal error and changes nothing.
func (c *Catalog) commit(o *outcome, e *tableEdit, from source.TableName) error {
	if err := checkDef(e.def); err != nil {
		return fmt.Errorf("internal inconsistency in the definition of %s: %w", e.def.Name, err)
	}
	delete(c.tables, from)
	c.tables[e.def.Name] = e.def
	c.lastAttnum[e.def.OID] = max(c.lastAttnum[e.def.OID], e.top)
	o.addTable(e.def)
	return nil
}

func (e *tableEdit) column(name string) *source.ColumnDef {
	for i := range e.def.Columns {
		if e.def.Columns[i].Name == name {
			return &e.def.Columns[i]
		}
	}
	return nil
}

// haveColumns checks a key's columns: each exists, none twice.
func (e *tableEdit) haveColumns(cols []string) error {
	if len(cols) > maxKeyColumns {
		return fmt.Errorf("a key has at most %d columns", maxKeyColumns)
	}
	for i, col := range cols {
		if e.column(col) == nil {
			return fmt.Errorf("column %s does not exist", col)
		}
		if slices.Contains(cols[:i], col) {
			return fmt.Errorf("column %s appears twice in the key", col)
		}
	}
	return nil
}

// addColumn appends a column with the next attribute number, and the
// constraints written on it.
func (e *tableEdit) addColumn(s columnSpec) error {
	if len(e.def.Columns) >= maxColumns {
		return fmt.Errorf("a table has at most %d columns", maxColumns)
	}
	if e.top == math.MaxInt16 {
		return errors.New("no attribute number left for a new column")
	}
	e.top++
	col := s.def
	col.Attnum = e.top
	if s.serial || serialDefault(col.Default) {
		col.Identity = 'd' // as a PostgreSQL source describes serial columns
	}
	switch {
	case col.Identity != 0:
		col.Default, col.NotNull = "", true
	case col.Generated != "":
		col.Default = ""
	}
	e.def.Columns = append(e.def.Columns, col)
	for _, con := range s.constraints {
		con.columns = []string{col.Name}
		if err := e.constraint(con); err != nil {
			return err
		}
	}
	return nil
}

// constraint applies a table constraint. CHECK, FOREIGN KEY and EXCLUDE
// constraints are not modelled.
func (e *tableEdit) constraint(s constraintSpec) error {
	switch s.kind {
	case conPrimary:
		return e.setPrimaryKey(s)
	case conUnique:
		return e.addUnique(s)
	}
	return nil
}

func (e *tableEdit) setPrimaryKey(s constraintSpec) error {
	cols, name := s.columns, s.name
	if s.usingIndex != "" { // the unique index becomes the key
		i := indexNamed(e.def.Uniques, s.usingIndex)
		if i < 0 && len(e.def.PrimaryKey) > 0 && (primaryKeyName(e.def) == name || primaryKeyName(e.def) == s.usingIndex) {
			return nil // a replay
		}
		if i < 0 || e.def.Uniques[i].Expr != "" {
			return fmt.Errorf("no unique index %s over plain columns to make the primary key", s.usingIndex)
		}
		cols = e.def.Uniques[i].Columns
		e.def.Uniques = slices.Delete(e.def.Uniques, i, i+1)
		if name == "" {
			name = s.usingIndex
		}
	}
	if err := e.haveColumns(cols); err != nil {
		return err
	}
	if name == "" {
		if slices.Equal(e.def.PrimaryKey, cols) {
			name = e.def.PrimaryKeyName // a replay keeps the name chosen first
		} else {
			e.def.PrimaryKey, e.def.PrimaryKeyName = nil, ""
			name = e.chooseName(e.def.Name.Name, "", "pkey")
		}
	}
	e.def.PrimaryKey, e.def.PrimaryKeyName = slices.Clone(cols), name
	for _, col := range cols {
		e.column(col).NotNull = true
	}
	return nil
}

func (e *tableEdit) addUnique(s constraintSpec) error {
	if s.usingIndex != "" { // the unique index becomes a constraint, renamed
		if s.name != "" && indexNamed(e.def.Uniques, s.usingIndex) >= 0 {
			e.renameIndex(s.usingIndex, s.name)
		}
		return nil
	}
	if err := e.haveColumns(s.columns); err != nil {
		return err
	}
	name := s.name
	if name == "" {
		if e.hasIndexOn(s.columns, true) {
			return nil // a replay
		}
		name = e.chooseName(e.def.Name.Name, indexNameAddition(s.columns), "key")
	}
	e.def.Uniques = insertIndex(removeIndex(e.def.Uniques, name), source.IndexDef{Name: name, Columns: slices.Clone(s.columns)})
	return nil
}

func (e *tableEdit) hasIndexOn(cols []string, unique bool) bool {
	list := e.def.Indexes
	if unique {
		list = e.def.Uniques
	}
	return slices.ContainsFunc(list, func(ix source.IndexDef) bool { return ix.Expr == "" && slices.Equal(ix.Columns, cols) })
}

// subcommands applies ALTER TABLE's comma-separated subcommands. One that
// is not understood is reported and skipped; the others still apply.
func (e *tableEdit) subcommands(p *ddlParser, o *outcome) {
	for {
		start := p.i
		err := e.subcommand(p)
		if err == nil && !p.atEnd() && !p.isOp(",") {
			err = p.expected("a comma or the end of the statement")
		}
		if err != nil {
			p.i = start
			p.skipElement()
			o.unsupportedf("%s %s: %v", e.def.Name, clipDDL(p.span(start, p.i)), err)
		}
		if !p.acceptOp(",") {
			if !p.atEnd() {
				o.unsupportedf("%s: %v", e.def.Name, p.expected("a comma or the end of the statement"))
			}
			return
		}
	}
}

func (e *tableEdit) subcommand(p *ddlParser) error {
	switch {
	case rowsClause(p):
		return errors.New("it changes rows the stream does not carry")
	case storageClause(p):
		p.skipElement()
		return nil
	case p.acceptKw("add"):
		return e.add(p)
	case p.acceptKw("drop"):
		return e.drop(p)
	case p.acceptKw("alter"):
		return e.alter(p)
	case p.acceptKw("rename"):
		return e.rename(p)
	case p.isKw("modify"), p.isKw("change"):
		return errors.New("MODIFY and CHANGE redefine a column by rules that depend on the database's compatibility mode")
	}
	return p.expected("an ALTER TABLE subcommand")
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
// table_constraint. A column that exists already is a replay and is kept.
func (e *tableEdit) add(p *ddlParser) error {
	if isConstraintStart(p) {
		s, err := p.tableConstraint()
		if err != nil {
			return err
		}
		return e.constraint(s)
	}
	list := p.acceptOp("(") // A compatibility: ADD (c1 type, c2 type)
	if !list {
		p.acceptKw("column")
		p.acceptKw("if", "not", "exists")
	}
	for {
		s, err := p.columnDef()
		if err != nil {
			return err
		}
		if e.column(s.def.Name) == nil {
			if err := e.addColumn(s); err != nil {
				return err
			}
		}
		if !list {
			return nil
		}
		if !p.acceptOp(",") {
			return p.expectOp(")")
		}
	}
}

// drop: DROP [COLUMN] [IF EXISTS] c [CASCADE | RESTRICT] | DROP CONSTRAINT
// [IF EXISTS] n [CASCADE | RESTRICT] | DROP PRIMARY KEY.
func (e *tableEdit) drop(p *ddlParser) error {
	switch {
	case p.acceptKw("constraint"):
		p.acceptKw("if", "exists")
		name, err := p.name()
		if err != nil {
			return err
		}
		dropBehavior(p)
		e.dropConstraint(name)
		return nil
	case p.acceptKw("primary", "key"):
		e.def.PrimaryKey, e.def.PrimaryKeyName = nil, ""
		return nil
	}
	p.acceptKw("column")
	p.acceptKw("if", "exists")
	name, err := p.name()
	if err != nil {
		return err
	}
	dropBehavior(p)
	e.dropColumn(name)
	return nil
}

func dropBehavior(p *ddlParser) {
	if !p.acceptKw("cascade") {
		p.acceptKw("restrict")
	}
}

// dropColumn removes a column (nothing when it is gone: a replay) with
// what the server drops along: the keys and indexes over it and, under
// CASCADE, the generated columns computed from it.
func (e *tableEdit) dropColumn(name string) {
	if e.column(name) == nil {
		return
	}
	gone := []string{name}
	for _, col := range e.def.Columns {
		if col.Generated != "" && col.Name != name && mentions(col.Generated, name) {
			gone = append(gone, col.Name)
		}
	}
	for _, col := range gone {
		e.def.Columns = slices.DeleteFunc(e.def.Columns, func(c source.ColumnDef) bool { return c.Name == col })
		if slices.Contains(e.def.PrimaryKey, col) {
			e.def.PrimaryKey, e.def.PrimaryKeyName = nil, ""
		}
		covers := func(ix source.IndexDef) bool {
			return slices.Contains(ix.Columns, col) || ix.Expr != "" && mentions(indexKeys(ix.Expr), col)
		}
		e.def.Uniques = slices.DeleteFunc(e.def.Uniques, covers)
		e.def.Indexes = slices.DeleteFunc(e.def.Indexes, covers)
	}
}

// dropConstraint drops a unique constraint or the primary key by name.
// Any other constraint (CHECK, FOREIGN KEY) is not in the definition.
func (e *tableEdit) dropConstraint(name string) {
	if i := indexNamed(e.def.Uniques, name); i >= 0 {
		e.def.Uniques = slices.Delete(e.def.Uniques, i, i+1)
		return
	}
	if len(e.def.PrimaryKey) > 0 && primaryKeyName(e.def) == name {
		e.def.PrimaryKey, e.def.PrimaryKeyName = nil, ""
	}
}

// primaryKeyName is the key's constraint name: the one known, or the one
// the server chooses by default.
func primaryKeyName(def *source.TableDef) string {
	if def.PrimaryKeyName != "" {
		return def.PrimaryKeyName
	}
	return objectName(def.Name.Name, "", "pkey")
}

// alter: ALTER [COLUMN] c {[SET DATA] TYPE t [COLLATE x] [USING expr] |
// SET DEFAULT expr | DROP DEFAULT | SET NOT NULL | DROP NOT NULL | identity
// and generation changes | SET STATISTICS and other storage settings}. A
// column that is gone (a replay after a drop or rename) is left alone.
func (e *tableEdit) alter(p *ddlParser) error {
	p.acceptKw("column")
	name, err := p.name()
	if err != nil {
		return err
	}
	col := e.column(name)
	if col == nil {
		col = &source.ColumnDef{}
	}
	switch {
	case p.acceptKw("set", "data", "type"), p.acceptKw("type"):
		return alterType(p, col)
	case p.acceptKw("set", "default"):
		col.Default, err = p.expr(nil)
		col.Default = storedDefault(col.Default)
		if serialDefault(col.Default) {
			col.Default, col.Identity = "", 'd'
		}
	case p.acceptKw("drop", "default"):
		// An identity BY DEFAULT with a default to drop is a serial column.
		col.Default = ""
		if col.Identity == 'd' {
			col.Identity = 0
		}
	case p.acceptKw("set", "not", "null"):
		col.NotNull = true
	case p.acceptKw("drop", "not", "null"):
		col.NotNull = false
	case p.acceptKw("add", "generated"):
		err = p.identity(col)
		col.Default, col.NotNull = "", true
		if err == nil && p.isOp("(") { // sequence options
			_, err = p.group()
		}
	case p.acceptKw("set", "generated", "always"):
		col.Identity = 'a'
		p.skipElement() // sequence options
	case p.acceptKw("set", "generated", "by", "default"):
		col.Identity = 'd'
		p.skipElement()
	case p.acceptKw("drop", "identity"):
		p.acceptKw("if", "exists")
		col.Identity = 0
	case p.acceptKw("drop", "expression"):
		p.acceptKw("if", "exists")
		col.Generated = ""
	case columnStorageClause(p):
		p.skipElement()
	default:
		return p.expected("a column change (TYPE, SET DEFAULT, DROP DEFAULT, SET NOT NULL, ...)")
	}
	return err
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

func alterType(p *ddlParser, col *source.ColumnDef) error {
	ts, err := p.typeSpec()
	if err != nil {
		return err
	}
	t, err := ts.resolve()
	if err != nil {
		return err
	}
	if ts.serial {
		return errors.New("serial is not a type a column can be changed to")
	}
	if p.acceptKw("collate") {
		if _, err := p.qualifiedName(); err != nil {
			return err
		}
	}
	if p.acceptKw("using") {
		if _, err := p.expr(nil); err != nil {
			return err
		}
	}
	col.Type, col.TypeMod, col.SQLType, col.Info = t.oid, t.typmod, t.sql, nil
	return nil
}

// rename: RENAME [COLUMN] a TO b | RENAME CONSTRAINT a TO b.
func (e *tableEdit) rename(p *ddlParser) error {
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
		return err
	}
	if constraint {
		e.renameIndex(from, to)
	} else {
		e.renameColumn(from, to)
	}
	return nil
}

// renameColumn renames a column everywhere the definition names it. When
// the column is gone or the new name is taken, the rename is a replay.
func (e *tableEdit) renameColumn(from, to string) {
	col := e.column(from)
	if col == nil || e.column(to) != nil {
		return
	}
	col.Name = to
	rename := func(cols []string) {
		for i := range cols {
			if cols[i] == from {
				cols[i] = to
			}
		}
	}
	rename(e.def.PrimaryKey)
	for _, list := range [][]source.IndexDef{e.def.Uniques, e.def.Indexes} {
		for i := range list {
			rename(list[i].Columns)
		}
	}
	for i := range e.def.Columns {
		if g := e.def.Columns[i].Generated; g != "" {
			e.def.Columns[i].Generated = renameIdent(g, from, to)
		}
	}
	e.retargetIndexes(from, to)
}

// renameIndex renames an index or constraint: a unique constraint, an
// index, or the primary key. A rename onto a taken name is a replay.
func (e *tableEdit) renameIndex(from, to string) {
	if from == to || e.nameTaken(to) {
		return
	}
	if len(e.def.PrimaryKey) > 0 && primaryKeyName(e.def) == from {
		e.def.PrimaryKeyName = to
		return
	}
	for _, list := range [][]source.IndexDef{e.def.Uniques, e.def.Indexes} {
		if i := indexNamed(list, from); i >= 0 {
			list[i].Name = to
			if list[i].Expr != "" {
				list[i].Expr = retargetIndexDef(list[i].Expr, to, e.def.Name, "", "")
			}
			slices.SortStableFunc(list, func(a, b source.IndexDef) int { return strings.Compare(a.Name, b.Name) })
			return
		}
	}
}

// retargetIndexes rewrites the expression indexes' definitions for the
// table's current name and, when from is set, a renamed column.
func (e *tableEdit) retargetIndexes(from, to string) {
	for _, list := range [][]source.IndexDef{e.def.Uniques, e.def.Indexes} {
		for i := range list {
			if list[i].Expr != "" {
				list[i].Expr = retargetIndexDef(list[i].Expr, list[i].Name, e.def.Name, from, to)
			}
		}
	}
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
		s.def.Default = storedDefault(s.def.Default)
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
	} else if err := p.identity(col); err != nil {
		return err
	}
	if p.isOp("(") { // sequence options
		_, err := p.group()
		return err
	}
	return nil
}

// identity reads {ALWAYS | BY DEFAULT} AS IDENTITY.
func (p *ddlParser) identity(col *source.ColumnDef) error {
	switch {
	case p.acceptKw("always", "as", "identity"):
		col.Identity = 'a'
	case p.acceptKw("by", "default", "as", "identity"):
		col.Identity = 'd'
	default:
		return p.expected("ALWAYS AS IDENTITY, BY DEFAULT AS IDENTITY or ALWAYS AS (expression)")
	}
	return nil
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

// storedDefault is the default the server keeps: none for a NULL
// constant (possibly cast), which it does not store.
func storedDefault(expr string) string {
	toks := lexDDL(expr)
	if isWord(toks[0], "null") && (toks[1].kind == tEOF || toks[1].kind == tOp && toks[1].val == "::") {
		return ""
	}
	return expr
}

// serialDefault reports whether a default is nextval() of a sequence,
// which is how the server describes a serial column. Like DescribeTables,
// the catalog takes such a column for an identity BY DEFAULT: the target
// generates its own values and needs no copy of the source's sequence.
func serialDefault(expr string) bool {
	toks := lexDDL(expr)
	return isWord(toks[0], "nextval") && toks[1].kind == tOp && toks[1].val == "("
}

// --- names ----------------------------------------------------------------

// objectName is the server's makeObjectName: name1[_name2][_label], the
// longer name cut first so that the whole fits in 63 bytes (NAMEDATALEN-1),
// never inside a UTF-8 character.
func objectName(name1, name2, label string) string {
	overhead := 0
	if name2 != "" {
		overhead++
	}
	if label != "" {
		overhead += len(label) + 1
	}
	n1, n2 := len(name1), len(name2)
	for n1+n2 > 63-overhead && n1+n2 > 0 {
		if n1 > n2 {
			n1--
		} else {
			n2--
		}
	}
	out := clipUTF8(name1, n1)
	if name2 != "" {
		out += "_" + clipUTF8(name2, n2)
	}
	if label != "" {
		out += "_" + label
	}
	return out
}

func clipUTF8(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// indexNameAddition is the server's ChooseIndexNameAddition: the key
// names joined by "_", at most 63 bytes.
func indexNameAddition(names []string) string {
	var b strings.Builder
	for _, n := range names {
		if b.Len() > 0 {
			b.WriteByte('_')
		}
		b.WriteString(n[:min(len(n), max(0, 63-b.Len()))])
		if b.Len() >= 63 {
			break
		}
	}
	return b.String()
}

// chooseName is the server's ChooseRelationName: objectName, with a
// number after the label while the name is taken in the schema (as far as
// the catalog knows the schema's relations).
func (e *tableEdit) chooseName(name1, name2, label string) string {
	name := objectName(name1, name2, label)
	for pass := 1; pass < 1000 && e.nameTaken(name); pass++ {
		name = objectName(name1, name2, label+strconv.Itoa(pass))
	}
	return name
}

func (e *tableEdit) nameTaken(name string) bool {
	if hasRelation(e.def, name) {
		return true
	}
	for n, def := range e.c.tables {
		if n.Schema == e.def.Name.Schema && def.OID != e.def.OID && hasRelation(def, name) {
			return true
		}
	}
	return false
}

// hasRelation reports whether a table or one of its indexes has the name.
func hasRelation(def *source.TableDef, name string) bool {
	return def.Name.Name == name || len(def.PrimaryKey) > 0 && primaryKeyName(def) == name ||
		indexNamed(def.Uniques, name) >= 0 || indexNamed(def.Indexes, name) >= 0
}

func indexNamed(list []source.IndexDef, name string) int {
	return slices.IndexFunc(list, func(ix source.IndexDef) bool { return ix.Name == name })
}

func removeIndex(list []source.IndexDef, name string) []source.IndexDef {
	return slices.DeleteFunc(list, func(ix source.IndexDef) bool { return ix.Name == name })
}

// insertIndex adds an index in name order, as a PostgreSQL source lists them.
func insertIndex(list []source.IndexDef, ix source.IndexDef) []source.IndexDef {
	i, _ := slices.BinarySearchFunc(list, ix.Name, func(x source.IndexDef, name string) int { return strings.Compare(x.Name, name) })
	return slices.Insert(list, i, ix)
}

// retargetIndexDef rewrites an index definition in pg_get_indexdef's form
// (CREATE [UNIQUE] INDEX name ON [ONLY] table USING ...) for the index's
// and table's current names and, when from is set, a renamed column. A
// definition of another shape comes back unchanged.
func retargetIndexDef(def, index string, table source.TableName, from, to string) string {
	p := newDDLParser(def)
	if !p.acceptKw("create") {
		return def
	}
	p.acceptKw("unique")
	if !p.acceptKw("index") {
		return def
	}
	name := p.peek()
	if name.kind != tIdent && name.kind != tQuoted || isWord(name, "on") {
		return def
	}
	p.next()
	if !p.acceptKw("on") {
		return def
	}
	p.acceptKw("only")
	start := p.i
	if _, err := p.qualifiedName(); err != nil {
		return def
	}
	rest := def[p.toks[p.i-1].end:]
	if from != "" {
		rest = renameIdent(rest, from, to)
	}
	return def[:name.pos] + QuoteIdentifier(index) + def[name.end:p.toks[start].pos] + quoteTable(table) + rest
}

// indexKeys is the part of an index definition from USING on, which
// names the columns (the part before names the index and the table).
func indexKeys(def string) string {
	for _, t := range lexDDL(def) {
		if isWord(t, "using") {
			return def[t.pos:]
		}
	}
	return def
}

// identRefs finds the tokens of sql that name a column: a quoted
// identifier with that name, or a bare one when the name needs no quotes,
// that is not qualified, a qualifier or a function name.
func identRefs(toks []ddlToken, column string) []int {
	var out []int
	bare := QuoteIdentifier(column) == column
	for i, t := range toks {
		if t.val != column || !(t.kind == tQuoted || t.kind == tIdent && bare) {
			continue
		}
		if i > 0 && toks[i-1].kind == tOp && toks[i-1].val == "." {
			continue
		}
		if n := toks[i+1]; n.kind == tOp && (n.val == "(" || n.val == ".") {
			continue
		}
		out = append(out, i)
	}
	return out
}

// mentions reports whether an expression refers to a column.
func mentions(sql, column string) bool {
	return len(identRefs(lexDDL(sql), column)) > 0
}

// renameIdent rewrites an expression's references to a renamed column.
func renameIdent(sql, from, to string) string {
	toks := lexDDL(sql)
	var b strings.Builder
	last := 0
	for _, i := range identRefs(toks, from) {
		b.WriteString(sql[last:toks[i].pos])
		b.WriteString(QuoteIdentifier(to))
		last = toks[i].end
	}
	b.WriteString(sql[last:])
	return b.String()
}

// --- definitions ----------------------------------------------------------

// copyDef copies a definition deeply enough that changing the copy never
// changes the original (Info, set only for user-defined types, is shared:
// nothing changes it).
func copyDef(def *source.TableDef) *source.TableDef {
	out := *def
	out.Columns = slices.Clone(def.Columns)
	out.PrimaryKey = slices.Clone(def.PrimaryKey)
	out.Uniques = copyIndexes(def.Uniques)
	out.Indexes = copyIndexes(def.Indexes)
	return &out
}

func copyIndexes(list []source.IndexDef) []source.IndexDef {
	if list == nil {
		return nil
	}
	out := make([]source.IndexDef, len(list))
	for i, ix := range list {
		out[i] = ix
		out[i].Columns = slices.Clone(ix.Columns)
	}
	return out
}

// checkDef checks that a definition holds together: column names and
// attribute numbers unique, keys and indexes over existing columns.
func checkDef(def *source.TableDef) error {
	names := map[string]bool{}
	attnums := map[int16]bool{}
	for _, c := range def.Columns {
		if c.Name == "" || names[c.Name] {
			return fmt.Errorf("column name %q is empty or repeated", c.Name)
		}
		if c.Attnum > 0 && attnums[c.Attnum] {
			return fmt.Errorf("attribute number %d is repeated", c.Attnum)
		}
		names[c.Name], attnums[c.Attnum] = true, true
	}
	for _, col := range def.PrimaryKey {
		if !names[col] {
			return fmt.Errorf("primary key column %s does not exist", col)
		}
	}
	for _, ix := range slices.Concat(def.Uniques, def.Indexes) {
		if ix.Name == "" || len(ix.Columns) == 0 && ix.Expr == "" {
			return fmt.Errorf("index %q has no name or no keys", ix.Name)
		}
		for _, col := range ix.Columns {
			if !names[col] {
				return fmt.Errorf("index %s column %s does not exist", ix.Name, col)
			}
		}
	}
	return nil
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
