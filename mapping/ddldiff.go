package mapping

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/decant/decant/source"
)

// Schema changes: the target statements that bring a target table from
// the source definition last applied to it to the current one. The target
// ends as CreatePG or CreateMySQL would create it from the new definition,
// reached by ALTERs that keep its rows.

// Dialect is a target SQL dialect.
type Dialect uint8

const (
	DialectPostgres Dialect = iota + 1
	DialectMySQL
)

func (d Dialect) String() string {
	switch d {
	case DialectPostgres:
		return "postgres"
	case DialectMySQL:
		return "mysql"
	}
	return fmt.Sprintf("dialect(%d)", uint8(d))
}

func (d Dialect) quote(s string) string {
	if d == DialectMySQL {
		return QuoteMySQL(s)
	}
	return QuotePG(s)
}

func (d Dialect) table(t source.TableName) string {
	if d == DialectMySQL {
		return QuoteMySQLTable(t)
	}
	return QuotePGTable(t)
}

// SchemaStep is one target statement. On MySQL every step commits by
// itself, so a step carries the condition under which it still has to run,
// checked against information_schema before executing it: a replay after a
// crash then skips what is done (invariant: non-transactional DDL is
// idempotent). On PostgreSQL, whose DDL is transactional, Check is always
// the zero Precondition.
type SchemaStep struct {
	SQL   string
	Check Precondition
}

// Precondition is what must hold on the target for a step to still be
// needed.
type Precondition struct {
	Kind  PreKind
	Table source.TableName // the target table it is about (empty Schema: the connection's database)
	Name  string           // the column or index; for the primary key kinds, see PreKind
}

// PreKind is the sort of a Precondition.
type PreKind uint8

const (
	// PreNone: always run. PostgreSQL steps, and MySQL statements that are
	// idempotent themselves (MODIFY COLUMN, SET/DROP DEFAULT, IF [NOT] EXISTS).
	PreNone PreKind = iota
	PreTableMissing
	PreTableExists
	PreColumnMissing
	PreColumnExists
	PreIndexMissing
	PreIndexExists
	// PrePrimaryKeyDiffers: the table's primary key columns, in key order,
	// are not those in Name (joined by ","); a table without a primary key
	// differs. Guards ADD PRIMARY KEY.
	PrePrimaryKeyDiffers
	// PrePrimaryKeyOther: the table has a primary key and it is not the one
	// in Name ("" for none). Guards DROP PRIMARY KEY, so that a replay
	// neither drops the wanted key nor tries to drop a key already gone.
	PrePrimaryKeyOther
)

func (k PreKind) String() string {
	names := [...]string{"none", "table missing", "table exists", "column missing", "column exists",
		"index missing", "index exists", "primary key differs", "other primary key"}
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("prekind(%d)", uint8(k))
}

// UnsupportedDDL is a schema change the target cannot follow. What names
// the table, the change and why; it holds no row values. Err is the
// first *UnsafeSQLError behind it, when a check refused source text.
type UnsupportedDDL struct {
	What string
	Err  error
}

func (e *UnsupportedDDL) Error() string { return "unsupported schema change: " + e.What }

func (e *UnsupportedDDL) Unwrap() error { return e.Err }

// SchemaChange returns the target statements that turn the target table of
// prev (named target) into that of next (named nextTarget; the two differ
// when the table is renamed or rerouted). prev is nil for a table new to
// the target, next nil for a dropped one. rules are the table's column
// renames and exclusions, applied to each side by its own column names, as
// NewPlan applies them to the rows that follow.
//
// Columns are matched by attnum, so a renamed column keeps its data;
// indexes by their source name. Steps come in an order that works: rename
// the table, drop indexes, drop columns, rename columns, drop the primary
// key, add columns, alter columns, add the primary key, create indexes
// (on MySQL, AUTO_INCREMENT comes off before its key is dropped and goes
// on after its key is added).
//
// A change the target cannot express gives an *UnsupportedDDL error; the
// steps returned with it still carry every other change, for a policy that
// applies them. notes tell what is carried over only in part.
func SchemaChange(d Dialect, prev, next *source.TableDef, target, nextTarget source.TableName, rules ColumnRules) ([]SchemaStep, []string, error) {
	if d != DialectPostgres && d != DialectMySQL {
		return nil, nil, fmt.Errorf("schema change: unknown target dialect %s", d)
	}
	switch {
	case prev == nil && next == nil:
		return nil, nil, nil
	case prev == nil:
		return createSteps(d, next, nextTarget, rules)
	case next == nil:
		return []SchemaStep{dropTableStep(d, target)}, nil, nil
	case prev.OID != 0 && next.OID != 0 && prev.OID != next.OID:
		// Another table now has the name: replace, do not alter.
		steps, notes, err := createSteps(d, next, nextTarget, rules)
		return append([]SchemaStep{dropTableStep(d, target)}, steps...), notes, err
	}
	t, err := newTableDiff(d, prev, next, target, nextTarget, rules)
	if err != nil {
		return nil, nil, err
	}
	t.renameTable()
	t.indexes()
	if err := t.columns(); err != nil {
		return nil, nil, err
	}
	t.primaryKey()
	return t.result()
}

