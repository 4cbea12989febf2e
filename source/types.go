package source

import "slices"

// TypeKind is what sort of type a column has.
type TypeKind uint8

const (
	KindBase       TypeKind = iota // a built-in scalar type
	KindEnum                       // Labels holds the values
	KindDomain                     // Base (with BaseMod) is the underlying type
	KindComposite                  // Fields holds the attributes
	KindArray                      // Elem is the element type
	KindRange                      // Elem is the subtype
	KindMultirange                 // Elem is the subtype
)

// Type describes a column's type well enough to map it to another
// database. Built-in types are known by OID alone (mapping has their
// table); readers fill a Type for user-defined ones, which the stream only
// names by OID.
type Type struct {
	OID     uint32
	Name    string // schema-qualified unless in pg_catalog: "int4", "public.mood"
	Kind    TypeKind
	Elem    *Type
	Base    *Type
	BaseMod int32
	Labels  []string
	Fields  []Field
}

// Field is one attribute of a composite type.
type Field struct {
	Name    string
	Type    *Type
	TypeMod int32
}

// TableDef is a source table's definition, read from the source catalog,
// from which a target table can be created.
type TableDef struct {
	OID     uint32 // the source's table OID (0 when unknown)
	Name    TableName
	Columns []ColumnDef
	// PrimaryKey lists column names in key order; empty without one.
	PrimaryKey []string
	// PrimaryKeyName is the primary key constraint's name when known.
	PrimaryKeyName string
	// PrimaryKeyDeferral tells whether the primary key is DEFERRABLE.
	PrimaryKeyDeferral Deferral
	Uniques            []IndexDef // unique constraints and unique indexes
	Indexes            []IndexDef // other plain indexes
}

// Deferral is when a primary key or unique constraint checks its
// uniqueness (pg_constraint's condeferrable and condeferred). A unique
// index that is not a constraint is NotDeferrable. PostgreSQL never takes
// a deferrable key as the replica identity: a table whose key is
// deferrable replicates with REPLICA IDENTITY FULL (or USING INDEX of
// another, immediate, unique index).
type Deferral uint8

const (
	NotDeferrable       Deferral = iota // checked row by row
	DeferrableImmediate                 // DEFERRABLE INITIALLY IMMEDIATE
	DeferrableDeferred                  // DEFERRABLE INITIALLY DEFERRED
)

// Deferrable reports whether the check may wait for the commit.
func (d Deferral) Deferrable() bool { return d != NotDeferrable }

// ColumnDef is one column of a TableDef.
type ColumnDef struct {
	Attnum  int16 // the source's attribute number: a renamed column keeps it
	Name    string
	Type    uint32 // OID
	TypeMod int32
	Info    *Type  // set for user-defined types
	SQLType string // the source's own spelling: format_type(atttypid, atttypmod)
	NotNull bool
	// Default is the default expression as the source prints it; "" for
	// none. Identity and serial columns have Identity set instead.
	Default string
	// Identity is 'a' (ALWAYS), 'd' (BY DEFAULT, also serial/bigserial) or 0.
	Identity byte
	// Generated is the expression of a stored generated column; "" else.
	Generated string
}

// IndexDef is an index over plain columns. Expression and partial indexes
// have Expr set to their definition and no Columns.
type IndexDef struct {
	Name    string
	Columns []string
	Expr    string
	// Deferral: a unique constraint's (Uniques only); a deferrable one has
	// Columns, never Expr.
	Deferral Deferral
}

// PublishedRelation is the relation pgoutput announces for the table: its
// columns without stored generated ones, which PostgreSQL 15 does not
// publish (so streaming never writes them either).
func (d *TableDef) PublishedRelation() *Relation {
	t := *d
	t.Columns = nil
	for _, c := range d.Columns {
		if c.Generated == "" {
			t.Columns = append(t.Columns, c)
		}
	}
	return t.Relation()
}

// Relation is the table as a stream would announce it: every column, the
// primary key (or else the first unique index over NOT NULL columns) as
// the replica identity, FULL identity without either. Deferrable keys are
// passed over, as PostgreSQL passes them over for the identity.
func (d *TableDef) Relation() *Relation {
	var key []string
	if !d.PrimaryKeyDeferral.Deferrable() {
		key = d.PrimaryKey
	}
	for _, u := range d.Uniques {
		if len(key) == 0 && len(u.Columns) > 0 && !u.Deferral.Deferrable() && !slices.ContainsFunc(u.Columns, func(name string) bool {
			i := slices.IndexFunc(d.Columns, func(c ColumnDef) bool { return c.Name == name })
			return i < 0 || !d.Columns[i].NotNull
		}) {
			key = u.Columns
		}
	}
	rel := &Relation{ID: d.OID, Schema: d.Name.Schema, Name: d.Name.Name, Identity: IdentityFull}
	if len(key) > 0 {
		rel.Identity = IdentityIndex
	}
	for _, c := range d.Columns {
		rel.Columns = append(rel.Columns, Column{Name: c.Name, Type: c.Type, TypeMod: c.TypeMod, Key: slices.Contains(key, c.Name), Info: c.Info})
	}
	return rel
}
