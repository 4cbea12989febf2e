package mapping

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// dkDef is the source table
//
//	CREATE TABLE dk (id int PRIMARY KEY DEFERRABLE INITIALLY IMMEDIATE,
//		u int UNIQUE DEFERRABLE INITIALLY DEFERRED, w int UNIQUE, v text)
//	CREATE INDEX dk_v_idx ON dk (v)
func dkDef() *source.TableDef {
	return &source.TableDef{
		Name: source.TableName{Schema: "public", Name: "dk"},
		Columns: []source.ColumnDef{
			{Attnum: 1, Name: "id", Type: oidInt4, TypeMod: -1, SQLType: "integer", NotNull: true},
			{Attnum: 2, Name: "u", Type: oidInt4, TypeMod: -1, SQLType: "integer"},
			{Attnum: 3, Name: "w", Type: oidInt4, TypeMod: -1, SQLType: "integer"},
			{Attnum: 4, Name: "v", Type: oidText, TypeMod: -1, SQLType: "text"},
		},
		PrimaryKey: []string{"id"}, PrimaryKeyDeferral: source.DeferrableImmediate,
		Uniques: []source.IndexDef{
			{Name: "dk_u_key", Columns: []string{"u"}, Deferral: source.DeferrableDeferred},
			{Name: "dk_w_key", Columns: []string{"w"}},
		},
		Indexes: []source.IndexDef{{Name: "dk_v_idx", Columns: []string{"v"}}},
	}
}

