package bulk

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// task is one unit of copying: a block range of a source table (or the
// whole table), as stored in the copy state.
type task struct {
	Table source.TableName
	N     int // 0-based number within the table
	AsOf  source.LSN
	// First and End bound the range in blocks: ctid >= (First,0) when
	// First > 0, ctid < (End,0) when End >= 0. 0 and -1: the whole table.
	First, End int64
	// Estimates made when the plan was stored.
	EstRows, EstBytes int64
	Done              bool
	Rows, Bytes       int64 // what was copied, once Done
}

// where renders the task's ctid condition, "" for the whole table.
func (t *task) where() string {
	var conds []string
	if t.First > 0 {
		conds = append(conds, "ctid >= '("+strconv.FormatInt(t.First, 10)+",0)'::tid")
	}
	if t.End >= 0 {
		conds = append(conds, "ctid < '("+strconv.FormatInt(t.End, 10)+",0)'::tid")
	}
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// String names the task in errors and logs: "task 2 of blocks 1024-2047".
func (t *task) String() string {
	switch {
	case t.First == 0 && t.End < 0:
		return "whole table"
	case t.End < 0:
		return fmt.Sprintf("task %d, blocks %d-end", t.N+1, t.First)
	}
	return fmt.Sprintf("task %d, blocks %d-%d", t.N+1, t.First, t.End-1)
}

// size is what the source says about a table as the snapshot sees it.
type size struct {
	Bytes  int64 // pg_relation_size (summed over partitions)
	Blocks int64 // blocks of the largest heap (the table, or its largest partition)
	Rows   int64 // estimated rows; 0 when unknown
	Ranges bool  // the source can read block ranges alone (TID Range Scan, PostgreSQL 14+)
}

// split cuts a table into tasks of about splitBytes: consecutive block
// ranges, the last open-ended so that rows in blocks past the estimate are
// copied too. A partitioned table is cut by the block numbers of its
// partitions (each range reads those blocks of every partition). Pure and
// deterministic.
func split(table source.TableName, asOf source.LSN, sz size, splitBytes int64) []task {
	n := int64(1)
	if splitBytes > 0 && sz.Bytes > splitBytes {
		n = (sz.Bytes + splitBytes - 1) / splitBytes
	}
	if !sz.Ranges || n <= 1 || sz.Blocks < 2 {
		return []task{{Table: table, AsOf: asOf, First: 0, End: -1, EstRows: sz.Rows, EstBytes: sz.Bytes}}
	}
	n = min(n, sz.Blocks)
	per := (sz.Blocks + n - 1) / n
	n = (sz.Blocks + per - 1) / per
	tasks := make([]task, n)
	var rows, bytes int64
	for i := range n {
		t := task{Table: table, N: int(i), AsOf: asOf, First: i * per, End: (i + 1) * per}
		if i == n-1 {
			t.End = -1
			t.EstRows, t.EstBytes = sz.Rows-rows, sz.Bytes-bytes
		} else {
			t.EstRows, t.EstBytes = sz.Rows*per/sz.Blocks, sz.Bytes*per/sz.Blocks
		}
		rows, bytes = rows+t.EstRows, bytes+t.EstBytes
		tasks[i] = t
	}
	return tasks
}

// measureSQL reads a table's heap sizes and row estimate: the table alone
// (a plain table's inheritance children are not copied: COPY reads ONLY
// the table), or every leaf partition of a partitioned table. The row
// estimate scales reltuples to the current size as the planner does;
// reltuples < 0 (never vacuumed or analysed) counts as unknown.
const measureSQL = `WITH RECURSIVE tree(oid) AS (
		SELECT $1::oid
		UNION ALL SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid WHERE $2
	), heaps AS (
		SELECT c.relpages, c.reltuples, pg_relation_size(c.oid) AS bytes,
			ceil(pg_relation_size(c.oid) / current_setting('block_size')::float8) AS blocks
		FROM tree JOIN pg_class c ON c.oid = tree.oid WHERE c.relkind = 'r'
	)
	SELECT coalesce(sum(bytes), 0)::bigint, coalesce(max(blocks), 0)::bigint,
		coalesce(sum(CASE WHEN reltuples < 0 THEN 0 WHEN relpages > 0 THEN reltuples / relpages * blocks ELSE reltuples END), 0)::bigint
	FROM heaps`

// measure reads a table's size in the snapshot transaction.
func (s *srcSession) measure(ctx context.Context, name source.TableName) (size, bool, error) {
	var oid uint32
	var kind string
	err := s.conn.QueryRow(ctx, `SELECT c.oid, c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, name.Schema, name.Name).Scan(&oid, &kind)
	if err != nil {
		return size{}, false, fmt.Errorf("find source table %s: %w", name, err)
	}
	var sz size
	if err := s.conn.QueryRow(ctx, measureSQL, oid, kind == "p").Scan(&sz.Bytes, &sz.Blocks, &sz.Rows); err != nil {
		return size{}, false, fmt.Errorf("read the size of source table %s: %w", name, err)
	}
	sz.Ranges = s.version >= 140000
	return sz, kind == "p", nil
}

// selectSQL is the source query of a task: the written columns, in plan
// order, of the task's block range.
func selectSQL(def *source.TableDef, partitioned bool, p *mapping.Plan, t *task, binary bool) string {
	var b strings.Builder
	b.WriteString("COPY (SELECT ")
	for n, i := range p.Cols {
		if n > 0 {
			b.WriteString(", ")
		}
		b.WriteString(mapping.QuotePG(p.Rel.Columns[i].Name))
	}
	b.WriteString(" FROM ")
	if !partitioned {
		b.WriteString("ONLY ")
	}
	b.WriteString(mapping.QuotePGTable(def.Name))
	b.WriteString(t.where())
	b.WriteString(") TO STDOUT")
	if binary {
		b.WriteString(" (FORMAT binary)")
	}
	return b.String()
}
