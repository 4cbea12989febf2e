package gauss

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/decant/decant/source"
)

// A Catalog applies each DDL statement (parsed by parseDDL, ddlparse.go)
// to the definitions of the replicated tables, so that the applier gets
// what a PostgreSQL source sends: the whole definition of every table a
// statement created or changed. A statement about a selected table that
// the parser does not understand becomes a change with DDL.Unsupported
// set: never an error, never a silent skip.

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
	st, err := parseDDL(stmt)
	var out *outcome
	if err == nil {
		out, err = c.apply(st)
	}
	if err != nil {
		return source.Change{}, false, fmt.Errorf("ddl statement %s: %w", ddlHead(stmt), err)
	}
	if out.empty() {
		return source.Change{}, false, nil
	}
	return out.change(stmt), true, nil
}

// apply applies a parsed statement; nil (a statement about other objects)
// gives nil.
func (c *Catalog) apply(st ddlStmt) (*outcome, error) {
	switch s := st.(type) {
	case nil:
		return nil, nil
	case *createTableStmt:
		return c.createTable(s)
	case *alterTableStmt:
		return c.alterTable(s)
	case *moveTableStmt:
		return c.moveTable(s)
	case *renameTablesStmt:
		return c.renameTables(s)
	case *dropTablesStmt:
		return c.dropTables(s), nil
	case *truncateStmt:
		return c.truncate(s), nil
	case *timecapsuleStmt:
		return c.timecapsule(s), nil
	case *createIndexStmt:
		return c.createIndex(s)
	case *dropIndexesStmt:
		return c.dropIndexes(s)
	case *alterIndexStmt:
		return c.alterIndex(s)
	}
	return nil, fmt.Errorf("internal inconsistency: no rule for a %T", st)
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

// --- tables ---------------------------------------------------------------

// createTable: a table that exists already (a replay) gets the new
// definition and keeps its OID.
func (c *Catalog) createTable(s *createTableStmt) (*outcome, error) {
	if !c.selected(s.name) {
		return nil, nil
	}
	o := &outcome{tag: "CREATE TABLE"}
	def := &source.TableDef{Name: s.name}
	if old := c.tables[s.name]; old != nil {
		def.OID = old.OID
	}
	e := &tableEdit{c: c, def: def}
	if err := e.createElements(s); err != nil {
		o.unsupportedf("%s: %v", s.name, err)
		return o, nil
	}
	if def.OID == 0 {
		if c.lastOID == math.MaxUint32 {
			return nil, errors.New("no table OID left to allocate")
		}
		c.lastOID++
		def.OID = c.lastOID
	}
	return o, c.commit(o, e, s.name)
}

// createElements adds the columns and constraints in the order written;
// the first that does not apply, or what the parser did not understand,
// is the error.
func (e *tableEdit) createElements(s *createTableStmt) error {
	for _, el := range s.elems {
		if el.constraint != nil {
			if err := e.constraint(*el.constraint); err != nil {
				return err
			}
			continue
		}
		if e.column(el.column.def.Name) != nil {
			return fmt.Errorf("column %s is defined twice", el.column.def.Name)
		}
		if err := e.addColumn(*el.column); err != nil {
			return err
		}
	}
	return s.err
}

func (c *Catalog) alterTable(s *alterTableStmt) (*outcome, error) {
	if !c.selected(s.name) {
		return nil, nil
	}
	o := &outcome{tag: "ALTER TABLE"}
	old := c.tables[s.name]
	if old == nil {
		o.unsupportedf("%s: decant has no definition of the table", s.name)
		return o, nil
	}
	e := c.edit(old)
	e.subcommands(s.cmds, o)
	return o, c.commit(o, e, s.name)
}

func (c *Catalog) moveTable(s *moveTableStmt) (*outcome, error) {
	o := &outcome{tag: "ALTER TABLE"}
	if s.err != nil {
		if c.selected(s.from) {
			o.unsupportedf("%s: %v", s.from, s.err)
		}
		return o, nil
	}
	return o, c.renameTable(o, s.from, s.to)
}

// renameTables applies the renames read; what ended the list is reported
// once a rename was read, or when the table of the one it ended is
// selected.
func (c *Catalog) renameTables(s *renameTablesStmt) (*outcome, error) {
	o := &outcome{tag: "ALTER TABLE"}
	for _, r := range s.pairs {
		if err := c.renameTable(o, r.from, r.to); err != nil {
			return nil, err
		}
	}
	if s.err != nil && (len(s.pairs) > 0 || c.selected(s.from)) {
		o.unsupportedf("RENAME TABLE: %v", s.err)
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

func (c *Catalog) dropTables(s *dropTablesStmt) *outcome {
	o := &outcome{tag: "DROP TABLE"}
	for _, name := range s.names {
		if def := c.tables[name]; def != nil {
			o.dropped = append(o.dropped, source.DroppedTable{OID: def.OID, Name: name})
			delete(c.tables, name)
		}
	}
	if s.err != nil {
		o.unsupportedf("DROP TABLE: %v", s.err)
	}
	return o
}

// truncate is a truncate change of the selected tables.
func (c *Catalog) truncate(s *truncateStmt) *outcome {
	o := &outcome{tag: "TRUNCATE TABLE"}
	if s.err != nil {
		o.unsupportedf("TRUNCATE: %v", s.err)
		return o
	}
	ch := source.Change{Op: source.OpTruncate, RestartIdentity: s.restart, Cascade: s.cascade}
	for _, name := range s.tables {
		if c.selected(name) {
			ch.Truncated = append(ch.Truncated, &source.Relation{Schema: name.Schema, Name: name.Name, Identity: source.IdentityFull})
		}
	}
	if len(ch.Truncated) == 0 {
		return nil
	}
	if s.optErr != nil {
		// Not knowing what else goes, do not empty the target's tables.
		o.unsupportedf("TRUNCATE of %s: %v", s.tables[0], s.optErr)
		return o
	}
	o.truncate = &ch
	return o
}

// timecapsule brings back a dropped table or old rows, none of which the
// stream carries.
func (c *Catalog) timecapsule(s *timecapsuleStmt) *outcome {
	if !c.selected(s.name) {
		return nil
	}
	o := &outcome{tag: "TIMECAPSULE TABLE"}
	o.unsupportedf("%s: TIMECAPSULE restores a table or rows the stream does not carry", s.name)
	return o
}

// --- indexes --------------------------------------------------------------

func (c *Catalog) createIndex(s *createIndexStmt) (*outcome, error) {
	if !c.selected(s.table) {
		return nil, nil
	}
	o := &outcome{tag: "CREATE INDEX"}
	label := s.name
	if label == "" {
		label = "without a name"
	}
	def := c.tables[s.table]
	if def == nil {
		o.unsupportedf("index %s on %s: decant has no definition of the table", label, s.table)
		return o, nil
	}
	e := c.edit(def)
	err := s.err
	if err == nil {
		err = e.addIndex(s.name, s.unique, s.body)
	}
	if err != nil {
		o.unsupportedf("index %s on %s: %v", label, s.table, err)
		return o, nil
	}
	return o, c.commit(o, e, s.table)
}

// dropIndexes looks for each index among the tables of its schema.
func (c *Catalog) dropIndexes(s *dropIndexesStmt) (*outcome, error) {
	o := &outcome{tag: "DROP INDEX"}
	for _, name := range s.names {
		if def := c.indexTable(name, false); def != nil {
			e := c.edit(def)
			e.def.Uniques = removeIndex(e.def.Uniques, name.Name)
			e.def.Indexes = removeIndex(e.def.Indexes, name.Name)
			if err := c.commit(o, e, def.Name); err != nil {
				return nil, err
			}
		}
	}
	if s.err != nil {
		o.unsupportedf("DROP INDEX: %v", s.err)
	}
	return o, nil
}

func (c *Catalog) alterIndex(s *alterIndexStmt) (*outcome, error) {
	def := c.indexTable(s.name, true)
	if def == nil {
		return nil, nil // another schema's index, or a replay after the rename
	}
	o := &outcome{tag: "ALTER INDEX"}
	if s.err != nil {
		o.unsupportedf("index %s of %s: %v", s.name.Name, def.Name, s.err)
		return o, nil
	}
	e := c.edit(def)
	e.renameIndex(s.name.Name, s.to)
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
	// The method is a name from the statement, quoted or not: quoted here
	// like every name, so that USING "x; ..." stays one identifier.
	fmt.Fprintf(&s, "INDEX %s ON %s USING %s %s", QuoteIdentifier(name), quoteTable(table), QuoteIdentifier(b.method), b.keys)
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
	col.Default = storedDefault(col.Default)
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

// subcommands applies ALTER TABLE's subcommands. One that is not
// understood, or does not apply, is reported; the others still apply.
func (e *tableEdit) subcommands(cmds []subcommand, o *outcome) {
	for _, cmd := range cmds {
		err := e.subcommand(cmd.do)
		if err == nil {
			err = cmd.err
		}
		if err != nil {
			o.unsupportedf("%s %s: %v", e.def.Name, verb(cmd.text), err)
		}
	}
}

// verb names a subcommand by its first word (MODIFY, ADD, DROP...): the
// rest is the source session's text, which may quote values (a DEFAULT,
// a CHECK), and the reason goes into errors and logs.
func verb(text string) string {
	if f := strings.Fields(text); len(f) > 0 {
		return strings.ToUpper(f[0])
	}
	return "subcommand"
}

// subcommand applies what one subcommand changes. A column that exists
// already is a replay of ADD COLUMN and is kept.
func (e *tableEdit) subcommand(do alterAction) error {
	switch a := do.(type) {
	case nil:
	case addColumnsCmd:
		for _, s := range a.cols {
			if e.column(s.def.Name) != nil {
				continue
			}
			if err := e.addColumn(s); err != nil {
				return err
			}
		}
	case addConstraintCmd:
		return e.constraint(a.spec)
	case dropColumnCmd:
		e.dropColumn(a.name)
	case dropConstraintCmd:
		e.dropConstraint(a.name)
	case dropKeyCmd:
		e.def.PrimaryKey, e.def.PrimaryKeyName = nil, ""
	case alterColumnCmd:
		e.alterColumn(a)
	case renameColumnCmd:
		e.renameColumn(a.from, a.to)
	case renameConstraintCmd:
		e.renameIndex(a.from, a.to)
	default:
		return fmt.Errorf("internal inconsistency: no rule for a %T", do)
	}
	return nil
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

// alterColumn changes a column. A column that is gone (a replay after a
// drop or rename) is left alone.
func (e *tableEdit) alterColumn(a alterColumnCmd) {
	col := e.column(a.name)
	if col == nil {
		return
	}
	switch a.op {
	case setType:
		col.Type, col.TypeMod, col.SQLType, col.Info = a.typ.oid, a.typ.typmod, a.typ.sql, nil
	case setDefault:
		col.Default = storedDefault(a.expr)
		if serialDefault(col.Default) {
			col.Default, col.Identity = "", 'd'
		}
	case dropDefault:
		// An identity BY DEFAULT with a default to drop is a serial column.
		col.Default = ""
		if col.Identity == 'd' {
			col.Identity = 0
		}
	case setNotNull:
		col.NotNull = true
	case dropNotNull:
		col.NotNull = false
	case addIdentity:
		if a.identity != 0 {
			col.Identity = a.identity
		}
		col.Default, col.NotNull = "", true
	case setIdentity:
		col.Identity = a.identity
	case dropIdentity:
		col.Identity = 0
	case dropExpression:
		col.Generated = ""
	}
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