// TableChange is what one table needs for a schema change: the target
// statements (or Err, an *UnsupportedDDL when the target cannot follow)
// and the definition to store from now on (nil: the table was dropped).
type TableChange struct {
	Table source.TableName // the source table, as named before the change
	OID   uint32
	Def   *source.TableDef
	Steps []SchemaStep
	Notes []string
	Err   error
}

// SchemaChanges works out a DDL event table by table, from the
// definitions last applied (by source OID): the changed and created
// tables, then the dropped ones that were replicated.
func SchemaChanges(d Dialect, applied map[uint32]*source.TableDef, ddl *source.DDL, router *Router, rules map[source.TableName]ColumnRules) []TableChange {
	var out []TableChange
	for _, next := range ddl.Tables {
		prev := applied[next.OID]
		from, to := router.Route(next.Name), router.Route(next.Name)
		if prev != nil {
			from = router.Route(prev.Name)
		}
		c := TableChange{Table: next.Name, OID: next.OID, Def: next}
		c.Steps, c.Notes, c.Err = SchemaChange(d, prev, next, from, to, rules[next.Name])
		out = append(out, c)
	}
	for _, dropped := range ddl.Dropped {
		prev := applied[dropped.OID]
		if prev == nil {
			continue // not a replicated table
		}
		c := TableChange{Table: prev.Name, OID: dropped.OID}
		c.Steps, c.Notes, c.Err = SchemaChange(d, prev, nil, router.Route(prev.Name), source.TableName{}, rules[prev.Name])
		out = append(out, c)
	}
	return out
}

// createSteps creates a table with CreatePG or CreateMySQL.
func createSteps(d Dialect, def *source.TableDef, target source.TableName, rules ColumnRules) ([]SchemaStep, []string, error) {
	var steps []SchemaStep
	if d == DialectPostgres {
		// An *UnsupportedDDL comes with the statements CreatePG could
		// still make (none when a column was refused, all but the
		// refused indexes otherwise).
		t, err := CreatePG(def, target, rules)
		var u *UnsupportedDDL
		if err != nil && !errors.As(err, &u) {
			return nil, nil, err
		}
		for _, s := range append(t.Table, t.Indexes...) {
			steps = append(steps, SchemaStep{SQL: s})
		}
		return steps, t.Notes, err
	}
	t, err := CreateMySQL(def, target, rules)
	if err != nil {
		return nil, t.Notes, err
	}
	for _, s := range t.Table {
		steps = append(steps, SchemaStep{SQL: s, Check: Precondition{Kind: PreTableMissing, Table: target}})
	}
	// CreateMySQL puts the plain indexes it can create in t.Indexes, in
	// order; diffIndexes finds the same ones.
	var names []string
	for _, ix := range diffIndexes(d, newDiffSide(def, target, rules, false)) {
		if !ix.unique && ix.why == "" {
			names = append(names, ix.target)
		}
	}
	if len(names) != len(t.Indexes) {
		return nil, nil, fmt.Errorf("create %s: %d indexes to guard, %d statements", targetText(target), len(names), len(t.Indexes))
	}
	for i, s := range t.Indexes {
		steps = append(steps, SchemaStep{SQL: s, Check: Precondition{Kind: PreIndexMissing, Table: target, Name: names[i]}})
	}
	return steps, t.Notes, nil
}

func dropTableStep(d Dialect, target source.TableName) SchemaStep {
	return SchemaStep{SQL: "DROP TABLE IF EXISTS " + d.table(target)}
}

// diffKey identifies a column across a change: its attnum, or its name
// when a side lacks attnums (definitions stored before they were kept).
type diffKey struct {
	attnum int16
	name   string
}

