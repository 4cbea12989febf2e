package pg

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

// TestRecordEnd: an insert position right after a page header (the last
// record filled the page before) counts from the page's start, which is
// where a flush of everything before it stops; any other position stays.
func TestRecordEnd(t *testing.T) {
	w := &walState{block: 8192, segment: 16 << 20}
	for _, c := range []struct{ insert, want source.LSN }{
		{0x1000028, 0x1000000}, // after a segment's long header
		{0x1002018, 0x1002000}, // after a page's short header
		{0x1002028, 0x1002028}, // a record ends 16 bytes into the page (the tail of one that crossed it)
		{0x1002030, 0x1002030},
		{0x1001ff8, 0x1001ff8},
	} {
		if got := w.recordEnd(c.insert); got != c.want {
			t.Errorf("recordEnd(%s) = %s, want %s", c.insert, got, c.want)
		}
	}
	// An unknown page layout leaves every position as it is.
	unknown := &walState{}
	if got := unknown.recordEnd(0x1002018); got != 0x1002018 {
		t.Errorf("unknown layout: recordEnd moved 0/1002018 to %s", got)
	}
}

// TestAsyncCommitSessions, against a real server: with AsyncCommit the
// main session and a streamed transaction's commit with
// synchronous_commit = off, both commits tell where they end in the WAL
// (the stream's through the state it shares with the main writer), the
// flush position reaches them, and a stream's connection that opens after
// the main session's backend ended refuses to go on, as retryable.
func TestAsyncCommitSessions(t *testing.T) {
	pg := harness.PostgresT(t, harness.PostgresOptions{})
	ctx := t.Context()
	if err := pg.CreateDatabase(ctx, "async"); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, pg.DSN("async"))
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
	target, err := New(Config{DSN: pg.DSN("async"), Pipeline: "p", AsyncCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close(context.Background())
	if _, err := target.Open(ctx); err != nil {
		t.Fatal(err)
	}
	var setting string
	if err := target.conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting); err != nil || setting != "off" {
		t.Fatalf("synchronous_commit is %q (%v), want off", setting, err)
	}
	if target.wal.block != 8192 || target.wal.segment != 16<<20 {
		t.Errorf("WAL layout read as pages of %d, segments of %d", target.wal.block, target.wal.segment)
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
	if _, err := db.Exec(ctx, `SELECT pg_terminate_backend($1)`, target.conn.PgConn().PID()); err != nil {
		t.Fatal(err)
	}
	err = target.StreamApply(ctx, streamedTxn(600), []source.Change{recInsert(recT, "3", "after")})
	if !errors.As(err, new(mainSessionGone)) || !apply.Transient(err) {
		t.Fatalf("StreamApply after the main session ended: %v, want the retryable mainSessionGone", err)
	}
}
