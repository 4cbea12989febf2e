package integration

import (
	"fmt"
	"strings"
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

const fkSource = `
CREATE TABLE parent (id integer PRIMARY KEY, up integer REFERENCES parent, v text);
CREATE TABLE child (id integer PRIMARY KEY, parent_id integer REFERENCES parent, v text);
INSERT INTO parent SELECT g, CASE WHEN g > 1 THEN g / 2 END, repeat('p', 200) || g FROM generate_series(1, 3000) g;
INSERT INTO child SELECT g, 1 + g % 3000, 'c' || g FROM generate_series(1, 500) g;
`

// TestCopyRestartForeignKeys restarts an interrupted copy into target
// tables with foreign keys: among the copied tables (parent references
// itself, child references parent), and from a table the pipeline does
// not copy (note). The first copy fails on a target CHECK the source does
// not have; the restart is refused, naming both tables, while note's key
// stands, and empties and copies the tables once it is gone.
func TestCopyRestartForeignKeys(t *testing.T) {
	for _, mysql := range []bool{false, true} {
		t.Run(map[bool]string{false: "postgres", true: "mariadb"}[mysql], func(t *testing.T) {
			p := newTargetPair(t, mysql)
			psql(t, p.src, fkSource)
			if mysql {
				p.myExec(`CREATE TABLE parent (id int PRIMARY KEY, up int, v longtext, FOREIGN KEY (up) REFERENCES parent (id));
					CREATE TABLE child (id int PRIMARY KEY, parent_id int, v longtext, CONSTRAINT no13 CHECK (id <> 13),
						FOREIGN KEY (parent_id) REFERENCES parent (id));
					CREATE TABLE note (id int PRIMARY KEY, parent_id int, CONSTRAINT note_parent FOREIGN KEY (parent_id) REFERENCES parent (id))`)
			} else {
				psql(t, p.tgt, fkSource[:strings.Index(fkSource, "INSERT")]+`
					ALTER TABLE child ADD CONSTRAINT no13 CHECK (id <> 13);
					CREATE TABLE note (id integer PRIMARY KEY, parent_id integer CONSTRAINT note_parent REFERENCES parent);`)
			}
			args := []string{"init", "--copy", "--jobs", "1", "--tables", "public.parent,public.child"}
			if _, errOut, code := p.decant(args...); code != 1 || !strings.Contains(errOut, "no13") {
				t.Fatalf("init --copy into a target that refuses a row: exit %d, want 1 naming no13:\n%s", code, errOut)
			}
			if mysql {
				p.myExec(`ALTER TABLE child DROP CONSTRAINT no13`)
			} else {
				psql(t, p.tgt, `ALTER TABLE child DROP CONSTRAINT no13`)
			}
			parentRows := p.targetValue(`SELECT COUNT(*) FROM parent`)
			if parentRows == "0" {
				t.Fatal("the failed copy did not copy parent first; the restart would have nothing to empty")
			}
			if !mysql {
				// A key from a table the copy does not empty is refused, and
				// nothing is emptied.
				_, errOut, code := p.decant(args...)
				if code != 1 {
					t.Errorf("restart with a foreign key from outside the copy: exit %d, want 1", code)
				}
				oneLineError(t, "outside foreign key", errOut, "public.parent", "public.note", "note_parent", "DROP CONSTRAINT", "--tables")
				if n := p.targetValue(`SELECT COUNT(*) FROM parent`); n != parentRows {
					t.Errorf("the refused restart changed parent: %s rows, had %s", n, parentRows)
				}
				psql(t, p.tgt, `ALTER TABLE note DROP CONSTRAINT note_parent`)
			}
			if out := p.mustDecant(args...); !strings.Contains(out, "restarting an interrupted initial copy") {
				t.Errorf("init --copy did not say it restarts the copy:\n%s", out)
			}
			if n := p.targetValue(`SELECT COUNT(*) FROM parent`); n != "3000" {
				t.Errorf("parent holds %s rows after the restart, want 3000", n)
			}
			psql(t, p.src, `UPDATE child SET v = 'later' WHERE id < 50; DELETE FROM child WHERE id > 450;`)
			p.mustDecant("run", "--catch-up")
			p.assertEqual()
		})
	}
}

const dkSchema = `
CREATE TABLE dk (id int PRIMARY KEY DEFERRABLE INITIALLY IMMEDIATE, u int UNIQUE DEFERRABLE INITIALLY DEFERRED, v text);
INSERT INTO dk SELECT g, 1000 - g, 'v' || g FROM generate_series(1, 300) g;
`

// TestCreateDeferrableKeys creates a table with a DEFERRABLE primary key
// and unique constraint: PostgreSQL never takes a deferrable key as the
// replica identity, so init refuses the table until it has REPLICA
// IDENTITY FULL; then the PostgreSQL target gets the same deferrable
// constraints, and MariaDB, which cannot defer a unique check, plain
// indexes, with a note. Both with and without --copy (where PostgreSQL
// adds the key after the data).
func TestCreateDeferrableKeys(t *testing.T) {
	for _, mysql := range []bool{false, true} {
		for _, copy := range []bool{false, true} {
			name := map[bool]string{false: "postgres", true: "mariadb"}[mysql] + map[bool]string{false: "", true: "/copy"}[copy]
			t.Run(name, func(t *testing.T) {
				p := newTargetPair(t, mysql)
				psql(t, p.src, dkSchema)
				args := []string{"init", "--create-tables"}
				if copy {
					args = append(args, "--copy")
				}
				_, errOut, code := p.decant(args...)
				if code != 1 {
					t.Errorf("init of a table whose only key is deferrable, without REPLICA IDENTITY FULL: exit %d, want 1", code)
				}
				oneLineError(t, "deferrable key as identity", errOut, "public.dk", "DEFERRABLE", "REPLICA IDENTITY FULL")

				psql(t, p.src, `ALTER TABLE dk REPLICA IDENTITY FULL;`)
				out := p.mustDecant(args...)
				if mysql {
					for _, want := range []string{"primary key (id) is DEFERRABLE on the source", "unique constraint dk_u_key (u) is DEFERRABLE on the source"} {
						if !strings.Contains(out, want) {
							t.Errorf("init did not note %q:\n%s", want, out)
						}
					}
					keys := p.myValue(`SELECT GROUP_CONCAT(CONCAT(INDEX_NAME, ' ', IF(NON_UNIQUE, 'plain', 'unique'), ' (', COLUMN_NAME, ')')
						ORDER BY INDEX_NAME SEPARATOR ', ') FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'dk'`)
					if want := "dk_pkey plain (id), dk_u_key plain (u)"; keys != want {
						t.Errorf("MariaDB keys of dk: %s, want %s", keys, want)
					}
				} else {
					keys := queryValue(t, p.tgt, `SELECT string_agg(format('%s %s %s %s', conname, contype,
							CASE WHEN condeferrable THEN 'deferrable' ELSE 'immediate' END, CASE WHEN condeferred THEN 'deferred' ELSE '' END), ', ' ORDER BY conname)
						FROM pg_constraint WHERE conrelid = 'dk'::regclass`)
					if want := "dk_pkey p deferrable , dk_u_key u deferrable deferred"; keys != want {
						t.Errorf("PostgreSQL keys of dk: %s, want %s", keys, want)
					}
				}
				if copy {
					p.assertEqual()
				}
			})
		}
	}
}

// TestCreateTablesMariaDBLimits: an index that names a column twice is
// created with each column once (MariaDB refuses a repeat), and a table
// wider than InnoDB's 1017 columns is refused at init, with the other
// refusals and before any table is created.
func TestCreateTablesMariaDBLimits(t *testing.T) {
	p := newMySQLPair(t)
	cols := make([]string, 1100)
	cols[0] = "id int PRIMARY KEY"
	for i := 1; i < len(cols); i++ {
		cols[i] = fmt.Sprintf("c%d int", i)
	}
	psql(t, p.src, `CREATE TABLE fine (id int PRIMARY KEY, v text);
		CREATE TABLE rep (a int PRIMARY KEY, b text, c int);
		CREATE INDEX rep_a_b_a ON rep (a, b, a);
		CREATE UNIQUE INDEX rep_c_a_c ON rep (c, a, c);
		INSERT INTO rep VALUES (1, 'x', 10), (2, 'y', 20);
		CREATE TABLE nokey (v text);
		CREATE TABLE wide (`+strings.Join(cols, ", ")+`);`)
	tables := `SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`

	_, errOut, code := p.decant("init", "--create-tables")
	if code != 1 {
		t.Errorf("init with a table too wide for InnoDB and a table without identity: exit %d, want 1", code)
	}
	oneLineError(t, "too wide and no identity", errOut, "public.wide has 1100 columns, more than the 1017", "exclude", "public.nokey")
	_, errOut, code = p.decant("init", "--create-tables", "--tables", "public.fine,public.wide")
	if code != 1 {
		t.Errorf("init with a table too wide for InnoDB: exit %d, want 1", code)
	}
	oneLineError(t, "too wide", errOut, "public.wide has 1100 columns, more than the 1017")
	if n := p.myValue(tables); n != "0" {
		t.Errorf("refused inits created %s tables on the target", n)
	}

	p.mustDecant("init", "--copy", "--create-tables", "--tables", "public.fine,public.rep")
	indexes := p.myValue(`SELECT GROUP_CONCAT(CONCAT(INDEX_NAME, ':', COLUMN_NAME) ORDER BY INDEX_NAME, SEQ_IN_INDEX SEPARATOR ' ')
		FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'rep'`)
	if want := "PRIMARY:a rep_a_b_a:a rep_a_b_a:b rep_c_a_c:c rep_c_a_c:a"; indexes != want {
		t.Errorf("indexes of rep on MariaDB: %s, want %s", indexes, want)
	}
	psql(t, p.src, `DROP TABLE nokey, wide;`)
	p.assertEqual()
}