// diffSide is one side of a change: the source definition and what of it
// is on the target.
type diffSide struct {
	def    *source.TableDef
	target source.TableName
	names  map[string]string            // written source column → target name
	cols   map[diffKey]source.ColumnDef // written columns
	order  []diffKey                    // written columns in source order
	keyOf  map[string]diffKey           // every column's key by source name
	keyed  map[string]int               // keyColumns of def
}

func newDiffSide(def *source.TableDef, target source.TableName, rules ColumnRules, byAttnum bool) diffSide {
	s := diffSide{def: def, target: target, cols: map[diffKey]source.ColumnDef{}, keyOf: map[string]diffKey{}, keyed: keyColumns(def)}
	var cols []source.ColumnDef
	cols, s.names = columnDefs(def, rules)
	for _, c := range def.Columns {
		s.keyOf[c.Name] = diffKey{name: c.Name}
		if byAttnum {
			s.keyOf[c.Name] = diffKey{attnum: c.Attnum}
		}
	}
	for _, c := range cols {
		k := s.keyOf[c.Name]
		s.cols[k] = c
		s.order = append(s.order, k)
	}
	return s
}

func (s diffSide) keys(cols []string) []diffKey {
	out := make([]diffKey, len(cols))
	for i, c := range cols {
		out[i] = s.keyOf[c]
	}
	return out
}

// Phases of a change, in the order their steps run.
const (
	phaseTable = iota
	phaseDropIndex
	phaseDropColumn
	phaseRenameColumn
	phaseStripAuto // MySQL: AUTO_INCREMENT off before its key is dropped
	phaseDropKey
	phaseAddColumn
	phaseAlterColumn
	phaseAddKey
	phaseAddAuto // MySQL: AUTO_INCREMENT on once its key exists
	phaseCreateIndex
	phaseCount
)

// tableDiff collects the steps of one table's change by phase.
type tableDiff struct {
	d           Dialect
	prev, next  diffSide
	tbl         source.TableName // the target table once renamed
	pk, nextPK  []string         // target column names
	pkChanged   bool             // in columns or deferral
	steps       [phaseCount][]SchemaStep
	notes       []string
	unsupported []string
	refusedSQL  error // the first *UnsafeSQLError among unsupported
}

func newTableDiff(d Dialect, prev, next *source.TableDef, target, nextTarget source.TableName, rules ColumnRules) (*tableDiff, error) {
	byAttnum := hasAttnums(prev) && hasAttnums(next)
	t := &tableDiff{d: d, tbl: nextTarget,
		prev: newDiffSide(prev, target, rules, byAttnum), next: newDiffSide(next, nextTarget, rules, byAttnum)}
	var ok bool
	if t.pk, ok = targetColumns(prev.PrimaryKey, t.prev.names); !ok {
		return nil, fmt.Errorf("source table %s: a primary key column is excluded", prev.Name)
	}
	if t.nextPK, ok = targetColumns(next.PrimaryKey, t.next.names); !ok {
		return nil, fmt.Errorf("source table %s: a primary key column is excluded", next.Name)
	}
	t.pkChanged = !slices.Equal(t.prev.keys(prev.PrimaryKey), t.next.keys(next.PrimaryKey)) ||
		len(next.PrimaryKey) > 0 && prev.PrimaryKeyDeferral != next.PrimaryKeyDeferral
	if !byAttnum && t.dropsAndAdds() {
		return nil, &UnsupportedDDL{What: fmt.Sprintf("table %s: columns are both dropped and added, and without attnums in the stored definition a renamed column cannot be told from a dropped one", next.Name)}
	}
	return t, nil
}

func hasAttnums(def *source.TableDef) bool {
	return !slices.ContainsFunc(def.Columns, func(c source.ColumnDef) bool { return c.Attnum == 0 })
}

// dropsAndAdds reports whether the change drops some columns and adds
// others. Matched by name, a renamed column looks like that, and dropping
// and adding it would lose its data.
func (t *tableDiff) dropsAndAdds() bool {
	gone := slices.ContainsFunc(t.prev.order, func(k diffKey) bool { _, ok := t.next.cols[k]; return !ok })
	added := slices.ContainsFunc(t.next.order, func(k diffKey) bool { _, ok := t.prev.cols[k]; return !ok })
	return gone && added
}

