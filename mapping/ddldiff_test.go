package mapping

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// ddOrders is the table the schema change tests start from.
func ddOrders() *source.TableDef {
	return &source.TableDef{
		OID:  16500,
		Name: source.TableName{Schema: "public", Name: "orders"},
		Columns: []source.ColumnDef{
			{Attnum: 1, Name: "id", Type: oidInt8, TypeMod: -1, SQLType: "bigint", NotNull: true, Identity: 'd'},
			{Attnum: 2, Name: "customer", Type: oidInt4, TypeMod: -1, SQLType: "integer", NotNull: true},
			{Attnum: 3, Name: "code", Type: oidVarchar, TypeMod: 14, SQLType: "character varying(10)"},
			{Attnum: 4, Name: "note", Type: oidText, TypeMod: -1, SQLType: "text"},
			{Attnum: 5, Name: "created", Type: oidTimestamptz, TypeMod: -1, SQLType: "timestamp with time zone", NotNull: true, Default: "now()"},
		},
		PrimaryKey: []string{"id"},
		Uniques:    []source.IndexDef{{Name: "orders_code_key", Columns: []string{"code"}}},
		Indexes:    []source.IndexDef{{Name: "orders_customer_idx", Columns: []string{"customer"}}},
	}
}

// ddEdit returns a copy of def changed by edit.
func ddEdit(def *source.TableDef, edit func(*source.TableDef)) *source.TableDef {
	c := *def
	c.Columns = slices.Clone(def.Columns)
	c.PrimaryKey = slices.Clone(def.PrimaryKey)
	c.Uniques = slices.Clone(def.Uniques)
	c.Indexes = slices.Clone(def.Indexes)
	edit(&c)
	return &c
}

// ddColumn edits the column of def named name.
func ddColumn(def *source.TableDef, name string, edit func(*source.ColumnDef)) {
	i := slices.IndexFunc(def.Columns, func(c source.ColumnDef) bool { return c.Name == name })
	edit(&def.Columns[i])
}

func ddDrop(def *source.TableDef, name string) {
	def.Columns = slices.DeleteFunc(def.Columns, func(c source.ColumnDef) bool { return c.Name == name })
}

func ddStatus(def *source.TableDef) {
	def.Columns = append(def.Columns, source.ColumnDef{Attnum: 6, Name: "status", Type: oidVarchar, TypeMod: 24,
		SQLType: "character varying(20)", NotNull: true, Default: "'new'::character varying"})
}

var (
	ddPGOrders = source.TableName{Schema: "public", Name: "orders"}
	ddMyOrders = source.TableName{Name: "orders"}
)

const (
	pgOrders = `ALTER TABLE "public"."orders" `
	myOrders = "ALTER TABLE `orders` "
)

func ddPG(sqls ...string) []SchemaStep {
	var out []SchemaStep
	for _, s := range sqls {
		out = append(out, SchemaStep{SQL: s})
	}
	return out
}

// ddMy is a MySQL step on table orders.
func ddMy(sql string, kind PreKind, name string) SchemaStep {
	return ddMyOn(ddMyOrders, sql, kind, name)
}

func ddMyOn(table source.TableName, sql string, kind PreKind, name string) SchemaStep {
	if kind == PreNone {
		return SchemaStep{SQL: sql}
	}
	return SchemaStep{SQL: sql, Check: Precondition{Kind: kind, Table: table, Name: name}}
}

// ddSide is what one dialect is expected to do.
type ddSide struct {
	target, nextTarget source.TableName // zero: orders
	steps              []SchemaStep
	notes              []string
	unsupported        bool
}

type ddCase struct {
	name       string
	prev, next *source.TableDef
	rules      ColumnRules
	pg, my     ddSide
}

