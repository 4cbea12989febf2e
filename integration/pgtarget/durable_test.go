package pgtarget

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

// TestAsyncCommitSessions, against a real server: with AsyncCommit the
// main session and a streamed transaction's commit with
// synchronous_commit = off, both commits tell where they end in the WAL
// (the stream's through the state it shares with the main writer), the
// flush position reaches them, and a stream's connection that opens after
// the main session's backend ended refuses to go on, as retryable.
func TestAsyncCommitSessions(t *testing.T) {
	srv := harness.PostgresT(t, harness.PostgresOptions{})
	ctx := t.Context()
	if err := srv.CreateDatabase(ctx, "async"); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, srv.DSN("async"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	if _, err := db.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY, v text)`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := checkpoint.PGEnsure(ctx, db, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 100, End: 100}); err != nil {
		t.Fatal(err)
	}
	target, err := pg.New(pg.Config{DSN: srv.DSN("async"), Pipeline: "p", AsyncCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close(context.Background())
	if _, err := target.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if setting, err := target.Setting(ctx, "synchronous_commit"); err != nil || setting != "off" {
		t.Fatalf("synchronous_commit is %q (%v), want off", setting, err)
	}
	if s := target.Session(); s.WALBlock != 8192 || s.WALSegment != 16<<20 {
		t.Errorf("WAL layout read as pages of %d, segments of %d", s.WALBlock, s.WALSegment)
	}

	_, before, err := target.Flushed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Apply(ctx, &source.Txn{Xid: 7, Commit: 300}, []source.Change{recInsert(recT, "1", "main")}); err != nil {
		t.Fatal(err)
	}
	if err := target.Commit(ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 300, End: 310, Xid: 7}); err != nil {
		t.Fatal(err)
	}
	mainEnd, _ := target.LastCommit()
	if mainEnd <= before {
		t.Errorf("the main commit ends at %s, not past the WAL's end %s before it", mainEnd, before)
	}

	tx := streamedTxn(500)
	if err := target.StreamApply(ctx, tx, []source.Change{recInsert(recT, "2", "streamed")}); err != nil {
		t.Fatal(err)
	}
	if err := target.StreamCommit(ctx, 500, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 400, End: 410, Xid: 500}); err != nil {
		t.Fatal(err)
	}
	streamEnd, _ := target.LastCommit()
	if streamEnd <= mainEnd {
		t.Errorf("the streamed commit ends at %s, not past the main one's %s: the main writer did not learn of it", streamEnd, mainEnd)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		flushed, _, err := target.Flushed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if flushed >= streamEnd {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the WAL is flushed to %s, never past the streamed commit's end %s", flushed, streamEnd)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The main session's backend ends (as in a crash of the server); a
	// stream opening now must not commit on top of what may be lost.
	// pg_terminate_backend only signals it: wait until it is gone.
	if _, err := db.Exec(ctx, `SELECT pg_terminate_backend($1, 10000)`, target.Session().PID); err != nil {
		t.Fatal(err)
	}
	err = target.StreamApply(ctx, streamedTxn(600), []source.Change{recInsert(recT, "3", "after")})
	if !pg.IsMainSessionGone(err) || !apply.Transient(err) {
		t.Fatalf("StreamApply after the main session ended: %v, want the retryable mainSessionGone", err)
	}
}