// add appends a step; the check is kept on MySQL only.
func (t *tableDiff) add(phase int, sql string, kind PreKind, name string) {
	s := SchemaStep{SQL: sql}
	if t.d == DialectMySQL && kind != PreNone {
		s.Check = Precondition{Kind: kind, Table: t.tbl, Name: name}
	}
	t.steps[phase] = append(t.steps[phase], s)
}

func (t *tableDiff) alter(phase int, clause string, kind PreKind, name string) {
	t.add(phase, "ALTER TABLE "+t.d.table(t.tbl)+" "+clause, kind, name)
}

// refused records a step whose source text a check refused, and reports
// whether err is such a refusal (the step is then left out).
func (t *tableDiff) refused(err error) bool {
	var u *UnsafeSQLError
	if !errors.As(err, &u) {
		return false
	}
	t.unsupported = append(t.unsupported, u.step())
	if t.refusedSQL == nil {
		t.refusedSQL = u
	}
	return true
}

func (t *tableDiff) result() ([]SchemaStep, []string, error) {
	var steps []SchemaStep
	for _, s := range t.steps {
		steps = append(steps, s...)
	}
	if len(t.unsupported) > 0 {
		return steps, t.notes, &UnsupportedDDL{What: fmt.Sprintf("table %s: %s", t.next.def.Name, strings.Join(t.unsupported, "; ")), Err: t.refusedSQL}
	}
	return steps, t.notes, nil
}

// renameTable renames or moves the target table when its routed name
// changes.
func (t *tableDiff) renameTable() {
	from, to := t.prev.target, t.next.target
	if from == to {
		return
	}
	if t.d == DialectMySQL {
		t.steps[phaseTable] = append(t.steps[phaseTable], SchemaStep{
			SQL:   "RENAME TABLE " + QuoteMySQLTable(from) + " TO " + QuoteMySQLTable(to),
			Check: Precondition{Kind: PreTableExists, Table: from}})
		return
	}
	if from.Name != to.Name {
		t.add(phaseTable, "ALTER TABLE "+QuotePGTable(from)+" RENAME TO "+QuotePG(to.Name), PreNone, "")
	}
	if from.Schema != to.Schema {
		t.add(phaseTable, "CREATE SCHEMA IF NOT EXISTS "+QuotePG(to.Schema), PreNone, "")
		t.add(phaseTable, "ALTER TABLE "+QuotePGTable(source.TableName{Schema: from.Schema, Name: to.Name})+" SET SCHEMA "+QuotePG(to.Schema), PreNone, "")
	}
}

// diffIndex is a source index as one side of a change sees it.
type diffIndex struct {
	source   string // the source's name
	target   string // the name on the target (indexName)
	unique   bool
	deferral source.Deferral // a unique constraint's
	keys     []diffKey
	cols     []string // target column names
	expr     string
	why      string // why it is not on the target; "" when it is
}

func (a diffIndex) same(b diffIndex) bool {
	return a.unique == b.unique && a.deferral == b.deferral && a.expr == b.expr && slices.Equal(a.keys, b.keys) && (a.why == "") == (b.why == "")
}

// diffIndexes lists a side's unique then plain indexes and whether the
// target has them, by the rules of CreatePG and CreateMySQL.
func diffIndexes(d Dialect, s diffSide) []diffIndex {
	var out []diffIndex
	for _, group := range []struct {
		idx    []source.IndexDef
		unique bool
	}{{s.def.Uniques, true}, {s.def.Indexes, false}} {
		for _, ix := range group.idx {
			x := diffIndex{source: ix.Name, target: indexName(s.def, s.target, ix.Name), unique: group.unique, deferral: ix.Deferral, expr: ix.Expr}
			var ok bool
			switch {
			case ix.Expr != "" && d == DialectMySQL:
				x.why = fmt.Sprintf("index %s is an expression, partial or non-btree index and is not created: %s", ix.Name, ix.Expr)
			case ix.Expr != "" && !s.sameNames():
				x.why = fmt.Sprintf("index %s (%s) not created: the table or its columns are renamed on the target", ix.Name, ix.Expr)
			case ix.Expr == "":
				x.keys = s.keys(ix.Columns)
				if x.cols, ok = targetColumns(ix.Columns, s.names); !ok {
					x.why = fmt.Sprintf("index %s covers an excluded column and is not created", ix.Name)
				}
				if d == DialectMySQL { // as CreateMySQL
					x.cols = distinctColumns(x.cols)
				}
			}
			out = append(out, x)
		}
	}
	return out
}

