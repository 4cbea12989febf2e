package integration

import (
	"testing"
)

// Initial copy and --create-tables on tables whose shape is unusual: types
// without binary send/receive, foreign keys among copied tables,
// deferrable keys, repeated index columns, very wide tables.

// aclSchema has aclitem and aclitem[] columns, types without binary send
// and receive functions, next to ordinary ones (which alone would be
// copied in binary). The values name only the postgres role, which both
// servers have: aclitem's input checks that the roles exist.
const aclSchema = `
CREATE TABLE acl (id integer PRIMARY KEY, a aclitem, al aclitem[], v text, at timestamptz, n numeric(10,2));
INSERT INTO acl SELECT g,
	CASE WHEN g % 5 = 0 THEN NULL ELSE ('postgres=' || (ARRAY['r', 'arw', 'arwdDxt*'])[1 + g % 3] || '/postgres')::aclitem END,
	CASE WHEN g % 7 = 0 THEN NULL ELSE ARRAY['=r/postgres'::aclitem, 'postgres=arwdDxt/postgres'::aclitem] END,
	'v' || g, '2024-01-01'::timestamptz + g * interval '1 hour', g * 1.5
	FROM generate_series(1, 500) g;
`

// TestCopyWithoutBinaryIO copies a table with columns of types that have
// no binary send/receive into PostgreSQL (text COPY for that table), and
// refuses it at init for MariaDB, where aclitem has no mapping.
func TestCopyWithoutBinaryIO(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		p := newPair(t)
		psql(t, p.src, aclSchema)
		p.mustDecant("init", "--copy", "--create-tables")
		p.assertEqual()
	})
	t.Run("mariadb", func(t *testing.T) {
		p := newMySQLPair(t)
		psql(t, p.src, aclSchema)
		_, errOut, code := p.decant("init", "--copy", "--create-tables")
		if code != 1 {
			t.Errorf("init --copy of an aclitem column into MariaDB: exit %d, want 1", code)
		}
		oneLineError(t, "aclitem", errOut, "public.acl", "column a", "aclitem", "exclude")
		if n := p.myValue(`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'acl'`); n != "0" {
			t.Errorf("the refused init created the target table")
		}
		if n := queryValue(t, p.src, `SELECT count(*)::text FROM pg_replication_slots WHERE slot_name = '`+p.name+`'`); n != "0" {
			t.Errorf("the refused init left a slot")
		}
	})
}
