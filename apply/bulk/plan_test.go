package bulk

import (
	"strings"
	"testing"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

var big = source.TableName{Schema: "public", Name: "big"}

func TestSplitSmallOrUnsplittable(t *testing.T) {
	for _, sz := range []size{
		{Bytes: 1 << 20, Blocks: 128, Rows: 1000, Ranges: true},    // below splitBytes
		{Bytes: 1 << 30, Blocks: 131072, Rows: 1e6, Ranges: false}, // no TID Range Scan
		{Bytes: 1 << 30, Blocks: 1, Rows: 1e6, Ranges: true},       // one block
	} {
		tasks := split(big, 7, sz, 64<<20)
		if len(tasks) != 1 {
			t.Fatalf("%+v: %d tasks, want 1", sz, len(tasks))
		}
		got := tasks[0]
		if got.First != 0 || got.End != -1 || got.EstRows != sz.Rows || got.EstBytes != sz.Bytes || got.AsOf != 7 {
			t.Errorf("%+v: task %+v", sz, got)
		}
		if got.where() != "" || got.String() != "whole table" {
			t.Errorf("whole table task renders %q, %q", got.where(), got.String())
		}
	}
}

func TestSplitRanges(t *testing.T) {
	sz := size{Bytes: 1000 * 8192, Blocks: 1000, Rows: 10000, Ranges: true}
	tasks := split(big, 1, sz, 300*8192)
	if len(tasks) != 4 {
		t.Fatalf("%d tasks, want 4", len(tasks))
	}
	var rows, bytes int64
	next := int64(0)
	for i, task := range tasks {
		if task.N != i || task.First != next {
			t.Errorf("task %d: %+v, want N %d First %d", i, task, i, next)
		}
		if i < len(tasks)-1 {
			if task.End != task.First+250 {
				t.Errorf("task %d: End %d, want %d", i, task.End, task.First+250)
			}
			next = task.End
		} else if task.End != -1 {
			t.Errorf("last task is not open-ended: %+v", task)
		}
		rows += task.EstRows
		bytes += task.EstBytes
	}
	if rows != sz.Rows || bytes != sz.Bytes {
		t.Errorf("estimates sum to %d rows %d bytes, want %d, %d", rows, bytes, sz.Rows, sz.Bytes)
	}
	if w := tasks[0].where(); w != " WHERE ctid < '(250,0)'::tid" {
		t.Errorf("first where %q", w)
	}
	if w := tasks[1].where(); w != " WHERE ctid >= '(250,0)'::tid AND ctid < '(500,0)'::tid" {
		t.Errorf("middle where %q", w)
	}
	if w := tasks[3].where(); w != " WHERE ctid >= '(750,0)'::tid" {
		t.Errorf("last where %q", w)
	}
	if s := tasks[1].String(); s != "task 2, blocks 250-499" {
		t.Errorf("String %q", s)
	}
	if s := tasks[3].String(); s != "task 4, blocks 750-end" {
		t.Errorf("String %q", s)
	}
}

func TestSplitNeverMoreTasksThanBlocks(t *testing.T) {
	tasks := split(big, 1, size{Bytes: 1 << 30, Blocks: 3, Ranges: true}, 1<<20)
	if len(tasks) != 3 {
		t.Fatalf("%d tasks, want 3", len(tasks))
	}
}

func testPlan(t *testing.T) (*source.TableDef, *mapping.Plan) {
	t.Helper()
	def := &source.TableDef{Name: source.TableName{Schema: "s", Name: `odd"name`}, Columns: []source.ColumnDef{
		{Name: "id", Type: 23, TypeMod: -1},
		{Name: "v", Type: 25, TypeMod: -1},
		{Name: "g", Type: 23, TypeMod: -1, Generated: "s"},
		{Name: "blob", Type: 17, TypeMod: -1},
	}}
	rel := def.PublishedRelation()
	if len(rel.Columns) != 3 {
		t.Fatalf("copied relation has %d columns, want 3 (no generated ones)", len(rel.Columns))
	}
	tt := mapping.TargetTable{Name: source.TableName{Name: "t`x"}, Columns: []mapping.TargetColumn{{Name: "id"}, {Name: "v"}, {Name: "blob"}}}
	p, err := mapping.NewPlan(rel, tt, mapping.ColumnRules{})
	if err != nil {
		t.Fatal(err)
	}
	return def, p
}

func TestSelectAndCopyInSQL(t *testing.T) {
	def, p := testPlan(t)
	task := &task{First: 10, End: 20}
	got := selectSQL(def, false, p, task, true)
	want := `COPY (SELECT "id", "v", "blob" FROM ONLY "s"."odd""name" WHERE ctid >= '(10,0)'::tid AND ctid < '(20,0)'::tid) TO STDOUT (FORMAT binary)`
	if got != want {
		t.Errorf("selectSQL:\n got %s\nwant %s", got, want)
	}
	if got := selectSQL(def, true, p, &whole, false); got != `COPY (SELECT "id", "v", "blob" FROM "s"."odd""name") TO STDOUT` {
		t.Errorf("partitioned whole-table select: %s", got)
	}
	if got := copyInSQL(p, false); got != `COPY ""."t`+"`"+`x" ("id", "v", "blob") FROM STDIN` {
		t.Errorf("copyInSQL: %s", got)
	}
}

var whole = task{First: 0, End: -1}

func TestLoadAndInsertSQL(t *testing.T) {
	_, p := testPlan(t)
	head, tail := loadSQL(p, []bool{false, false, true})
	got := head + "decant-1" + tail
	want := "LOAD DATA LOCAL INFILE 'Reader::decant-1' INTO TABLE `t``x` CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' (`id`, `v`, @h2) SET `blob` = UNHEX(@h2)"
	if got != want {
		t.Errorf("loadSQL:\n got %s\nwant %s", got, want)
	}
	ih, marks := insertSQL(p)
	if ih != "INSERT INTO `t``x` (`id`, `v`, `blob`) VALUES " || marks != "(?, ?, ?)" {
		t.Errorf("insertSQL: %q %q", ih, marks)
	}
	if !strings.HasPrefix(head, "LOAD DATA LOCAL") {
		t.Error(head)
	}
}