// sameNames reports whether the target table and its columns have the
// source's names, so that an index definition can run verbatim.
func (s diffSide) sameNames() bool {
	if s.target != s.def.Name || len(s.names) != len(s.def.Columns) {
		return false
	}
	for from, to := range s.names {
		if from != to {
			return false
		}
	}
	return true
}

// indexes drops the indexes that are gone or changed, renames those whose
// target name changed with the table's, and creates new and changed ones.
func (t *tableDiff) indexes() {
	prev, next := diffIndexes(t.d, t.prev), diffIndexes(t.d, t.next)
	find := func(list []diffIndex, name string) (diffIndex, bool) {
		i := slices.IndexFunc(list, func(x diffIndex) bool { return x.source == name })
		if i < 0 {
			return diffIndex{}, false
		}
		return list[i], true
	}
	var renames []diffIndex
	for _, p := range prev {
		n, ok := find(next, p.source)
		switch {
		case p.why != "":
		case !ok || !p.same(n):
			t.dropIndex(p)
		case p.target != n.target:
			renames = append(renames, p)
		}
	}
	for _, p := range renames { // after the drops, which may free a name
		n, _ := find(next, p.source)
		t.renameIndex(p.target, n.target)
	}
	for _, n := range next {
		p, ok := find(prev, n.source)
		switch {
		case ok && p.same(n):
		case n.why != "":
			t.notes = append(t.notes, n.why)
		default:
			t.createIndex(n)
		}
	}
}

func (t *tableDiff) dropIndex(x diffIndex) {
	if t.d == DialectMySQL {
		t.add(phaseDropIndex, "DROP INDEX "+QuoteMySQL(x.target)+" ON "+QuoteMySQLTable(t.tbl), PreIndexExists, x.target)
		return
	}
	if x.unique { // a unique constraint of a target table decant did not create
		t.alter(phaseDropIndex, "DROP CONSTRAINT IF EXISTS "+QuotePG(x.target), PreNone, "")
	}
	t.add(phaseDropIndex, "DROP INDEX IF EXISTS "+QuotePGTable(source.TableName{Schema: t.tbl.Schema, Name: x.target}), PreNone, "")
}

func (t *tableDiff) renameIndex(from, to string) {
	if t.d == DialectMySQL {
		t.alter(phaseDropIndex, "RENAME INDEX "+QuoteMySQL(from)+" TO "+QuoteMySQL(to), PreIndexExists, from)
		return
	}
	t.add(phaseDropIndex, "ALTER INDEX "+QuotePGTable(source.TableName{Schema: t.tbl.Schema, Name: from})+" RENAME TO "+QuotePG(to), PreNone, "")
}

func (t *tableDiff) createIndex(x diffIndex) {
	if x.expr != "" { // PostgreSQL, with the source's names
		if !t.refused(checkIndexDef(t.next.def.Name, x.source, x.expr)) {
			t.add(phaseCreateIndex, x.expr, PreNone, "")
		}
		return
	}
	if x.unique && x.deferral.Deferrable() {
		if t.d == DialectPostgres { // as CreatePG: only a constraint can be deferrable
			t.alter(phaseCreateIndex, "ADD CONSTRAINT "+QuotePG(x.target)+" UNIQUE ("+joinQuoted(x.cols, QuotePG)+")"+pgDeferral(x.deferral), PreNone, "")
			return
		}
		t.notes = append(t.notes, deferredNote("unique constraint "+x.source, x.target, x.cols))
		x.unique = false // as CreateMySQL: a plain index
	}
	kind := "INDEX "
	if x.unique {
		kind = "UNIQUE INDEX "
	}
	if t.d == DialectPostgres {
		kind += "IF NOT EXISTS "
	}
	t.add(phaseCreateIndex, "CREATE "+kind+t.d.quote(x.target)+" ON "+t.d.table(t.tbl)+" ("+joinQuoted(x.cols, t.d.quote)+")",
		PreIndexMissing, x.target)
}

