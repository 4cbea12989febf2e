package mysql

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

func testPlan(t *testing.T, identity source.Identity, pk []string, cols ...string) (*mapping.Plan, []comparer) {
	t.Helper()
	rel := &source.Relation{Schema: "public", Name: "t", Identity: identity}
	tgt := mapping.TargetTable{Name: source.TableName{Name: "t"}, PrimaryKey: pk}
	for i, c := range cols {
		rel.Columns = append(rel.Columns, source.Column{Name: c, Key: identity != source.IdentityFull && i == 0})
		tgt.Columns = append(tgt.Columns, mapping.TargetColumn{Name: c})
	}
	p, err := mapping.NewPlan(rel, tgt, mapping.ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	cmp := make([]comparer, len(cols))
	for i := range cmp {
		cmp[i] = compareWith(mapping.MySQLColumn{DataType: "int"}, true)
	}
	return p, cmp
}

func TestRender(t *testing.T) {
	keyed, kc := testPlan(t, source.IdentityDefault, nil, "id", "na`me", "v")
	head, marks := insertHead(keyed)
	if head != "INSERT INTO `t` (`id`, `na``me`, `v`) VALUES " || marks != "(?, ?, ?)" {
		t.Errorf("insert: %q %q", head, marks)
	}
	if got := renderUpdate(keyed, []bool{false, true, false}, mapping.Match{}, kc); got != "UPDATE `t` SET `na``me` = ? WHERE `id` = ?" {
		t.Errorf("update: %s", got)
	}
	if got := renderUpdate(keyed, []bool{false, false, false}, mapping.Match{}, kc); got != "UPDATE `t` SET `id` = `id` WHERE `id` = ?" {
		t.Errorf("update with nothing to set: %s", got)
	}
	head, marks = deleteInHead(keyed)
	if head != "DELETE FROM `t` WHERE (`id`) IN (" || marks != "(?)" {
		t.Errorf("delete in: %q %q", head, marks)
	}

	full, fc := testPlan(t, source.IdentityFull, nil, "a", "b")
	if got := renderDelete(full, mapping.Match{Whole: true}, fc); got != "DELETE FROM `t` WHERE `a` <=> ? AND `b` <=> ? LIMIT 1" {
		t.Errorf("keyless delete: %s", got)
	}
	if got := renderUpdate(full, []bool{true, true}, mapping.Match{Whole: true}, fc); got != "UPDATE `t` SET `a` = ?, `b` = ? WHERE `a` <=> ? AND `b` <=> ? LIMIT 1" {
		t.Errorf("keyless update: %s", got)
	}
	withPK, pc := testPlan(t, source.IdentityFull, []string{"b"}, "a", "b")
	// A target key is no proof of identity under FULL (the source may not
	// have it, or have it deferrable): the whole old row finds the row.
	if got := renderDelete(withPK, withPK.MatchOf(&source.Change{Old: []source.Value{{}, {}}}), pc); got != "DELETE FROM `t` WHERE `a` <=> ? AND `b` <=> ? LIMIT 1" {
		t.Errorf("FULL identity with a target key: %s", got)
	}
}

func TestCompareWith(t *testing.T) {
	for _, c := range []struct {
		col   mapping.MySQLColumn
		maria bool
		want  string
	}{
		{mapping.MySQLColumn{DataType: "float"}, true, "`c` <=> CAST(? AS FLOAT)"},
		{mapping.MySQLColumn{DataType: "json"}, false, "`c` <=> CAST(? AS JSON)"},
		{mapping.MySQLColumn{DataType: "json"}, true, "`c` <=> ?"},
		{mapping.MySQLColumn{DataType: "varchar"}, false, "`c` <=> ?"},
	} {
		if got := compareWith(c.col, c.maria)("c", true); got != c.want {
			t.Errorf("%+v maria=%v: %s, want %s", c.col, c.maria, got, c.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	dup := &mysql.MySQLError{Number: 1062, Message: "Duplicate entry 'SECRET-1' for key 'PRIMARY'"}
	err := describe(dup)
	if want := "Duplicate entry '…' for key '…' (MySQL error 1062)"; err.Error() != want {
		t.Errorf("duplicate entry: %s", err)
	}
	if apply.Transient(err) {
		t.Error("a duplicate entry is not transient")
	}
	if !errors.As(err, new(*mysql.MySQLError)) {
		t.Error("the driver error is not kept for errors.As")
	}
	for _, n := range []uint16{1213, 1205, 1927} {
		if !apply.Transient(describe(&mysql.MySQLError{Number: n, Message: "x"})) {
			t.Errorf("error %d should be retried", n)
		}
	}
	if !apply.Transient(describe(mysql.ErrInvalidConn)) {
		t.Error("a lost connection should be retried")
	}
	for _, tt := range []struct {
		number    uint16
		msg, want string
	}{
		// The server does not escape a quote in the value it quotes:
		// every literal goes, so that no piece of it is left quoted.
		{1062, "Duplicate entry 'a' for key 'SECRET' for key 'PRIMARY'", "Duplicate entry '…' for key '…' for key '…' (MySQL error 1062)"},
		{1366, "Incorrect integer value: 'abc' for column `db`.`t`.`n` at row 1", "Incorrect integer value: '…' for column `db`.`t`.`n` at row 1 (MySQL error 1366)"},
		{3140, `Invalid JSON text: "Missing a name" at position 1 in value for column 't.j'.`, `Invalid JSON text: '…' at position 1 in value for column '…'. (MySQL error 3140)`},
	} {
		if got := describe(&mysql.MySQLError{Number: tt.number, Message: tt.msg}).Error(); got != tt.want {
			t.Errorf("describe(%q)\n = %q\nwant %q", tt.msg, got, tt.want)
		}
	}
}

func TestParseDSN(t *testing.T) {
	cfg, err := ParseDSN("mysql://u:p%40ss@db.example:3307/shop?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "u" || cfg.Passwd != "p@ss" || cfg.Addr != "db.example:3307" || cfg.DBName != "shop" || cfg.Timeout.String() != "5s" {
		t.Errorf("URL form: %+v", cfg)
	}
	if !cfg.InterpolateParams || !cfg.MultiStatements || !cfg.ClientFoundRows || cfg.Params["time_zone"] != "'+00:00'" || cfg.Params["foreign_key_checks"] != "0" {
		t.Errorf("session settings missing: %+v", cfg)
	}
	cfg, err = ParseDSN("u:p@tcp(127.0.0.1:3306)/shop")
	if err != nil || cfg.DBName != "shop" || cfg.Addr != "127.0.0.1:3306" {
		t.Errorf("driver form: %+v %v", cfg, err)
	}
	if _, err := ParseDSN("mysql://u@h:3306/"); err == nil {
		t.Error("a DSN without a database was accepted")
	}
	for _, bad := range []string{
		"mysql://u:hunter2/x@h/db",          // url.Parse takes u:hunter2 for the host
		"mysql://u:hun ter2@h/db",           // a space in the userinfo
		"mysql://u:hunter2#x@h/db",          // a "#" in the password
		"u:hunter2@tcp(h/db",                // an address not closed
		"u:hunter2@tcp(h)/db?parseTime=hun", // a bad parameter
	} {
		_, err := ParseDSN(bad)
		if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "hun ter2") {
			t.Errorf("ParseDSN(%q) = %v, want an error without the password", bad, err)
		}
	}
	if !IsDSN("mysql://h/db") || !IsDSN("u:p@tcp(h:1)/db") || IsDSN("postgres://h/db") {
		t.Error("IsDSN")
	}
}
