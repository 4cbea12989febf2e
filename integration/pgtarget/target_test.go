package pgtarget

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

func TestRecordingTarget(t *testing.T) {
	srv := harness.PostgresT(t, harness.PostgresOptions{})

	t.Run("commit writes rows and checkpoint in one transaction", func(t *testing.T) {
		f := newPlainRecFixture(t, srv)
		txn := &source.Txn{Xid: 7, Commit: 200, CommitTime: recCommitAt}
		err := f.target.Apply(f.ctx, txn, []source.Change{
			recInsert(recT, "1", "a"),
			recInsert(recT, "2", "b"),
			recInsert(recT, "3", "c"),
			recUpdate(recT, nil, recText("2", "B")),
			recDelete(recT, []source.Value{{Kind: source.ValueText, Data: []byte("3")}, recNull}),
		})
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		// Apply only queues short runs and row statements: nothing of the
		// transaction has reached the server yet.
		if tr := f.rec.trace(); slices.Contains(tr, recBegin) {
			t.Errorf("BEGIN was sent before Commit:\n%s", recShow(tr))
		}
		cp := checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 200, End: 210, Xid: 7, CommitTime: recCommitAt}
		if err := f.target.Commit(f.ctx, cp); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", recShow(tr))

		lookups, txTrace := recSplit(t, tr, recBegin)
		// Before the transaction: catalog lookups of the target table and
		// one Prepare round trip per statement shape, in first-use order.
		recNoWrites(t, lookups)
		for _, p := range []string{"decant_1: " + recInsertT, "decant_2: " + recUpdateT, "decant_3: " + recDeleteT} {
			_, prep := recSplit(t, lookups, "Parse "+p)
			if want := []string{"Parse " + p, "Describe S " + p[:8], "Sync"}; !slices.Equal(prep[:min(3, len(prep))], want) {
				t.Errorf("prepare of %s: got %q, want %q", p[:8], prep[:min(3, len(prep))], want)
			}
		}
		// The transaction: one batch (BEGIN, the rows in source order, the
		// checkpoint, one Sync), then COMMIT as a simple query.
		want := recSeq(
			[]string{recBegin}, recExec,
			recPrepared("decant_1"), recPrepared("decant_1"), recPrepared("decant_1"),
			recPrepared("decant_2"),
			recPrepared("decant_3"),
			[]string{recCheckpoint}, recExec,
			[]string{"Sync", recCommit},
		)
		if !slices.Equal(txTrace, want) {
			t.Errorf("transaction trace:\n%s\nwant:\n%s", recShow(txTrace), recShow(want))
		}
		if n := recCount(tr, recCommit); n != 1 {
			t.Errorf("COMMIT sent %d times, want 1", n)
		}
		if i, j := slices.Index(tr, recCheckpoint), slices.Index(tr, recCommit); i < 0 || j < i {
			t.Errorf("checkpoint at %d, COMMIT at %d: the checkpoint must be written before COMMIT", i, j)
		}
		// Sync ends each extended-protocol round trip. 14 of them:
		//   10 catalog lookups of public.t (Inspect: 5 queries, each a
		//      Prepare and an Execute round trip with pgx's statement cache)
		//   3  Prepare of the INSERT, UPDATE and DELETE (once per session)
		//   1  the batch: BEGIN, 5 row statements, checkpoint
		// COMMIT is a simple Query (its own round trip, no Sync). A second
		// transaction of the same shapes needs only the batch and COMMIT
		// (see "group commit").
		if n := recCount(tr, "Sync"); n != 14 {
			t.Errorf("%d Syncs, want 14", n)
		}
		if n := recCount(txTrace, "Sync"); n != 1 {
			t.Errorf("the transaction took %d round trips before COMMIT, want 1", n)
		}

		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|a", "2|B")
		if got, want := f.checkpointRow(t), "0/C8|0/D2|7|2024-05-06 07:08:09.123456"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
		if stored, err := checkpoint.PGRead(f.ctx, f.db, "p"); err != nil || stored.End != 210 || stored.Commit != 200 || stored.Xid != 7 || !stored.CommitTime.Equal(recCommitAt) {
			t.Errorf("PGRead = %+v, %v", stored, err)
		}
	})

	t.Run("a long insert run goes as one COPY", func(t *testing.T) {
		f := newRecFixture(t, srv)
		txn := &source.Txn{Xid: 8, Commit: 300}
		var changes []source.Change
		for i := 1; i <= 50; i++ {
			changes = append(changes, recInsert(recT, fmt.Sprint(i), fmt.Sprintf("v%d", i)))
		}
		// COPY's text format needs these escaped.
		changes[48].New[1] = recNull
		changes[49].New[1] = source.Value{Kind: source.ValueText, Data: []byte("tab\there\\back\nline\r\\N")}
		if err := f.target.Apply(f.ctx, txn, changes); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 300, End: 310, Xid: 8}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", recShow(tr))
		lookups, txTrace := recSplit(t, tr, recBegin)
		recNoWrites(t, lookups)
		if n := recCountPrefix(tr, "Parse decant_"); n != 0 {
			t.Errorf("%d statements prepared, want none: the run must not become INSERTs", n)
		}
		if n := recCountPrefix(tr, "Bind decant_"); n != 0 {
			t.Errorf("%d prepared statements executed, want 0", n)
		}
		// BEGIN goes in its own round trip first, so the COPY runs inside
		// the transaction; the checkpoint and COMMIT follow the COPY.
		copyData := recCount(txTrace, "CopyData")
		if copyData < 1 {
			t.Errorf("no CopyData")
		}
		want := recSeq(
			[]string{recBegin}, recExec, []string{"Sync"},
			[]string{recCopyT}, slices.Repeat([]string{"CopyData"}, copyData), []string{"CopyDone"},
			[]string{recCheckpoint}, recExec, []string{"Sync", recCommit},
		)
		if !slices.Equal(txTrace, want) {
			t.Errorf("transaction trace:\n%s\nwant:\n%s", recShow(txTrace), recShow(want))
		}

		f.wantRows(t, `SELECT count(*), count(v), min(id), max(id) FROM t`, "50|49|1|50")
		f.wantRows(t, `SELECT v FROM t WHERE id IN (1, 48, 49, 50) ORDER BY id`,
			"v1", "v48", "<nil>", "tab\there\\back\nline\r\\N")
		if got, want := f.checkpointRow(t), "0/12C|0/136|8|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("group commit", func(t *testing.T) {
		f := newPlainRecFixture(t, srv)
		txn1 := &source.Txn{Xid: 8, Commit: 300}
		txn2 := &source.Txn{Xid: 9, Commit: 400, CommitTime: recCommitAt}
		if err := f.target.Apply(f.ctx, txn1, []source.Change{recInsert(recT, "1", "one")}); err != nil {
			t.Fatalf("Apply txn1: %v", err)
		}
		if err := f.target.Apply(f.ctx, txn2, []source.Change{
			recInsert(recT, "2", "two"),
			recUpdate(recT, nil, recText("1", "uno")),
		}); err != nil {
			t.Fatalf("Apply txn2: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 400, End: 410, Xid: 9, CommitTime: recCommitAt}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", recShow(tr))
		if n := recCount(tr, recBegin); n != 1 {
			t.Errorf("%d BEGINs, want 1", n)
		}
		if n := recCount(tr, recCommit); n != 1 {
			t.Errorf("%d COMMITs, want 1", n)
		}
		if n := recCount(tr, recCheckpoint); n != 1 {
			t.Errorf("%d checkpoint writes, want 1", n)
		}
		_, txTrace := recSplit(t, tr, recBegin)
		want := recSeq(
			[]string{recBegin}, recExec,
			recPrepared("decant_1"), // txn1's insert
			recPrepared("decant_1"), // txn2's insert
			recPrepared("decant_2"), // txn2's update
			[]string{recCheckpoint}, recExec,
			[]string{"Sync", recCommit},
		)
		if !slices.Equal(txTrace, want) {
			t.Errorf("transaction trace:\n%s\nwant:\n%s", recShow(txTrace), recShow(want))
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|uno", "2|two")
		if got, want := f.checkpointRow(t), "0/190|0/19A|9|2024-05-06 07:08:09.123456"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}

		// The next transaction of known shapes: no lookups, no prepares,
		// just the batch and COMMIT.
		f.rec.reset()
		txn3 := &source.Txn{Xid: 10, Commit: 500}
		if err := f.target.Apply(f.ctx, txn3, []source.Change{recInsert(recT, "3", "three")}); err != nil {
			t.Fatalf("Apply txn3: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 500, End: 510, Xid: 10}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		want = recSeq([]string{recBegin}, recExec, recPrepared("decant_1"), []string{recCheckpoint}, recExec, []string{"Sync", recCommit})
		if tr := f.rec.trace(); !slices.Equal(tr, want) {
			t.Errorf("warm transaction trace:\n%s\nwant:\n%s", recShow(tr), recShow(want))
		}
	})

	t.Run("rollback", func(t *testing.T) {
		f := newPlainRecFixture(t, srv)
		if _, err := f.db.Exec(f.ctx, `INSERT INTO t VALUES (1, 'keep')`); err != nil {
			t.Fatal(err)
		}
		// Ten inserts go as COPY, which sends BEGIN and the rows to the
		// server inside Apply; the UPDATE after them stays queued.
		var changes []source.Change
		for i := 2; i <= 11; i++ {
			changes = append(changes, recInsert(recT, fmt.Sprint(i), "new"))
		}
		changes = append(changes, recUpdate(recT, nil, recText("1", "changed")))
		if err := f.target.Apply(f.ctx, &source.Txn{Xid: 11, Commit: 600}, changes); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if !slices.Contains(f.rec.trace(), "CopyDone") {
			t.Fatalf("the rows were not sent before Rollback:\n%s", recShow(f.rec.trace()))
		}
		// Sent, but not visible: they are inside the open transaction.
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|keep")
		if err := f.target.Rollback(f.ctx); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", recShow(tr))
		if len(tr) == 0 || tr[len(tr)-1] != recRollback {
			t.Errorf("trace does not end with ROLLBACK:\n%s", recShow(tr))
		}
		for _, e := range []string{recCommit, recCheckpoint, "Bind decant_2"} {
			if slices.Contains(tr, e) {
				t.Errorf("trace has %q:\n%s", e, recShow(tr))
			}
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|keep")
		if got, want := f.checkpointRow(t), "0/64|0/64|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}

		// The Target is usable after a rollback, nothing of the abandoned
		// transaction (its queued UPDATE) comes back, and the UPDATE
		// prepared inside the rolled-back transaction is still prepared
		// (protocol-level prepared statements are not transactional), so
		// the Target's statement cache is still right.
		f.rec.reset()
		if err := f.target.Apply(f.ctx, &source.Txn{Xid: 12, Commit: 700}, []source.Change{
			recInsert(recT, "20", "after"),
			recUpdate(recT, nil, recText("1", "kept")),
		}); err != nil {
			t.Fatalf("Apply after rollback: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 700, End: 710, Xid: 12}); err != nil {
			t.Fatalf("Commit after rollback: %v", err)
		}
		tr = f.rec.trace()
		want := recSeq(
			[]string{"Parse decant_2: " + recInsertT, "Describe S decant_2", "Sync"}, // the UPDATE is decant_1 already
			[]string{recBegin}, recExec, recPrepared("decant_2"), recPrepared("decant_1"),
			[]string{recCheckpoint}, recExec, []string{"Sync", recCommit})
		if !slices.Equal(tr, want) {
			t.Errorf("trace after rollback:\n%s\nwant:\n%s", recShow(tr), recShow(want))
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|kept", "20|after")
	})

	t.Run("idle checkpoint advance", func(t *testing.T) {
		f := newRecFixture(t, srv)
		cp := f.open
		cp.End = 300
		if err := f.target.Commit(f.ctx, cp); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		// The UPDATE alone, committed by the implicit transaction of its
		// batch: no BEGIN, no COMMIT.
		want := recSeq([]string{recCheckpoint}, recExec, []string{"Sync"})
		if tr := f.rec.trace(); !slices.Equal(tr, want) {
			t.Errorf("trace:\n%s\nwant:\n%s", recShow(tr), recShow(want))
		}
		if got, want := f.checkpointRow(t), "0/64|0/12C|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("checkpoint regression", func(t *testing.T) {
		f := newRecFixture(t, srv)
		// Another agent has moved the checkpoint to 0/3E8.
		if _, err := f.db.Exec(f.ctx, `UPDATE decant.checkpoint SET end_lsn = '0/3E8', commit_lsn = '0/3E0'`); err != nil {
			t.Fatal(err)
		}
		if err := f.target.Apply(f.ctx, &source.Txn{Xid: 13, Commit: 800}, []source.Change{recInsert(recT, "1", "late")}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 800, End: 810, Xid: 13})
		if !errors.Is(err, checkpoint.ErrRegressed) {
			t.Fatalf("Commit = %v, want ErrRegressed", err)
		}
		var ae *apply.Error
		if !errors.As(err, &ae) || ae.Op != "checkpoint" || ae.Xid != 13 || ae.Commit != 800 {
			t.Errorf("Commit error = %#v, want *apply.Error for the checkpoint of xid 13", err)
		}
		if slices.Contains(f.rec.trace(), recCommit) {
			t.Errorf("COMMIT sent after a failed checkpoint:\n%s", recShow(f.rec.trace()))
		}
		if err := f.target.Rollback(f.ctx); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		if tr := f.rec.trace(); len(tr) == 0 || tr[len(tr)-1] != recRollback {
			t.Errorf("trace does not end with ROLLBACK:\n%s", recShow(tr))
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`)
		if got, want := f.checkpointRow(t), "0/3E0|0/3E8|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("update of a missing row", func(t *testing.T) {
		f := newRecFixture(t, srv)
		if _, err := f.db.Exec(f.ctx, `INSERT INTO t VALUES (1, 'present')`); err != nil {
			t.Fatal(err)
		}
		txn := &source.Txn{Xid: 14, Commit: 900}
		err := f.target.Apply(f.ctx, txn, []source.Change{
			recUpdate(recT, nil, recText("1", "updated")),
			recUpdate(recT, nil, recText("987654", "SECRET")),
		})
		// Row statements are pipelined: the miss shows when the batch is
		// sent, here at Commit.
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		err = f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 900, End: 910, Xid: 14})
		var ae *apply.Error
		if !errors.As(err, &ae) {
			t.Fatalf("Commit = %v, want *apply.Error", err)
		}
		if ae.Op != "update" || ae.Table != recT.Table() || ae.Xid != 14 || ae.Commit != 900 {
			t.Errorf("error names op %q table %s xid %d commit %s, want update public.t 14 0/384", ae.Op, ae.Table, ae.Xid, ae.Commit)
		}
		msg := err.Error()
		t.Logf("error: %s", msg)
		for _, want := range []string{"update", "public.t", "xid 14", "no target row matches"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not mention %q", msg, want)
			}
		}
		for _, secret := range []string{"SECRET", "987654", "updated"} {
			if strings.Contains(msg, secret) {
				t.Errorf("error %q contains row value %q", msg, secret)
			}
		}
		if slices.Contains(f.rec.trace(), recCommit) {
			t.Errorf("COMMIT sent after a failed update:\n%s", recShow(f.rec.trace()))
		}
		if err := f.target.Rollback(f.ctx); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		// The first update ran in the batch too; it is rolled back with
		// the transaction.
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|present")
		if got, want := f.checkpointRow(t), "0/64|0/64|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("keyless table changes one duplicate at a time", func(t *testing.T) {
		f := newRecFixture(t, srv)
		if _, err := f.db.Exec(f.ctx, `INSERT INTO k VALUES (1, 'dup'), (1, 'dup'), (1, 'dup'), (2, NULL)`); err != nil {
			t.Fatal(err)
		}
		dup := recText("1", "dup")
		err := f.target.Apply(f.ctx, &source.Txn{Xid: 15, Commit: 1000}, []source.Change{
			recUpdate(recK, dup, recText("1", "changed")),
			recDelete(recK, dup),
			recDelete(recK, []source.Value{{Kind: source.ValueText, Data: []byte("2")}, recNull}),
		})
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 1000, End: 1010, Xid: 15}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		f.wantRows(t, `SELECT a, b, count(*) FROM k GROUP BY a, b ORDER BY b`, "1|changed|1", "1|dup|1")
		if got, want := f.checkpointRow(t), "0/3E8|0/3F2|15|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	// A whole-row match takes a statement per pattern of NULL old values;
	// once the session holds pg.MaxPrepared statements, new shapes are sent
	// unprepared and still find their row.
	t.Run("shapes past MaxPrepared go unprepared", func(t *testing.T) {
		f := newRecFixture(t, srv)
		if _, err := f.db.Exec(f.ctx, `INSERT INTO k VALUES (1, NULL), (NULL, 'x')`); err != nil {
			t.Fatal(err)
		}
		fillPrepared(t, f)
		f.rec.reset()
		txn := &source.Txn{Xid: 16, Commit: 1100, CommitTime: recCommitAt}
		err := f.target.Apply(f.ctx, txn, []source.Change{
			recDelete(recK, []source.Value{{Kind: source.ValueText, Data: []byte("1")}, recNull}),
			recUpdate(recK, []source.Value{recNull, {Kind: source.ValueText, Data: []byte("x")}}, recText("2", "y")),
		})
		if err == nil {
			err = f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 1100, End: 1110, Xid: 16})
		}
		if err != nil {
			t.Fatal(err)
		}
		if n := f.target.Session().Prepared; n != pg.MaxPrepared {
			t.Errorf("the session prepared %d statements, want %d", n, pg.MaxPrepared)
		}
		if tr := f.rec.trace(); recCountPrefix(tr, "Parse decant_") != 0 {
			t.Errorf("statements were prepared past the bound:\n%s", recShow(tr))
		}
		f.wantRows(t, `SELECT a, b FROM k`, "2|y")
	})
}

// fillPrepared makes the fixture's Target prepare pg.MaxPrepared
// statements of its own: it deletes, in one transaction, the rows of a
// keyless table w whose columns c1, c2... hold NULL in every pattern, each
// a whole-row match of another shape.
func fillPrepared(t *testing.T, f *recFixture) {
	t.Helper()
	nullable := bits.Len(uint(pg.MaxPrepared - 1)) // 2^nullable patterns
	rel := &source.Relation{ID: 16403, Schema: "public", Name: "w", Identity: source.IdentityFull,
		Columns: []source.Column{{Name: "c0", Type: 23, TypeMod: -1, Key: true}}}
	cols, vals := []string{"c0 int"}, []string{"i"}
	for j := 1; j <= nullable; j++ {
		rel.Columns = append(rel.Columns, source.Column{Name: fmt.Sprintf("c%d", j), Type: 23, TypeMod: -1, Key: true})
		cols = append(cols, fmt.Sprintf("c%d int", j))
		vals = append(vals, fmt.Sprintf("CASE WHEN i & %d = 0 THEN %d END", 1<<(j-1), j))
	}
	if _, err := f.db.Exec(f.ctx, fmt.Sprintf(`CREATE TABLE w (%s); INSERT INTO w SELECT %s FROM generate_series(0, %d) i`,
		strings.Join(cols, ", "), strings.Join(vals, ", "), pg.MaxPrepared-1)); err != nil {
		t.Fatal(err)
	}
	var deletes []source.Change
	for i := range pg.MaxPrepared {
		old := recText(fmt.Sprint(i))
		for j := 1; j <= nullable; j++ {
			v := source.Value{Kind: source.ValueText, Data: []byte(fmt.Sprint(j))}
			if i&(1<<(j-1)) != 0 {
				v = recNull
			}
			old = append(old, v)
		}
		deletes = append(deletes, recDelete(rel, old))
	}
	if err := f.target.Apply(f.ctx, &source.Txn{Xid: 15, Commit: 1000}, deletes); err != nil {
		t.Fatal(err)
	}
	if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 1000, End: 1010, Xid: 15}); err != nil {
		t.Fatal(err)
	}
	if n := f.target.Session().Prepared; n != pg.MaxPrepared {
		t.Fatalf("filling the session: %d statements prepared, want %d", n, pg.MaxPrepared)
	}
	f.wantRows(t, `SELECT count(*) FROM w`, "0")
}