func TestCreateDeferrableKeys(t *testing.T) {
	def := dkDef()
	pg, err := CreatePG(def, def.Name, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	checkDDL(t, "CreatePG table", pg.Table, []string{
		`CREATE SCHEMA IF NOT EXISTS "public"`,
		"CREATE TABLE \"public\".\"dk\" (\n\t\"id\" integer NOT NULL,\n\t\"u\" integer,\n\t\"w\" integer,\n\t\"v\" text,\n\tPRIMARY KEY (\"id\") DEFERRABLE INITIALLY IMMEDIATE\n)",
	})
	if want := `ALTER TABLE "public"."dk" ADD PRIMARY KEY ("id") DEFERRABLE INITIALLY IMMEDIATE`; pg.AddKey != want {
		t.Errorf("CreatePG AddKey:\n got %s\nwant %s", pg.AddKey, want)
	}
	checkDDL(t, "CreatePG indexes", pg.Indexes, []string{
		`ALTER TABLE "public"."dk" ADD CONSTRAINT "dk_u_key" UNIQUE ("u") DEFERRABLE INITIALLY DEFERRED`,
		`CREATE UNIQUE INDEX "dk_w_key" ON "public"."dk" ("w")`,
		`CREATE INDEX "dk_v_idx" ON "public"."dk" ("v")`,
	})
	if len(pg.Notes) != 0 {
		t.Errorf("CreatePG notes: %q", pg.Notes)
	}
	// A routed table's constraint gets the target's prefix, as its indexes.
	routed, err := CreatePG(def, source.TableName{Schema: "app", Name: "keys"}, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `ALTER TABLE "app"."keys" ADD CONSTRAINT "keys_dk_u_key" UNIQUE ("u") DEFERRABLE INITIALLY DEFERRED`; routed.Indexes[0] != want {
		t.Errorf("CreatePG routed:\n got %s\nwant %s", routed.Indexes[0], want)
	}

	my, err := CreateMySQL(def, source.TableName{Name: "dk"}, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	checkDDL(t, "CreateMySQL table", my.Table, []string{
		"CREATE TABLE IF NOT EXISTS `dk` (\n\t`id` INT NOT NULL,\n\t`u` INT,\n\t`w` INT,\n\t`v` VARCHAR(768),\n\t" +
			"KEY `dk_pkey` (`id`),\n\tKEY `dk_u_key` (`u`),\n\tUNIQUE KEY `dk_w_key` (`w`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
	})
	checkDDL(t, "CreateMySQL indexes", my.Indexes, []string{"CREATE INDEX `dk_v_idx` ON `dk` (`v`)"})
	if len(my.Notes) != 2 || !strings.Contains(my.Notes[0], "primary key (id) is DEFERRABLE") || !strings.Contains(my.Notes[0], "plain index dk_pkey") ||
		!strings.Contains(my.Notes[1], "unique constraint dk_u_key (u) is DEFERRABLE") {
		t.Errorf("CreateMySQL notes: %q", my.Notes)
	}

	// DDL replication creates the table the same way.
	steps, notes, err := SchemaChange(DialectMySQL, nil, def, source.TableName{Name: "dk"}, source.TableName{Name: "dk"}, ColumnRules{})
	if err != nil || len(steps) != 2 || steps[0].SQL != my.Table[0] || !slices.Equal(notes, my.Notes) {
		t.Errorf("SchemaChange creating dk on MySQL: %v, %d steps, notes %q", err, len(steps), notes)
	}

	// Not deferrable: the key and unique as before.
	plain := dkDef()
	plain.PrimaryKeyDeferral, plain.Uniques[0].Deferral = source.NotDeferrable, source.NotDeferrable
	my, err = CreateMySQL(plain, source.TableName{Name: "dk"}, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(my.Table[0], "PRIMARY KEY (`id`),\n\tUNIQUE KEY `dk_u_key` (`u`),") || len(my.Notes) != 0 {
		t.Errorf("CreateMySQL without deferrable keys:\n%s\nnotes %q", my.Table[0], my.Notes)
	}
	pg, err = CreatePG(plain, plain.Name, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pg.Table[1], "PRIMARY KEY (\"id\")\n)") || pg.Indexes[0] != `CREATE UNIQUE INDEX "dk_u_key" ON "public"."dk" ("u")` {
		t.Errorf("CreatePG without deferrable keys:\n%s\n%s", pg.Table[1], pg.Indexes[0])
	}
}

func checkDDL(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", what, strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestCreateMySQLRepeatedIndexColumns: a PostgreSQL index may name a
// column twice; MySQL refuses that, so each column is kept once, where it
// first appears. PostgreSQL takes the index as it is.
func TestCreateMySQLRepeatedIndexColumns(t *testing.T) {
	def := &source.TableDef{
		Name: source.TableName{Schema: "public", Name: "rep"},
		Columns: []source.ColumnDef{
			{Attnum: 1, Name: "a", Type: oidInt4, TypeMod: -1, SQLType: "integer", NotNull: true},
			{Attnum: 2, Name: "b", Type: oidText, TypeMod: -1, SQLType: "text"},
			{Attnum: 3, Name: "c", Type: oidInt4, TypeMod: -1, SQLType: "integer"},
		},
		PrimaryKey: []string{"a"},
		Uniques:    []source.IndexDef{{Name: "rep_c_a_c_key", Columns: []string{"c", "a", "c"}}},
		Indexes: []source.IndexDef{
			{Name: "rep_a_b_a_idx", Columns: []string{"a", "b", "a"}},
			{Name: "rep_b_b_idx", Columns: []string{"b", "b"}},
		},
	}
	my, err := CreateMySQL(def, source.TableName{Name: "rep"}, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	// b is in two-column indexes at most, once repeats are dropped.
	checkDDL(t, "CreateMySQL table", my.Table, []string{
		"CREATE TABLE IF NOT EXISTS `rep` (\n\t`a` INT NOT NULL,\n\t`b` VARCHAR(384),\n\t`c` INT,\n\t" +
			"PRIMARY KEY (`a`),\n\tUNIQUE KEY `rep_c_a_c_key` (`c`, `a`)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
	})
	checkDDL(t, "CreateMySQL indexes", my.Indexes, []string{
		"CREATE INDEX `rep_a_b_a_idx` ON `rep` (`a`, `b`)",
		"CREATE INDEX `rep_b_b_idx` ON `rep` (`b`)",
	})
	pg, err := CreatePG(def, def.Name, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `CREATE INDEX "rep_a_b_a_idx" ON "public"."rep" ("a", "b", "a")`; pg.Indexes[1] != want {
		t.Errorf("CreatePG:\n got %s\nwant %s", pg.Indexes[1], want)
	}
	// DDL replication creates such an index the same way (after making b
	// keyable).
	prev := *def
	prev.Indexes = nil
	steps, _, err := SchemaChange(DialectMySQL, &prev, def, source.TableName{Name: "rep"}, source.TableName{Name: "rep"}, ColumnRules{})
	if err != nil || len(steps) != 3 || steps[1].SQL != my.Indexes[0] || steps[2].SQL != my.Indexes[1] {
		t.Errorf("SchemaChange adding the indexes on MySQL: %v %+v", err, steps)
	}
}

// TestCreateMySQLTooManyColumns: InnoDB holds at most 1017 columns; a
// wider table is refused by name, with its count and the limit, unless
// excluded columns bring it within the limit.
func TestCreateMySQLTooManyColumns(t *testing.T) {
	wide := func(n int) *source.TableDef {
		def := &source.TableDef{Name: source.TableName{Schema: "public", Name: "wide"}}
		for i := range n {
			def.Columns = append(def.Columns, source.ColumnDef{Attnum: int16(i + 1), Name: fmt.Sprintf("c%d", i), Type: oidInt4, TypeMod: -1, SQLType: "integer"})
		}
		return def
	}
	if _, err := CreateMySQL(wide(MySQLMaxColumns), source.TableName{Name: "wide"}, ColumnRules{}); err != nil {
		t.Errorf("%d columns: %v", MySQLMaxColumns, err)
	}
	_, err := CreateMySQL(wide(1100), source.TableName{Name: "wide"}, ColumnRules{})
	if err == nil || !strings.Contains(err.Error(), "public.wide has 1100 columns, more than the 1017") {
		t.Errorf("1100 columns: %v", err)
	}
	var exclude []string
	for i := range 1100 - MySQLMaxColumns {
		exclude = append(exclude, fmt.Sprintf("c%d", i))
	}
	if _, err := CreateMySQL(wide(1100), source.TableName{Name: "wide"}, ColumnRules{Exclude: exclude}); err != nil {
		t.Errorf("1100 columns, %d excluded: %v", len(exclude), err)
	}
	if _, err := CreatePG(wide(1100), source.TableName{Schema: "public", Name: "wide"}, ColumnRules{}); err != nil {
		t.Errorf("CreatePG of 1100 columns: %v", err)
	}
}