func TestSchemaChangeColumns(t *testing.T) {
	base := ddOrders()
	runSchemaCases(t, []ddCase{
		{name: "no change", prev: base, next: ddEdit(base, func(*source.TableDef) {})},
		{
			name: "add a column with a default and NOT NULL", prev: base, next: ddEdit(base, ddStatus),
			pg: ddSide{steps: ddPG(pgOrders + `ADD COLUMN "status" character varying(20) DEFAULT 'new'::character varying NOT NULL`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"ADD COLUMN `status` VARCHAR(20) NOT NULL DEFAULT 'new'", PreColumnMissing, "status")}},
		},
		{
			name: "add a column whose default MySQL lacks", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				d.Columns = append(d.Columns, source.ColumnDef{Attnum: 6, Name: "token", Type: oidUUID, TypeMod: -1, SQLType: "uuid", Default: "gen_random_uuid()"})
			}),
			pg: ddSide{steps: ddPG(pgOrders + `ADD COLUMN "token" uuid DEFAULT gen_random_uuid()`)},
			my: ddSide{
				steps: []SchemaStep{ddMy(myOrders+"ADD COLUMN `token` CHAR(36)", PreColumnMissing, "token")},
				notes: []string{"default of column token (gen_random_uuid()) has no MySQL equivalent and is left out"},
			},
		},
		{
			name: "drop a column", prev: base, next: ddEdit(base, func(d *source.TableDef) { ddDrop(d, "note") }),
			pg: ddSide{steps: ddPG(pgOrders + `DROP COLUMN "note"`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"DROP COLUMN `note`", PreColumnExists, "note")}},
		},
		{
			name: "rename a column", prev: base,
			next: ddEdit(base, func(d *source.TableDef) { ddColumn(d, "note", func(c *source.ColumnDef) { c.Name = "remark" }) }),
			pg:   ddSide{steps: ddPG(pgOrders + `RENAME COLUMN "note" TO "remark"`)},
			my:   ddSide{steps: []SchemaStep{ddMy(myOrders+"RENAME COLUMN `note` TO `remark`", PreColumnExists, "note")}},
		},
		{
			name: "rename an indexed column: the index follows it", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "code", func(c *source.ColumnDef) { c.Name = "sku" })
				d.Uniques = []source.IndexDef{{Name: "orders_code_key", Columns: []string{"sku"}}}
			}),
			pg: ddSide{steps: ddPG(pgOrders + `RENAME COLUMN "code" TO "sku"`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"RENAME COLUMN `code` TO `sku`", PreColumnExists, "code")}},
		},
		{
			name: "a chain of renames runs from its end", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "note", func(c *source.ColumnDef) { c.Name = "remark" })
				ddColumn(d, "code", func(c *source.ColumnDef) { c.Name = "note" })
				d.Uniques = []source.IndexDef{{Name: "orders_code_key", Columns: []string{"note"}}}
			}),
			pg: ddSide{steps: ddPG(pgOrders+`RENAME COLUMN "note" TO "remark"`, pgOrders+`RENAME COLUMN "code" TO "note"`)},
			my: ddSide{steps: []SchemaStep{
				ddMy(myOrders+"RENAME COLUMN `note` TO `remark`", PreColumnExists, "note"),
				ddMy(myOrders+"RENAME COLUMN `code` TO `note`", PreColumnExists, "code"),
			}},
		},
		{
			name: "swapped names", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "code", func(c *source.ColumnDef) { c.Name = "tmp" })
				ddColumn(d, "note", func(c *source.ColumnDef) { c.Name = "code" })
				ddColumn(d, "tmp", func(c *source.ColumnDef) { c.Name = "note" })
				d.Uniques = []source.IndexDef{{Name: "orders_code_key", Columns: []string{"note"}}}
			}),
			pg: ddSide{unsupported: true},
			my: ddSide{unsupported: true},
		},
		{
			name: "int to bigint", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "customer", func(c *source.ColumnDef) { c.Type, c.SQLType = oidInt8, "bigint" })
			}),
			pg: ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "customer" TYPE bigint USING "customer"::bigint`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `customer` BIGINT NOT NULL", PreNone, "")}},
		},
		{
			name: "varchar(10) to text in a unique key", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "code", func(c *source.ColumnDef) { c.Type, c.TypeMod, c.SQLType = oidText, -1, "text" })
			}),
			pg: ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "code" TYPE text USING "code"::text`)},
			// LONGTEXT cannot be a whole key: sized as CreateMySQL does.
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `code` VARCHAR(768)", PreNone, "")}},
		},
		{
			name: "type and default change together", prev: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "customer", func(c *source.ColumnDef) { c.Default = "0" })
			}),
			next: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "customer", func(c *source.ColumnDef) { c.Type, c.SQLType, c.Default = oidInt8, "bigint", "'-1'::integer" })
			}),
			pg: ddSide{steps: ddPG(
				pgOrders+`ALTER COLUMN "customer" DROP DEFAULT`,
				pgOrders+`ALTER COLUMN "customer" TYPE bigint USING "customer"::bigint`,
				pgOrders+`ALTER COLUMN "customer" SET DEFAULT '-1'::integer`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `customer` BIGINT NOT NULL DEFAULT '-1'", PreNone, "")}},
		},
		{
			name: "set a default", prev: base,
			next: ddEdit(base, func(d *source.TableDef) { ddColumn(d, "customer", func(c *source.ColumnDef) { c.Default = "0" }) }),
			pg:   ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "customer" SET DEFAULT 0`)},
			my:   ddSide{steps: []SchemaStep{ddMy(myOrders+"ALTER COLUMN `customer` SET DEFAULT 0", PreNone, "")}},
		},
		{
			name: "set an expression default on a text column", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "note", func(c *source.ColumnDef) { c.Default = "'none'::text" })
			}),
			pg: ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "note" SET DEFAULT 'none'::text`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `note` LONGTEXT DEFAULT ('none')", PreNone, "")}},
		},
		{
			name: "drop a default", prev: base,
			next: ddEdit(base, func(d *source.TableDef) { ddColumn(d, "created", func(c *source.ColumnDef) { c.Default = "" }) }),
			pg:   ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "created" DROP DEFAULT`)},
			my:   ddSide{steps: []SchemaStep{ddMy(myOrders+"ALTER COLUMN `created` DROP DEFAULT", PreNone, "")}},
		},
		{
			name: "a default MySQL lacks replaces one it has", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "created", func(c *source.ColumnDef) { c.Default = "(now() + '1 day'::interval)" })
			}),
			pg: ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "created" SET DEFAULT (now() + '1 day'::interval)`)},
			my: ddSide{
				steps: []SchemaStep{ddMy(myOrders+"ALTER COLUMN `created` DROP DEFAULT", PreNone, "")},
				notes: []string{"default of column created ((now() + '1 day'::interval)) has no MySQL equivalent and is left out"},
			},
		},
		{
			name: "set NOT NULL", prev: base,
			next: ddEdit(base, func(d *source.TableDef) { ddColumn(d, "code", func(c *source.ColumnDef) { c.NotNull = true }) }),
			pg:   ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "code" SET NOT NULL`)},
			my:   ddSide{steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `code` VARCHAR(10) NOT NULL", PreNone, "")}},
		},
		{
			name: "drop NOT NULL keeps the default on MySQL", prev: base,
			next: ddEdit(base, func(d *source.TableDef) { ddColumn(d, "created", func(c *source.ColumnDef) { c.NotNull = false }) }),
			pg:   ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "created" DROP NOT NULL`)},
			my:   ddSide{steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `created` DATETIME(6) DEFAULT CURRENT_TIMESTAMP(6)", PreNone, "")}},
		},
	})
}

