package pgtarget

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

// Transactions streamed while in progress, against a real PostgreSQL
// through the recording proxy (see target_test.go).

// inSub puts changes in (sub)transaction sub.
func inSub(sub uint64, changes ...source.Change) []source.Change {
	for i := range changes {
		changes[i].Sub = sub
	}
	return changes
}

func streamedTxn(xid uint64) *source.Txn { return &source.Txn{Xid: xid, Streamed: true} }

func insertRows(rel *source.Relation, from, to int, v string) []source.Change {
	var out []source.Change
	for i := from; i <= to; i++ {
		out = append(out, recInsert(rel, fmt.Sprint(i), v))
	}
	return out
}

func TestStreamTarget(t *testing.T) {
	srv := harness.PostgresT(t, harness.PostgresOptions{})

	t.Run("subtransactions, main commits meanwhile, commit", func(t *testing.T) {
		f := newRecFixture(t, srv)
		tx := streamedTxn(500)
		apply := func(changes []source.Change) {
			t.Helper()
			if err := f.target.StreamApply(f.ctx, tx, changes); err != nil {
				t.Fatalf("StreamApply: %v", err)
			}
		}
		abort := func(sub uint64) {
			t.Helper()
			if err := f.target.StreamAbort(f.ctx, 500, sub); err != nil {
				t.Fatalf("StreamAbort(%d): %v", sub, err)
			}
		}
		apply(slices.Concat(
			inSub(500, recInsert(recT, "1", "top")),
			inSub(501, recInsert(recT, "2", "a")),
			inSub(502, recInsert(recT, "3", "b"), recUpdate(recT, nil, recText("1", "by 502"))),
		))
		abort(502) // 3 and the update go; 1 and 2 stay
		// A run long enough for COPY inside a subtransaction, rolled back.
		apply(inSub(503, insertRows(recT, 100, 120, "copied")...))
		abort(503)
		abort(504) // nothing of it reached the target: nothing to do
		// The main connection commits a transaction while the stream is
		// open; the stream's rows are not visible.
		if err := f.target.Apply(f.ctx, &source.Txn{Xid: 7, Commit: 300}, []source.Change{recInsert(recK, "1", "main")}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 300, End: 310, Xid: 7}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		f.wantRows(t, `SELECT a, b FROM k`, "1|main")
		f.wantRows(t, `SELECT id FROM t`)
		apply(slices.Concat(
			inSub(500, recInsert(recT, "5", "top")),
			inSub(505, recUpdate(recT, nil, recText("1", "changed"))),
		))
		if err := f.target.StreamCommit(f.ctx, 500, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 400, End: 410, Xid: 500, CommitTime: recCommitAt}); err != nil {
			t.Fatalf("StreamCommit: %v", err)
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|changed", "2|a", "5|top")
		if got, want := f.checkpointRow(t), "0/190|0/19A|500|2024-05-06 07:08:09.123456"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}

		tr := f.rec.trace()
		t.Logf("trace:\n%s", recShow(tr))
		// The main connection was open before the trace began: the one
		// StartupMessage is the stream's own connection, closed at its commit.
		if n := recCount(tr, "StartupMessage"); n != 1 {
			t.Errorf("%d connections opened, want 1 for the stream", n)
		}
		recWaitCount(t, f.rec, "Terminate", 1) // the stream's connection, closed after its commit
		for _, e := range []string{"Parse SAVEPOINT s_501", "Parse SAVEPOINT s_502", "Parse ROLLBACK TO SAVEPOINT s_502",
			"Parse SAVEPOINT s_503", recCopyT, "Parse ROLLBACK TO SAVEPOINT s_503", "Parse SAVEPOINT s_505"} {
			if n := recCount(tr, e); n != 1 {
				t.Errorf("%q sent %d times, want once", e, n)
			}
		}
		for _, e := range []string{"Parse SAVEPOINT s_500", "Parse SAVEPOINT s_504", "Parse ROLLBACK TO SAVEPOINT s_504"} {
			if slices.Contains(tr, e) {
				t.Errorf("trace has %q", e)
			}
		}
		// In order: the savepoint before its rows, the COPY between its
		// savepoint and the rollback to it.
		order := []string{"Parse SAVEPOINT s_502", "Parse ROLLBACK TO SAVEPOINT s_502", "Parse SAVEPOINT s_503", recCopyT, "Parse ROLLBACK TO SAVEPOINT s_503"}
		last := -1
		for _, e := range order {
			i := slices.Index(tr, e)
			if i < last {
				t.Errorf("%q out of order", e)
			}
			last = i
		}
		if f.target.Session().Streams != 0 {
			t.Errorf("%d streams left open", f.target.Session().Streams)
		}
	})

	// The source released the locks of a rolled-back subtransaction, so a
	// later transaction may change those rows before the streamed one
	// commits; and a scan for a keyless row passes rows the stream has
	// locked. Neither may make the main connection wait.
	t.Run("main connection does not wait for a stream", func(t *testing.T) {
		f := newRecFixture(t, srv)
		if _, err := f.db.Exec(f.ctx, `INSERT INTO t VALUES (1, 'a'), (2, 'b'); INSERT INTO k VALUES (1, 'x'), (2, 'y')`); err != nil {
			t.Fatal(err)
		}
		if err := f.target.StreamApply(f.ctx, streamedTxn(1000), slices.Concat(
			inSub(1000, recUpdate(recK, recText("1", "x"), recText("1", "s"))),
			// The COPY of the run sends the update before the rollback.
			inSub(1001, append([]source.Change{recUpdate(recT, nil, recText("1", "sub"))}, insertRows(recT, 100, 109, "sub")...)...),
		)); err != nil {
			t.Fatalf("StreamApply: %v", err)
		}
		if err := f.target.StreamAbort(f.ctx, 1000, 1001); err != nil {
			t.Fatalf("StreamAbort: %v", err)
		}
		ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
		defer cancel()
		if err := f.target.Apply(ctx, &source.Txn{Xid: 9, Commit: 300}, []source.Change{
			recUpdate(recT, nil, recText("1", "main")),
			recUpdate(recK, recText("2", "y"), recText("2", "m")),
		}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := f.target.Commit(ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 300, End: 310, Xid: 9}); err != nil {
			t.Fatalf("Commit (blocked by the stream?): %v", err)
		}
		if err := f.target.StreamCommit(f.ctx, 1000, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 400, End: 410, Xid: 1000}); err != nil {
			t.Fatalf("StreamCommit: %v", err)
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|main", "2|b")
		f.wantRows(t, `SELECT a, b FROM k ORDER BY a`, "1|s", "2|m")
	})

	t.Run("abort of the whole transaction", func(t *testing.T) {
		f := newRecFixture(t, srv)
		// The update after the run sends the run as COPY, inside the
		// transaction, before the abort.
		changes := append(insertRows(recT, 1, 20, "gone"), recUpdate(recT, nil, recText("1", "x")))
		if err := f.target.StreamApply(f.ctx, streamedTxn(600), inSub(600, changes...)); err != nil {
			t.Fatalf("StreamApply: %v", err)
		}
		if err := f.target.StreamAbort(f.ctx, 600, 0); err != nil {
			t.Fatalf("StreamAbort: %v", err)
		}
		if err := f.target.StreamAbort(f.ctx, 600, 0); err != nil {
			t.Fatalf("StreamAbort again: %v", err)
		}
		recWaitCount(t, f.rec, "Terminate", 1)
		tr := f.rec.trace()
		if !slices.Contains(tr, "CopyDone") || recCount(tr, recRollback) != 1 {
			t.Errorf("trace:\n%s", recShow(tr))
		}
		f.wantRows(t, `SELECT id FROM t`)
		if got, want := f.checkpointRow(t), "0/64|0/64|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
		if f.target.Session().Streams != 0 {
			t.Errorf("%d streams left open", f.target.Session().Streams)
		}
	})

	t.Run("two streams, one commits, the rest rolled back", func(t *testing.T) {
		f := newRecFixture(t, srv)
		if err := f.target.StreamApply(f.ctx, streamedTxn(700), inSub(700, recInsert(recT, "1", "a"))); err != nil {
			t.Fatalf("StreamApply 700: %v", err)
		}
		if err := f.target.StreamApply(f.ctx, streamedTxn(701), inSub(701, recInsert(recT, "2", "b"))); err != nil {
			t.Fatalf("StreamApply 701: %v", err)
		}
		if err := f.target.StreamApply(f.ctx, streamedTxn(702), inSub(702, recInsert(recT, "3", "c"))); err != nil {
			t.Fatalf("StreamApply 702: %v", err)
		}
		if err := f.target.StreamCommit(f.ctx, 701, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 400, End: 410, Xid: 701}); err != nil {
			t.Fatalf("StreamCommit: %v", err)
		}
		if f.target.Session().Streams != 2 {
			t.Fatalf("%d streams open, want 2", f.target.Session().Streams)
		}
		f.target.StreamRollbackAll(f.ctx)
		if f.target.Session().Streams != 0 {
			t.Errorf("%d streams left open", f.target.Session().Streams)
		}
		if n := recCount(f.rec.trace(), "StartupMessage"); n != 3 {
			t.Errorf("%d connections, want one per stream", n)
		}
		recWaitCount(t, f.rec, "Terminate", 3)
		f.wantRows(t, `SELECT id, v FROM t`, "2|b")
		if got, want := f.checkpointRow(t), "0/190|0/19A|701|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
		// The main connection is still usable.
		if err := f.target.Apply(f.ctx, &source.Txn{Xid: 8, Commit: 500}, []source.Change{recInsert(recT, "4", "main")}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 500, End: 510, Xid: 8}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		f.wantRows(t, `SELECT id FROM t ORDER BY id`, "2", "4")
	})

	t.Run("Close closes the streams", func(t *testing.T) {
		f := newRecFixture(t, srv)
		if err := f.target.StreamApply(f.ctx, streamedTxn(750), inSub(750, insertRows(recT, 1, 10, "x")...)); err != nil {
			t.Fatalf("StreamApply: %v", err)
		}
		f.target.Close(f.ctx)
		if f.target.Session().Streams != 0 {
			t.Errorf("%d streams left open", f.target.Session().Streams)
		}
		recWaitCount(t, f.rec, "Terminate", 2) // the stream's and the main one
		f.wantRows(t, `SELECT id FROM t`)
		if _, err := f.target.Open(f.ctx); err != nil {
			t.Fatalf("Open: %v", err)
		}
	})

	t.Run("errors name the xid and table", func(t *testing.T) {
		f := newRecFixture(t, srv)
		if err := f.target.StreamApply(f.ctx, streamedTxn(800), inSub(801, recUpdate(recT, nil, recText("987654", "SECRET")))); err != nil {
			t.Fatalf("StreamApply: %v", err)
		}
		err := f.target.StreamCommit(f.ctx, 800, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 400, End: 410, Xid: 800})
		var ae *apply.Error
		if !errors.As(err, &ae) || ae.Op != "update" || ae.Table != recT.Table() || ae.Xid != 800 {
			t.Fatalf("StreamCommit = %v, want the update's *apply.Error", err)
		}
		msg := err.Error()
		t.Logf("error: %s", msg)
		for _, want := range []string{"xid 800 (in progress", "public.t", "no target row matches"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not mention %q", msg, want)
			}
		}
		if strings.Contains(msg, "SECRET") || strings.Contains(msg, "987654") {
			t.Errorf("error %q contains row values", msg)
		}
		if f.target.Session().Streams != 0 {
			t.Errorf("the failed stream is still open")
		}
		if slices.Contains(f.rec.trace(), recCommit) {
			t.Errorf("COMMIT sent after a failure")
		}
		if got, want := f.checkpointRow(t), "0/64|0/64|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("the stream's session replicates like the main one", func(t *testing.T) {
		f := newRecFixture(t, srv)
		// An ordinary trigger fires only outside session_replication_role = replica.
		if _, err := f.db.Exec(f.ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE 'trigger fired'; END $$;
			CREATE TRIGGER refuse BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
			t.Fatal(err)
		}
		if err := f.target.StreamApply(f.ctx, streamedTxn(900), inSub(900, recInsert(recT, "1", "a"))); err != nil {
			t.Fatalf("StreamApply: %v", err)
		}
		if err := f.target.StreamCommit(f.ctx, 900, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 400, End: 410, Xid: 900}); err != nil {
			t.Fatalf("StreamCommit: %v", err)
		}
		f.wantRows(t, `SELECT id, v FROM t`, "1|a")
	})

	t.Run("commit of a stream that wrote nothing", func(t *testing.T) {
		f := newRecFixture(t, srv)
		if err := f.target.StreamCommit(f.ctx, 950, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 400, End: 410, Xid: 950}); err != nil {
			t.Fatalf("StreamCommit: %v", err)
		}
		want := recSeq([]string{recCheckpoint}, recExec, []string{"Sync"})
		if tr := f.rec.trace(); !slices.Equal(tr, want) {
			t.Errorf("trace:\n%s\nwant:\n%s", recShow(tr), recShow(want))
		}
		if got, want := f.checkpointRow(t), "0/190|0/19A|950|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("schema change refused", func(t *testing.T) {
		f := newRecFixture(t, srv)
		err := f.target.StreamApply(f.ctx, streamedTxn(990), []source.Change{{Op: source.OpDDL, Sub: 990, DDL: &source.DDL{Tag: "ALTER TABLE"}}})
		if !errors.Is(err, apply.ErrStreamedDDL) {
			t.Fatalf("StreamApply = %v, want ErrStreamedDDL", err)
		}
		if f.target.Session().Streams != 0 || slices.Contains(f.rec.trace(), "StartupMessage") {
			t.Errorf("a connection was opened for a refused change")
		}
	})
}