// primaryKey drops the old primary key and adds the new one. PostgreSQL
// needs the key constraint's name, which the definition lacks (and which
// a rename of the table does not change), so a DO block looks it up. On
// MySQL a deferrable key is a plain index, as CreateMySQL makes it.
func (t *tableDiff) primaryKey() {
	prevIndex, nextIndex := t.prev.def.PrimaryKeyDeferral.Deferrable(), t.next.def.PrimaryKeyDeferral.Deferrable()
	prevName := indexName(t.prev.def, t.prev.target, primaryKeyName(t.prev.def))
	nextName := indexName(t.next.def, t.next.target, primaryKeyName(t.next.def))
	if !t.pkChanged {
		if t.d == DialectMySQL && len(t.pk) > 0 && prevIndex && prevName != nextName {
			t.renameIndex(prevName, nextName) // the table was renamed
		}
		return
	}
	if t.d == DialectPostgres {
		if len(t.pk) > 0 {
			t.add(phaseDropKey, dropPrimaryKeyPG(t.tbl), PreNone, "")
		}
		if len(t.nextPK) > 0 {
			t.alter(phaseAddKey, "ADD PRIMARY KEY ("+joinQuoted(t.nextPK, QuotePG)+")"+pgDeferral(t.next.def.PrimaryKeyDeferral), PreNone, "")
		}
		return
	}
	switch {
	case len(t.pk) > 0 && prevIndex:
		t.add(phaseDropKey, "DROP INDEX "+QuoteMySQL(prevName)+" ON "+QuoteMySQLTable(t.tbl), PreIndexExists, prevName)
	case len(t.pk) > 0:
		wanted := ""
		if !nextIndex {
			wanted = strings.Join(t.nextPK, ",")
		}
		t.alter(phaseDropKey, "DROP PRIMARY KEY", PrePrimaryKeyOther, wanted)
	}
	switch {
	case len(t.nextPK) > 0 && nextIndex:
		t.notes = append(t.notes, deferredNote("primary key", nextName, t.nextPK))
		t.add(phaseAddKey, "CREATE INDEX "+QuoteMySQL(nextName)+" ON "+QuoteMySQLTable(t.tbl)+" ("+joinQuoted(t.nextPK, QuoteMySQL)+")", PreIndexMissing, nextName)
	case len(t.nextPK) > 0:
		t.alter(phaseAddKey, "ADD PRIMARY KEY ("+joinQuoted(t.nextPK, QuoteMySQL)+")", PrePrimaryKeyDiffers, strings.Join(t.nextPK, ","))
	}
}

// dropPrimaryKeyPG drops a table's primary key, whatever its name.
func dropPrimaryKeyPG(table source.TableName) string {
	body := fmt.Sprintf(`
DECLARE
	pk name;
BEGIN
	SELECT conname INTO pk FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p';
	IF FOUND THEN
		EXECUTE format('ALTER TABLE %%I.%%I DROP CONSTRAINT %%I', %s, %s, pk);
	END IF;
END
`, quoteLiteral(QuotePGTable(table), false), quoteLiteral(table.Schema, false), quoteLiteral(table.Name, false))
	tag := "$decant$"
	for i := 0; strings.Contains(body, tag); i++ {
		tag = fmt.Sprintf("$decant%d$", i)
	}
	return "DO " + tag + body + tag
}