func TestSchemaChangeGeneratedAndIdentity(t *testing.T) {
	total := func(expr string) *source.TableDef {
		return ddEdit(ddOrders(), func(d *source.TableDef) {
			d.Columns = append(d.Columns, source.ColumnDef{Attnum: 6, Name: "total", Type: oidInt4, TypeMod: -1, SQLType: "integer", Generated: expr})
		})
	}
	base := ddOrders()
	identity := func(kind byte) *source.TableDef {
		return ddEdit(base, func(d *source.TableDef) { ddColumn(d, "id", func(c *source.ColumnDef) { c.Identity = kind }) })
	}
	runSchemaCases(t, []ddCase{
		{
			name: "generation expression changed", prev: total("(customer * 2)"), next: total("(customer * 3)"),
			pg: ddSide{unsupported: true},
			// A plain column on MySQL: the source's values keep coming.
			my: ddSide{notes: []string{"column total is generated on the source ((customer * 3)); on the target it is a plain column filled with the source's values"}},
		},
		{
			name: "generated column made plain", prev: total("(customer * 2)"), next: total(""),
			pg: ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "total" DROP EXPRESSION`)},
		},
		{
			name: "add a generated column", prev: base, next: total("(customer * 2)"),
			pg: ddSide{steps: ddPG(pgOrders + `ADD COLUMN "total" integer GENERATED ALWAYS AS ((customer * 2)) STORED`)},
			my: ddSide{
				steps: []SchemaStep{ddMy(myOrders+"ADD COLUMN `total` INT", PreColumnMissing, "total")},
				notes: []string{"column total is generated on the source ((customer * 2)); on the target it is a plain column filled with the source's values"},
			},
		},
		{
			name: "identity by default to always", prev: base, next: identity('a'),
			pg: ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "id" SET GENERATED ALWAYS`)},
		},
		{
			name: "drop identity", prev: base, next: identity(0),
			pg: ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "id" DROP IDENTITY IF EXISTS`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL", PreNone, "")}},
		},
		{
			name: "add identity", prev: identity(0), next: base,
			pg: ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "id" ADD GENERATED BY DEFAULT AS IDENTITY`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL AUTO_INCREMENT", PreNone, "")}},
		},
		{
			name: "a default becomes identity", prev: ddEdit(base, func(d *source.TableDef) {
				ddColumn(d, "customer", func(c *source.ColumnDef) { c.Default, c.NotNull = "0", false })
			}),
			next: ddEdit(base, func(d *source.TableDef) { ddColumn(d, "customer", func(c *source.ColumnDef) { c.Identity = 'a' }) }),
			pg: ddSide{steps: ddPG(
				pgOrders+`ALTER COLUMN "customer" DROP DEFAULT`,
				pgOrders+`ALTER COLUMN "customer" SET NOT NULL`,
				pgOrders+`ALTER COLUMN "customer" ADD GENERATED ALWAYS AS IDENTITY`)},
			my: ddSide{
				steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `customer` INT NOT NULL", PreNone, "")},
				notes: []string{"column customer is an identity or serial column on the source; MySQL allows AUTO_INCREMENT only on the first column of a key, so it is a plain column"},
			},
		},
	})
}

