package pg

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/source"
)

// maxParam is the highest $n in sql.
func maxParam(sql string) int {
	n := 0
	for _, m := range regexp.MustCompile(`\$(\d+)`).FindAllStringSubmatch(sql, -1) {
		v, _ := strconv.Atoi(m[1])
		n = max(n, v)
	}
	return n
}

// TestConflictSQL: the statements that resolve conflicts number their
// parameters on from the change's own, as the writer appends them, and
// log only when the change met its conflict.
func TestConflictSQL(t *testing.T) {
	items := table{schema: "public", name: "items", identity: source.IdentityDefault, pk: []string{"id"},
		cols: []col{{name: "id", key: true, typ: "integer"}, {name: "v", typ: "text"}}}
	full := table{schema: "public", name: "fitems", identity: source.IdentityFull, pk: []string{"id"},
		cols: []col{{name: "id", typ: "integer"}, {name: "v", typ: "text"}}}
	p := &plan{Plan: items.plan(t)}
	p.insertSQL = renderInsert(p.Plan)

	upsert := "WITH w AS (" + p.insertSQL + renderUpsert(p.Plan) + " RETURNING xmax <> 0 AS existed)" + renderLog(3, "FROM w WHERE w.existed")
	if !strings.Contains(upsert, `ON CONFLICT ("id") DO UPDATE SET "v" = EXCLUDED."v"`) || maxParam(upsert) != 2+logParams {
		t.Errorf("insert_exists=apply: %s", upsert)
	}
	ins := renderInsertIfNone(p.Plan, 5)
	if want := `INSERT INTO "public"."items" ("id", "v") SELECT $5::integer, $6::text WHERE NOT EXISTS (SELECT 1 FROM w) RETURNING 1`; ins != want {
		t.Errorf("insert if none:\n%s\nwant\n%s", ins, want)
	}

	fp := &plan{Plan: full.plan(t)}
	del := renderDelete(fp.Plan, match(fp.Plan))
	n := whereParams(fp.Plan, match(fp.Plan))
	sql := judgedSQL(fp, del, n, apply.DeleteMissing, apply.DeleteDiffers, false)
	// change's, one key value, two policies, six of the log's
	if got, want := maxParam(sql), n+1+2+logParams-2; got != want {
		t.Errorf("judged delete takes $%d, want $%d:\n%s", got, want, sql)
	}
	for _, want := range []string{`WHEN EXISTS (SELECT 1 FROM ONLY "public"."fitems" WHERE "id" = $3::integer) THEN 'delete_differs' ELSE 'delete_missing' END`,
		"WHERE j.policy <> 'error'", "SELECT kind, policy FROM j"} {
		if !strings.Contains(sql, want) {
			t.Errorf("judged delete lacks %q:\n%s", want, sql)
		}
	}
	upd := judgedSQL(fp, "UPDATE x", 4, apply.UpdateMissing, apply.UpdateDiffers, true)
	if got, want := maxParam(upd), 4+1+2+logParams-2+2; got != want || !strings.Contains(upd, "WHERE EXISTS (SELECT 1 FROM j WHERE j.policy = 'apply')") {
		t.Errorf("judged update with apply takes $%d, want $%d:\n%s", got, want, upd)
	}
}