// columns drops, renames, adds and alters columns.
func (t *tableDiff) columns() error {
	for _, k := range t.prev.order {
		if _, ok := t.next.cols[k]; !ok {
			name := t.prev.names[t.prev.cols[k].Name]
			t.alter(phaseDropColumn, "DROP COLUMN "+t.d.quote(name), PreColumnExists, name)
		}
	}
	t.renameColumns()
	for _, k := range t.next.order {
		n := t.next.cols[k]
		p, ok := t.prev.cols[k]
		var err error
		switch {
		case !ok:
			err = t.addColumn(n)
		case t.d == DialectMySQL:
			err = t.alterMySQL(p, n)
		default:
			t.alterPG(p, n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// renameColumns renames columns whose target name changed, each after
// the one that frees its new name; a cycle of renames is unsupported.
func (t *tableDiff) renameColumns() {
	pending := map[string]string{} // old target name → new
	for _, k := range t.next.order {
		if p, ok := t.prev.cols[k]; ok {
			if from, to := t.prev.names[p.Name], t.next.names[t.next.cols[k].Name]; from != to {
				pending[from] = to
			}
		}
	}
	for len(pending) > 0 {
		var ready []string
		for from, to := range pending {
			if _, taken := pending[to]; !taken {
				ready = append(ready, from)
			}
		}
		if len(ready) == 0 {
			t.unsupported = append(t.unsupported, "columns swap names in a cycle of renames")
			return
		}
		slices.Sort(ready)
		for _, from := range ready {
			t.alter(phaseRenameColumn, "RENAME COLUMN "+t.d.quote(from)+" TO "+t.d.quote(pending[from]), PreColumnExists, from)
			delete(pending, from)
		}
	}
}

// addColumn adds a column as CreatePG or CreateMySQL would define it. On
// MySQL AUTO_INCREMENT waits until the column is in the primary key.
func (t *tableDiff) addColumn(c source.ColumnDef) error {
	name := t.next.names[c.Name]
	if t.d == DialectPostgres {
		if !t.refused(checkColumnPG(t.next.def.Name, c)) {
			t.alter(phaseAddColumn, "ADD COLUMN "+pgColumnSpec(c, name), PreNone, "")
		}
		return nil
	}
	if t.refused(checkColumnMySQL(t.next.def.Name, c)) {
		return nil
	}
	spec, err := t.next.mysqlSpec(c)
	if err != nil {
		return err
	}
	if spec.note != "" {
		t.notes = append(t.notes, spec.note)
	}
	auto := spec.auto
	spec.auto = false
	t.alter(phaseAddColumn, "ADD COLUMN "+spec.sql(name), PreColumnMissing, name)
	if auto {
		spec.auto = true
		t.alter(phaseAddAuto, "MODIFY COLUMN "+spec.sql(name), PreNone, "")
	}
	return nil
}

// pgColumnSpec is a column as CreatePG defines it.
func pgColumnSpec(c source.ColumnDef, name string) string {
	line := QuotePG(name) + " " + c.SQLType
	switch {
	case c.Generated != "":
		line += " GENERATED ALWAYS AS (" + c.Generated + ") STORED"
	case c.Identity != 0:
		line += " GENERATED " + pgIdentity(c.Identity) + " AS IDENTITY"
	case c.Default != "":
		line += " DEFAULT " + c.Default
	}
	if c.NotNull {
		line += " NOT NULL"
	}
	return line
}

func pgIdentity(kind byte) string {
	if kind == 'a' {
		return "ALWAYS"
	}
	return "BY DEFAULT"
}

// alterPG alters a PostgreSQL column in an order that works: first what
// the column no longer has (generation, identity, a default that would not
// survive the new type), then the type and nullability, then the new
// default and identity (which needs NOT NULL and no default).
func (t *tableDiff) alterPG(p, n source.ColumnDef) {
	name := t.next.names[n.Name]
	col := "ALTER COLUMN " + QuotePG(name) + " "
	typeChanged := p.SQLType != n.SQLType || p.Type != n.Type || p.TypeMod != n.TypeMod
	t.dropPG(p, n, col, typeChanged)
	if typeChanged && !t.refused(checkType(t.next.def.Name, n.Name, n.SQLType)) {
		using := ""
		if n.Generated == "" { // a generated column takes no USING
			using = " USING " + QuotePG(name) + "::" + n.SQLType
		}
		t.alter(phaseAlterColumn, col+"TYPE "+n.SQLType+using, PreNone, "")
	}
	if p.NotNull != n.NotNull {
		nullability := "DROP NOT NULL"
		if n.NotNull {
			nullability = "SET NOT NULL"
		}
		t.alter(phaseAlterColumn, col+nullability, PreNone, "")
	}
	if n.Default != "" && p.Default != n.Default && !t.refused(checkDefault(t.next.def.Name, n)) {
		t.alter(phaseAlterColumn, col+"SET DEFAULT "+n.Default, PreNone, "")
	}
	switch {
	case n.Identity == 0 || p.Identity == n.Identity:
	case p.Identity == 0:
		t.alter(phaseAlterColumn, col+"ADD GENERATED "+pgIdentity(n.Identity)+" AS IDENTITY", PreNone, "")
	default:
		t.alter(phaseAlterColumn, col+"SET GENERATED "+pgIdentity(n.Identity), PreNone, "")
	}
}

// dropPG removes from a PostgreSQL column what its new definition lacks.
// A stored generated column can become a plain one, not the reverse, nor
// take another expression.
func (t *tableDiff) dropPG(p, n source.ColumnDef, col string, typeChanged bool) {
	switch {
	case p.Generated == n.Generated:
	case n.Generated == "":
		t.alter(phaseAlterColumn, col+"DROP EXPRESSION", PreNone, "")
	default:
		t.unsupported = append(t.unsupported, fmt.Sprintf("column %s: the generation expression changed from (%s) to (%s) and a stored generated column cannot be changed in place",
			n.Name, p.Generated, n.Generated))
	}
	if p.Identity != 0 && n.Identity == 0 {
		t.alter(phaseAlterColumn, col+"DROP IDENTITY IF EXISTS", PreNone, "")
	}
	if p.Default != "" && p.Default != n.Default && (n.Default == "" || typeChanged) {
		t.alter(phaseAlterColumn, col+"DROP DEFAULT", PreNone, "")
	}
}

// mysqlColumnSpec is a column as CreateMySQL defines it.
type mysqlColumnSpec struct {
	typ     string
	notNull bool
	auto    bool   // AUTO_INCREMENT
	def     string // the translated default; "" for none
	note    string // what of the source column is not carried over
}

func (s mysqlColumnSpec) sql(name string) string {
	line := QuoteMySQL(name) + " " + s.typ
	if s.notNull {
		line += " NOT NULL"
	}
	if s.auto {
		line += " AUTO_INCREMENT"
	} else if s.def != "" {
		line += " DEFAULT " + s.def
	}
	return line
}

func (s diffSide) mysqlSpec(c source.ColumnDef) (mysqlColumnSpec, error) {
	typ, err := MySQLType(c.Type, c.TypeMod, c.Info)
	if err != nil {
		return mysqlColumnSpec{}, fmt.Errorf("source table %s column %s: %w", s.def.Name, c.Name, err)
	}
	if parts, ok := s.keyed[c.Name]; ok {
		typ = keyableMySQLType(typ, parts)
	}
	spec := mysqlColumnSpec{typ: typ, notNull: c.NotNull}
	switch {
	case c.Generated != "":
		spec.note = fmt.Sprintf("column %s is generated on the source (%s); on the target it is a plain column filled with the source's values", c.Name, c.Generated)
	case c.Identity != 0:
		if spec.auto = autoIncrementable(s.def, c, typ); !spec.auto {
			spec.note = fmt.Sprintf("column %s is an identity or serial column on the source; MySQL allows AUTO_INCREMENT only on the first column of a key, so it is a plain column", c.Name)
		}
	case c.Default != "":
		var ok bool
		if spec.def, ok = mysqlDefault(c.Default, typ); !ok {
			spec.note = fmt.Sprintf("default of column %s (%s) has no MySQL equivalent and is left out", c.Name, c.Default)
		}
	}
	return spec, nil
}

// alterMySQL brings a MySQL column from its old definition to the new one
// with a MODIFY that restates all of it (MySQL drops what MODIFY leaves
// out), or SET/DROP DEFAULT when only a literal default changes. An
// AUTO_INCREMENT column loses the attribute before its key is dropped
// (MySQL refuses an AUTO_INCREMENT column outside a key) and gains it once
// its key exists.
func (t *tableDiff) alterMySQL(p, n source.ColumnDef) error {
	name := t.next.names[n.Name]
	cur, err := t.prev.mysqlSpec(p)
	if err != nil {
		return err
	}
	if t.refused(checkColumnMySQL(t.next.def.Name, n)) {
		return nil
	}
	to, err := t.next.mysqlSpec(n)
	if err != nil {
		return err
	}
	if to.note != "" && to.note != cur.note {
		t.notes = append(t.notes, to.note)
	}
	if cur.auto && (!to.auto || t.pkChanged) {
		cur.auto = false
		t.alter(phaseStripAuto, "MODIFY COLUMN "+cur.sql(name), PreNone, "")
	}
	switch {
	case to.auto && !cur.auto:
		t.alter(phaseAddAuto, "MODIFY COLUMN "+to.sql(name), PreNone, "")
	case cur.typ != to.typ || cur.notNull != to.notNull || cur.auto != to.auto || !isMySQLLiteral(to.def) && cur.def != to.def:
		t.alter(phaseAlterColumn, "MODIFY COLUMN "+to.sql(name), PreNone, "")
	case cur.def == to.def:
	case to.def == "":
		t.alter(phaseAlterColumn, "ALTER COLUMN "+QuoteMySQL(name)+" DROP DEFAULT", PreNone, "")
	default:
		t.alter(phaseAlterColumn, "ALTER COLUMN "+QuoteMySQL(name)+" SET DEFAULT "+to.def, PreNone, "")
	}
	return nil
}

// isMySQLLiteral tells a default that ALTER COLUMN SET DEFAULT accepts
// everywhere: a literal, not an expression or CURRENT_TIMESTAMP.
func isMySQLLiteral(def string) bool {
	return !strings.HasPrefix(def, "(") && !strings.HasPrefix(def, "CURRENT_TIMESTAMP")
}