func TestSchemaChangeKeysAndIndexes(t *testing.T) {
	base := ddOrders()
	noPK := ddEdit(base, func(d *source.TableDef) { d.PrimaryKey = nil })
	deferrablePK := ddEdit(base, func(d *source.TableDef) { d.PrimaryKeyDeferral = source.DeferrableImmediate })
	runSchemaCases(t, []ddCase{
		{
			name: "drop the primary key", prev: base, next: noPK,
			pg: ddSide{steps: ddPG(dropPrimaryKeyPG(ddPGOrders))},
			my: ddSide{
				steps: []SchemaStep{
					ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL", PreNone, ""),
					ddMy(myOrders+"DROP PRIMARY KEY", PrePrimaryKeyOther, ""),
				},
				notes: []string{"column id is an identity or serial column on the source; MySQL allows AUTO_INCREMENT only on the first column of a key, so it is a plain column"},
			},
		},
		{
			name: "add a primary key", prev: noPK, next: base,
			pg: ddSide{steps: ddPG(pgOrders + `ADD PRIMARY KEY ("id")`)},
			my: ddSide{steps: []SchemaStep{
				ddMy(myOrders+"ADD PRIMARY KEY (`id`)", PrePrimaryKeyDiffers, "id"),
				ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL AUTO_INCREMENT", PreNone, ""),
			}},
		},
		{
			name: "widen the primary key", prev: base,
			next: ddEdit(base, func(d *source.TableDef) { d.PrimaryKey = []string{"id", "customer"} }),
			pg:   ddSide{steps: ddPG(dropPrimaryKeyPG(ddPGOrders), pgOrders+`ADD PRIMARY KEY ("id", "customer")`)},
			my: ddSide{steps: []SchemaStep{
				ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL", PreNone, ""),
				ddMy(myOrders+"DROP PRIMARY KEY", PrePrimaryKeyOther, "id,customer"),
				ddMy(myOrders+"ADD PRIMARY KEY (`id`, `customer`)", PrePrimaryKeyDiffers, "id,customer"),
				ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL AUTO_INCREMENT", PreNone, ""),
			}},
		},
		{
			name: "make the primary key deferrable", prev: base, next: deferrablePK,
			pg: ddSide{steps: ddPG(dropPrimaryKeyPG(ddPGOrders), pgOrders+`ADD PRIMARY KEY ("id") DEFERRABLE INITIALLY IMMEDIATE`)},
			my: ddSide{
				steps: []SchemaStep{
					ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL", PreNone, ""),
					ddMy(myOrders+"DROP PRIMARY KEY", PrePrimaryKeyOther, ""),
					ddMy("CREATE INDEX `orders_pkey` ON `orders` (`id`)", PreIndexMissing, "orders_pkey"),
					ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL AUTO_INCREMENT", PreNone, ""),
				},
				notes: []string{deferredNote("primary key", "orders_pkey", []string{"id"})},
			},
		},
		{
			name: "make the primary key immediate again", prev: deferrablePK, next: base,
			pg: ddSide{steps: ddPG(dropPrimaryKeyPG(ddPGOrders), pgOrders+`ADD PRIMARY KEY ("id")`)},
			my: ddSide{steps: []SchemaStep{
				ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL", PreNone, ""),
				ddMy("DROP INDEX `orders_pkey` ON `orders`", PreIndexExists, "orders_pkey"),
				ddMy(myOrders+"ADD PRIMARY KEY (`id`)", PrePrimaryKeyDiffers, "id"),
				ddMy(myOrders+"MODIFY COLUMN `id` BIGINT NOT NULL AUTO_INCREMENT", PreNone, ""),
			}},
		},
		{
			name: "a deferrable primary key's index follows a table rename", prev: deferrablePK,
			next: ddEdit(deferrablePK, func(d *source.TableDef) { d.Name.Name = "purchases" }),
			pg:   ddSide{nextTarget: source.TableName{Schema: "public", Name: "purchases"}, steps: ddPG(pgOrders + `RENAME TO "purchases"`)},
			my: ddSide{nextTarget: source.TableName{Name: "purchases"}, steps: []SchemaStep{
				ddMy("RENAME TABLE `orders` TO `purchases`", PreTableExists, ""),
				ddMyOn(source.TableName{Name: "purchases"}, "ALTER TABLE `purchases` RENAME INDEX `orders_pkey` TO `purchases_pkey`", PreIndexExists, "orders_pkey"),
			}},
		},
		{
			name: "make a unique constraint deferrable", prev: base,
			next: ddEdit(base, func(d *source.TableDef) { d.Uniques[0].Deferral = source.DeferrableDeferred }),
			pg: ddSide{steps: ddPG(
				pgOrders+`DROP CONSTRAINT IF EXISTS "orders_code_key"`,
				`DROP INDEX IF EXISTS "public"."orders_code_key"`,
				pgOrders+`ADD CONSTRAINT "orders_code_key" UNIQUE ("code") DEFERRABLE INITIALLY DEFERRED`)},
			my: ddSide{
				steps: []SchemaStep{
					ddMy("DROP INDEX `orders_code_key` ON `orders`", PreIndexExists, "orders_code_key"),
					ddMy("CREATE INDEX `orders_code_key` ON `orders` (`code`)", PreIndexMissing, "orders_code_key"),
				},
				notes: []string{deferredNote("unique constraint orders_code_key", "orders_code_key", []string{"code"})},
			},
		},
		{
			name: "add a unique constraint", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				d.Uniques = append(d.Uniques, source.IndexDef{Name: "orders_customer_code_key", Columns: []string{"customer", "code"}})
			}),
			pg: ddSide{steps: ddPG(`CREATE UNIQUE INDEX IF NOT EXISTS "orders_customer_code_key" ON "public"."orders" ("customer", "code")`)},
			my: ddSide{steps: []SchemaStep{
				ddMy("CREATE UNIQUE INDEX `orders_customer_code_key` ON `orders` (`customer`, `code`)", PreIndexMissing, "orders_customer_code_key")}},
		},
		{
			name: "drop a unique constraint", prev: base, next: ddEdit(base, func(d *source.TableDef) { d.Uniques = nil }),
			pg: ddSide{steps: ddPG(pgOrders+`DROP CONSTRAINT IF EXISTS "orders_code_key"`, `DROP INDEX IF EXISTS "public"."orders_code_key"`)},
			my: ddSide{steps: []SchemaStep{ddMy("DROP INDEX `orders_code_key` ON `orders`", PreIndexExists, "orders_code_key")}},
		},
		{
			name: "create an index", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				d.Indexes = append(d.Indexes, source.IndexDef{Name: "orders_created_idx", Columns: []string{"created"}})
			}),
			pg: ddSide{steps: ddPG(`CREATE INDEX IF NOT EXISTS "orders_created_idx" ON "public"."orders" ("created")`)},
			my: ddSide{steps: []SchemaStep{ddMy("CREATE INDEX `orders_created_idx` ON `orders` (`created`)", PreIndexMissing, "orders_created_idx")}},
		},
		{
			name: "index a text column", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				d.Indexes = append(d.Indexes, source.IndexDef{Name: "orders_note_idx", Columns: []string{"note"}})
			}),
			pg: ddSide{steps: ddPG(`CREATE INDEX IF NOT EXISTS "orders_note_idx" ON "public"."orders" ("note")`)},
			my: ddSide{steps: []SchemaStep{
				ddMy(myOrders+"MODIFY COLUMN `note` VARCHAR(768)", PreNone, ""),
				ddMy("CREATE INDEX `orders_note_idx` ON `orders` (`note`)", PreIndexMissing, "orders_note_idx"),
			}},
		},
		{
			name: "unindex a text column", prev: ddEdit(base, func(d *source.TableDef) {
				d.Indexes = []source.IndexDef{{Name: "orders_note_idx", Columns: []string{"note"}}}
			}),
			next: ddEdit(base, func(d *source.TableDef) { d.Indexes = nil }),
			pg:   ddSide{steps: ddPG(`DROP INDEX IF EXISTS "public"."orders_note_idx"`)},
			my: ddSide{steps: []SchemaStep{
				ddMy("DROP INDEX `orders_note_idx` ON `orders`", PreIndexExists, "orders_note_idx"),
				ddMy(myOrders+"MODIFY COLUMN `note` LONGTEXT", PreNone, ""),
			}},
		},
		{
			name: "change an index's columns", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				d.Indexes = []source.IndexDef{{Name: "orders_customer_idx", Columns: []string{"customer", "created"}}}
			}),
			pg: ddSide{steps: ddPG(`DROP INDEX IF EXISTS "public"."orders_customer_idx"`,
				`CREATE INDEX IF NOT EXISTS "orders_customer_idx" ON "public"."orders" ("customer", "created")`)},
			my: ddSide{steps: []SchemaStep{
				ddMy("DROP INDEX `orders_customer_idx` ON `orders`", PreIndexExists, "orders_customer_idx"),
				ddMy("CREATE INDEX `orders_customer_idx` ON `orders` (`customer`, `created`)", PreIndexMissing, "orders_customer_idx"),
			}},
		},
		{
			name: "drop an index", prev: base, next: ddEdit(base, func(d *source.TableDef) { d.Indexes = nil }),
			pg: ddSide{steps: ddPG(`DROP INDEX IF EXISTS "public"."orders_customer_idx"`)},
			my: ddSide{steps: []SchemaStep{ddMy("DROP INDEX `orders_customer_idx` ON `orders`", PreIndexExists, "orders_customer_idx")}},
		},
		{
			name: "create an expression index", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				d.Indexes = append(d.Indexes, source.IndexDef{Name: "orders_lower_idx", Expr: "CREATE INDEX orders_lower_idx ON public.orders USING btree (lower(note))"})
			}),
			pg: ddSide{steps: ddPG("CREATE INDEX orders_lower_idx ON public.orders USING btree (lower(note))")},
			my: ddSide{notes: []string{"index orders_lower_idx is an expression, partial or non-btree index and is not created: CREATE INDEX orders_lower_idx ON public.orders USING btree (lower(note))"}},
		},
		{
			name: "an unchanged expression index", prev: ddEdit(base, func(d *source.TableDef) {
				d.Indexes = []source.IndexDef{{Name: "orders_lower_idx", Expr: "CREATE INDEX orders_lower_idx ON public.orders USING btree (lower(note))"}}
			}),
			next: ddEdit(base, func(d *source.TableDef) {
				d.Indexes = []source.IndexDef{{Name: "orders_lower_idx", Expr: "CREATE INDEX orders_lower_idx ON public.orders USING btree (lower(note))"}}
				ddColumn(d, "customer", func(c *source.ColumnDef) { c.Default = "0" })
			}),
			pg: ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "customer" SET DEFAULT 0`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"ALTER COLUMN `customer` SET DEFAULT 0", PreNone, "")}},
		},
	})
}

func TestSchemaChangeTables(t *testing.T) {
	base := ddOrders()
	purchases := ddEdit(base, func(d *source.TableDef) { d.Name.Name = "purchases" })
	archived := ddEdit(base, func(d *source.TableDef) { d.Name.Schema = "archive" })
	runSchemaCases(t, []ddCase{
		{
			name: "create a table", next: base,
			pg: ddSide{steps: ddPG(
				`CREATE SCHEMA IF NOT EXISTS "public"`,
				"CREATE TABLE \"public\".\"orders\" (\n"+
					"\t\"id\" bigint GENERATED BY DEFAULT AS IDENTITY NOT NULL,\n"+
					"\t\"customer\" integer NOT NULL,\n"+
					"\t\"code\" character varying(10),\n"+
					"\t\"note\" text,\n"+
					"\t\"created\" timestamp with time zone DEFAULT now() NOT NULL,\n"+
					"\tPRIMARY KEY (\"id\")\n)",
				`CREATE UNIQUE INDEX "orders_code_key" ON "public"."orders" ("code")`,
				`CREATE INDEX "orders_customer_idx" ON "public"."orders" ("customer")`)},
			my: ddSide{steps: []SchemaStep{
				ddMy("CREATE TABLE IF NOT EXISTS `orders` (\n"+
					"\t`id` BIGINT NOT NULL AUTO_INCREMENT,\n"+
					"\t`customer` INT NOT NULL,\n"+
					"\t`code` VARCHAR(10),\n"+
					"\t`note` LONGTEXT,\n"+
					"\t`created` DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),\n"+
					"\tPRIMARY KEY (`id`),\n"+
					"\tUNIQUE KEY `orders_code_key` (`code`)\n"+
					") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin", PreTableMissing, ""),
				ddMy("CREATE INDEX `orders_customer_idx` ON `orders` (`customer`)", PreIndexMissing, "orders_customer_idx"),
			}},
		},
		{
			name: "drop a table", prev: base,
			pg: ddSide{steps: ddPG(`DROP TABLE IF EXISTS "public"."orders"`)},
			my: ddSide{steps: ddPG("DROP TABLE IF EXISTS `orders`")},
		},
		{
			name: "rename a table", prev: base, next: purchases,
			pg: ddSide{nextTarget: source.TableName{Schema: "public", Name: "purchases"},
				steps: ddPG(pgOrders + `RENAME TO "purchases"`)},
			my: ddSide{nextTarget: source.TableName{Name: "purchases"},
				steps: []SchemaStep{ddMy("RENAME TABLE `orders` TO `purchases`", PreTableExists, "")}},
		},
		{
			name: "rename a routed table: its indexes follow", prev: base, next: purchases,
			pg: ddSide{
				target: source.TableName{Schema: "shop", Name: "t_orders"}, nextTarget: source.TableName{Schema: "shop", Name: "t_purchases"},
				steps: ddPG(`ALTER TABLE "shop"."t_orders" RENAME TO "t_purchases"`,
					`ALTER INDEX "shop"."t_orders_orders_code_key" RENAME TO "t_purchases_orders_code_key"`,
					`ALTER INDEX "shop"."t_orders_orders_customer_idx" RENAME TO "t_purchases_orders_customer_idx"`),
			},
			my: ddSide{
				target: source.TableName{Schema: "shop", Name: "t_orders"}, nextTarget: source.TableName{Schema: "shop", Name: "t_purchases"},
				steps: []SchemaStep{
					ddMyOn(source.TableName{Schema: "shop", Name: "t_orders"}, "RENAME TABLE `shop`.`t_orders` TO `shop`.`t_purchases`", PreTableExists, ""),
					ddMyOn(source.TableName{Schema: "shop", Name: "t_purchases"}, "ALTER TABLE `shop`.`t_purchases` RENAME INDEX `t_orders_orders_code_key` TO `t_purchases_orders_code_key`",
						PreIndexExists, "t_orders_orders_code_key"),
					ddMyOn(source.TableName{Schema: "shop", Name: "t_purchases"}, "ALTER TABLE `shop`.`t_purchases` RENAME INDEX `t_orders_orders_customer_idx` TO `t_purchases_orders_customer_idx`",
						PreIndexExists, "t_orders_orders_customer_idx"),
				},
			},
		},
		{
			name: "move a table to another schema; routed to one MySQL database", prev: base, next: archived,
			pg: ddSide{nextTarget: source.TableName{Schema: "archive", Name: "orders"},
				steps: ddPG(`CREATE SCHEMA IF NOT EXISTS "archive"`, pgOrders+`SET SCHEMA "archive"`)},
			my: ddSide{}, // both route to `orders`
		},
		{
			name: "a new table under the old name replaces it", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				d.OID = 16600
				d.Columns, d.PrimaryKey, d.Uniques, d.Indexes = d.Columns[:2], nil, nil, nil
			}),
			pg: ddSide{steps: ddPG(`DROP TABLE IF EXISTS "public"."orders"`, `CREATE SCHEMA IF NOT EXISTS "public"`,
				"CREATE TABLE \"public\".\"orders\" (\n\t\"id\" bigint GENERATED BY DEFAULT AS IDENTITY NOT NULL,\n\t\"customer\" integer NOT NULL\n)")},
			my: ddSide{
				steps: []SchemaStep{ddMy("DROP TABLE IF EXISTS `orders`", PreNone, ""),
					ddMy("CREATE TABLE IF NOT EXISTS `orders` (\n\t`id` BIGINT NOT NULL,\n\t`customer` INT NOT NULL\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
						PreTableMissing, "")},
				notes: []string{"column id is an identity or serial column on the source; MySQL allows AUTO_INCREMENT only on the first column of a key, so it is a plain column"},
			},
		},
	})
}

func TestSchemaChangeRules(t *testing.T) {
	base := ddOrders()
	secret := ddEdit(base, func(d *source.TableDef) {
		d.Columns = append(d.Columns, source.ColumnDef{Attnum: 6, Name: "secret", Type: oidText, TypeMod: -1, SQLType: "text"})
	})
	renamed := ColumnRules{Rename: map[string]string{"note": "remark"}}
	runSchemaCases(t, []ddCase{
		{name: "an excluded column is never added", prev: base, next: secret, rules: ColumnRules{Exclude: []string{"secret"}}},
		{
			name: "an excluded column's changes are ignored", prev: secret,
			next:  ddEdit(secret, func(d *source.TableDef) { ddColumn(d, "secret", func(c *source.ColumnDef) { c.NotNull = true }) }),
			rules: ColumnRules{Exclude: []string{"secret"}},
		},
		{
			name: "a column renamed by the rules is altered under its target name", prev: base,
			next:  ddEdit(base, func(d *source.TableDef) { ddColumn(d, "note", func(c *source.ColumnDef) { c.NotNull = true }) }),
			rules: renamed,
			pg:    ddSide{steps: ddPG(pgOrders + `ALTER COLUMN "remark" SET NOT NULL`)},
			my:    ddSide{steps: []SchemaStep{ddMy(myOrders+"MODIFY COLUMN `remark` LONGTEXT NOT NULL", PreNone, "")}},
		},
		{
			name: "a column added under a rule's name", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				d.Columns = append(d.Columns, source.ColumnDef{Attnum: 6, Name: "cust_email", Type: oidText, TypeMod: -1, SQLType: "text"})
			}),
			rules: ColumnRules{Rename: map[string]string{"cust_email": "email"}},
			pg:    ddSide{steps: ddPG(pgOrders + `ADD COLUMN "email" text`)},
			my:    ddSide{steps: []SchemaStep{ddMy(myOrders+"ADD COLUMN `email` LONGTEXT", PreColumnMissing, "email")}},
		},
		{
			// The rule names the old source column: rows after the change
			// come under the new name, so the target column takes it.
			name: "the source renames a column a rule renames", prev: base,
			next:  ddEdit(base, func(d *source.TableDef) { ddColumn(d, "note", func(c *source.ColumnDef) { c.Name = "memo" }) }),
			rules: renamed,
			pg:    ddSide{steps: ddPG(pgOrders + `RENAME COLUMN "remark" TO "memo"`)},
			my:    ddSide{steps: []SchemaStep{ddMy(myOrders+"RENAME COLUMN `remark` TO `memo`", PreColumnExists, "remark")}},
		},
		{
			name: "a column renamed into an exclusion leaves the target", prev: base,
			next:  ddEdit(base, func(d *source.TableDef) { ddColumn(d, "note", func(c *source.ColumnDef) { c.Name = "secret" }) }),
			rules: ColumnRules{Exclude: []string{"secret"}},
			pg:    ddSide{steps: ddPG(pgOrders + `DROP COLUMN "note"`)},
			my:    ddSide{steps: []SchemaStep{ddMy(myOrders+"DROP COLUMN `note`", PreColumnExists, "note")}},
		},
		{
			name: "an expression index needs the source's column names", prev: base,
			next: ddEdit(base, func(d *source.TableDef) {
				d.Indexes = append(d.Indexes, source.IndexDef{Name: "orders_lower_idx", Expr: "CREATE INDEX orders_lower_idx ON public.orders USING btree (lower(note))"})
			}),
			rules: renamed,
			pg:    ddSide{notes: []string{"index orders_lower_idx (CREATE INDEX orders_lower_idx ON public.orders USING btree (lower(note))) not created: the table or its columns are renamed on the target"}},
			my:    ddSide{notes: []string{"index orders_lower_idx is an expression, partial or non-btree index and is not created: CREATE INDEX orders_lower_idx ON public.orders USING btree (lower(note))"}},
		},
	})
}

// TestSchemaChangeSeveral checks the order of many changes at once: the
// table is renamed first, indexes go before columns they cover, the key
// goes before its columns change and comes back after, new indexes last.
func TestSchemaChangeSeveral(t *testing.T) {
	base := ddOrders()
	next := ddEdit(base, func(d *source.TableDef) {
		d.Name.Name = "purchases"
		ddDrop(d, "note")
		ddColumn(d, "code", func(c *source.ColumnDef) { c.Name = "sku" })
		ddColumn(d, "customer", func(c *source.ColumnDef) { c.Type, c.SQLType = oidInt8, "bigint" })
		ddStatus(d)
		d.PrimaryKey = []string{"id", "customer"}
		d.Uniques = []source.IndexDef{{Name: "orders_code_key", Columns: []string{"sku"}}}
		d.Indexes = []source.IndexDef{{Name: "purchases_customer_status_idx", Columns: []string{"customer", "status"}}}
	})
	pgT := `ALTER TABLE "public"."purchases" `
	myT := "ALTER TABLE `purchases` "
	purchases := source.TableName{Name: "purchases"}
	runSchemaCases(t, []ddCase{{
		name: "several", prev: base, next: next,
		pg: ddSide{nextTarget: source.TableName{Schema: "public", Name: "purchases"}, steps: ddPG(
			pgOrders+`RENAME TO "purchases"`,
			`DROP INDEX IF EXISTS "public"."orders_customer_idx"`,
			pgT+`DROP COLUMN "note"`,
			pgT+`RENAME COLUMN "code" TO "sku"`,
			dropPrimaryKeyPG(source.TableName{Schema: "public", Name: "purchases"}),
			pgT+`ADD COLUMN "status" character varying(20) DEFAULT 'new'::character varying NOT NULL`,
			pgT+`ALTER COLUMN "customer" TYPE bigint USING "customer"::bigint`,
			pgT+`ADD PRIMARY KEY ("id", "customer")`,
			`CREATE INDEX IF NOT EXISTS "purchases_customer_status_idx" ON "public"."purchases" ("customer", "status")`,
		)},
		my: ddSide{nextTarget: purchases, steps: []SchemaStep{
			ddMy("RENAME TABLE `orders` TO `purchases`", PreTableExists, ""),
			ddMyOn(purchases, "DROP INDEX `orders_customer_idx` ON `purchases`", PreIndexExists, "orders_customer_idx"),
			ddMyOn(purchases, myT+"DROP COLUMN `note`", PreColumnExists, "note"),
			ddMyOn(purchases, myT+"RENAME COLUMN `code` TO `sku`", PreColumnExists, "code"),
			ddMyOn(purchases, myT+"MODIFY COLUMN `id` BIGINT NOT NULL", PreNone, ""),
			ddMyOn(purchases, myT+"DROP PRIMARY KEY", PrePrimaryKeyOther, "id,customer"),
			ddMyOn(purchases, myT+"ADD COLUMN `status` VARCHAR(20) NOT NULL DEFAULT 'new'", PreColumnMissing, "status"),
			ddMyOn(purchases, myT+"MODIFY COLUMN `customer` BIGINT NOT NULL", PreNone, ""),
			ddMyOn(purchases, myT+"ADD PRIMARY KEY (`id`, `customer`)", PrePrimaryKeyDiffers, "id,customer"),
			ddMyOn(purchases, myT+"MODIFY COLUMN `id` BIGINT NOT NULL AUTO_INCREMENT", PreNone, ""),
			ddMyOn(purchases, "CREATE INDEX `purchases_customer_status_idx` ON `purchases` (`customer`, `status`)", PreIndexMissing, "purchases_customer_status_idx"),
		}},
	}})
}

// TestSchemaChangeWithoutAttnums: definitions stored before attnums were
// kept match columns by name, and refuse what may be a rename.
func TestSchemaChangeWithoutAttnums(t *testing.T) {
	old := ddEdit(ddOrders(), func(d *source.TableDef) {
		for i := range d.Columns {
			d.Columns[i].Attnum = 0
		}
	})
	runSchemaCases(t, []ddCase{
		{
			name: "add", prev: old, next: ddEdit(ddOrders(), ddStatus),
			pg: ddSide{steps: ddPG(pgOrders + `ADD COLUMN "status" character varying(20) DEFAULT 'new'::character varying NOT NULL`)},
			my: ddSide{steps: []SchemaStep{ddMy(myOrders+"ADD COLUMN `status` VARCHAR(20) NOT NULL DEFAULT 'new'", PreColumnMissing, "status")}},
		},
		{
			name: "rename or drop and add", prev: old,
			next: ddEdit(ddOrders(), func(d *source.TableDef) { ddColumn(d, "note", func(c *source.ColumnDef) { c.Name = "remark" }) }),
			pg:   ddSide{unsupported: true},
			my:   ddSide{unsupported: true},
		},
	})
}

func runSchemaCases(t *testing.T, cases []ddCase) {
	t.Helper()
	for _, tc := range cases {
		for _, d := range []Dialect{DialectPostgres, DialectMySQL} {
			t.Run(tc.name+"/"+d.String(), func(t *testing.T) {
				want, orders := tc.pg, ddPGOrders
				if d == DialectMySQL {
					want, orders = tc.my, ddMyOrders
				}
				target, nextTarget := orders, orders
				if want.target != (source.TableName{}) {
					target = want.target
				}
				if want.nextTarget != (source.TableName{}) {
					nextTarget = want.nextTarget
				}
				steps, notes, err := SchemaChange(d, tc.prev, tc.next, target, nextTarget, tc.rules)
				var unsupported *UnsupportedDDL
				switch {
				case want.unsupported && !errors.As(err, &unsupported):
					t.Fatalf("error %v, want *UnsupportedDDL", err)
				case !want.unsupported && err != nil:
					t.Fatal(err)
				}
				if !slices.Equal(steps, want.steps) {
					t.Errorf("steps:\n%s\nwant:\n%s", ddFormat(steps), ddFormat(want.steps))
				}
				if !slices.Equal(notes, want.notes) {
					t.Errorf("notes:\n%q\nwant:\n%q", notes, want.notes)
				}
			})
		}
	}
}

func ddFormat(steps []SchemaStep) string {
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "\t%s", s.SQL)
		if s.Check != (Precondition{}) {
			fmt.Fprintf(&b, "\t[%s %s %q]", s.Check.Kind, targetText(s.Check.Table), s.Check.Name)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func TestUnsupportedDDLNamesTheChange(t *testing.T) {
	gen := func(expr string) *source.TableDef {
		return ddEdit(ddOrders(), func(d *source.TableDef) {
			d.Columns = append(d.Columns, source.ColumnDef{Attnum: 6, Name: "total", Type: oidInt4, TypeMod: -1, SQLType: "integer", Generated: expr})
		})
	}
	prev := gen("(customer * 2)")
	next := ddEdit(gen("(customer * 3)"), func(d *source.TableDef) { ddColumn(d, "note", func(c *source.ColumnDef) { c.NotNull = true }) })
	steps, _, err := SchemaChange(DialectPostgres, prev, next, ddPGOrders, ddPGOrders, ColumnRules{})
	want := `unsupported schema change: table public.orders: column total: the generation expression changed from ((customer * 2)) to ((customer * 3)) and a stored generated column cannot be changed in place`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	// The rest of the change comes with the error, for the policy to apply.
	if w := ddPG(pgOrders + `ALTER COLUMN "note" SET NOT NULL`); !slices.Equal(steps, w) {
		t.Errorf("steps:\n%s\nwant:\n%s", ddFormat(steps), ddFormat(w))
	}
}

func TestDropPrimaryKeyPG(t *testing.T) {
	want := "DO $decant$\n" +
		"DECLARE\n" +
		"\tpk name;\n" +
		"BEGIN\n" +
		"\tSELECT conname INTO pk FROM pg_constraint WHERE conrelid = '\"public\".\"orders\"'::regclass AND contype = 'p';\n" +
		"\tIF FOUND THEN\n" +
		"\t\tEXECUTE format('ALTER TABLE %I.%I DROP CONSTRAINT %I', 'public', 'orders', pk);\n" +
		"\tEND IF;\n" +
		"END\n" +
		"$decant$"
	if got := dropPrimaryKeyPG(ddPGOrders); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Names with quotes and the dollar tag itself stay inside the body.
	got := dropPrimaryKeyPG(source.TableName{Schema: "it's", Name: `a"$decant$`})
	if !strings.HasPrefix(got, "DO $decant0$\n") || !strings.HasSuffix(got, "\n$decant0$") ||
		!strings.Contains(got, `conrelid = '"it''s"."a""$decant$"'::regclass`) ||
		!strings.Contains(got, `'it''s', 'a"$decant$', pk`) {
		t.Errorf("got\n%s", got)
	}
}

// TestColumnSpecsMatchCreate keeps the column definitions of ADD and
// MODIFY equal to those CreatePG and CreateMySQL write.
func TestColumnSpecsMatchCreate(t *testing.T) {
	def := ddEdit(ddOrders(), func(d *source.TableDef) {
		ddStatus(d)
		d.Columns = append(d.Columns,
			source.ColumnDef{Attnum: 7, Name: "total", Type: oidInt4, TypeMod: -1, SQLType: "integer", Generated: "(customer * 2)"},
			source.ColumnDef{Attnum: 8, Name: "seq", Type: oidInt4, TypeMod: -1, SQLType: "integer", NotNull: true, Identity: 'a'},
			source.ColumnDef{Attnum: 9, Name: "flag", Type: oidBool, TypeMod: -1, SQLType: "boolean", Default: "true"})
	})
	pg, err := CreatePG(def, ddPGOrders, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	my, err := CreateMySQL(def, ddMyOrders, ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	side := newDiffSide(def, ddMyOrders, ColumnRules{}, true)
	for _, c := range def.Columns {
		if line := "\t" + pgColumnSpec(c, c.Name) + ",\n"; !strings.Contains(pg.Table[1], line) {
			t.Errorf("CreatePG lacks %q:\n%s", line, pg.Table[1])
		}
		spec, err := side.mysqlSpec(c)
		if err != nil {
			t.Fatal(err)
		}
		if line := "\t" + spec.sql(c.Name) + ",\n"; !strings.Contains(my.Table[0], line) {
			t.Errorf("CreateMySQL lacks %q:\n%s", line, my.Table[0])
		}
	}
}

func TestSchemaChangeEdges(t *testing.T) {
	if _, _, err := SchemaChange(0, nil, ddOrders(), ddPGOrders, ddPGOrders, ColumnRules{}); err == nil {
		t.Error("no error for dialect 0")
	}
	steps, notes, err := SchemaChange(DialectMySQL, nil, nil, ddMyOrders, ddMyOrders, ColumnRules{})
	if steps != nil || notes != nil || err != nil {
		t.Errorf("nothing to nothing: %v %v %v", steps, notes, err)
	}
	excluded := ColumnRules{Exclude: []string{"id"}}
	if _, _, err := SchemaChange(DialectPostgres, ddOrders(), ddOrders(), ddPGOrders, ddPGOrders, excluded); err == nil {
		t.Error("no error for an excluded key column")
	}
}
