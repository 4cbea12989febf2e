package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/integration/compare"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

// TestAsyncCommitTargetCrash is the proof of "never ahead" with
// --synchronous-commit off: decant applies a continuous mixed workload
// into a target of its own, whose walwriter flushes only every 2 s (so
// that every crash loses the commits of the last second or two), through
// a proxy. Three times, the proxy freezes decant's target connections,
// the target is crashed (pg_ctl stop -m immediate) and restarted, and,
// before decant may reach it again, the slot's confirmed flush position
// (sampled at the crash and again once decant has surely reported all it
// knew) must be at or before the checkpoint the recovered target holds.
// Then decant resumes by itself; at the end the target equals the source.
//
// With --stream-apply immediate, a writer also commits large
// transactions, which the source streams in progress and decant commits
// on connections of their own.
func TestAsyncCommitTargetCrash(t *testing.T) {
	t.Run("spool", func(t *testing.T) { asyncCrash(t, false) })
	t.Run("immediate", func(t *testing.T) { asyncCrash(t, true) })
}

func asyncCrash(t *testing.T, immediate bool) {
	tgt := harness.PostgresT(t, harness.PostgresOptions{Settings: map[string]string{
		// Async commits reach the disk only through the walwriter, and
		// late: no flush after a number of bytes, no background writer
		// flushing WAL ahead of the pages it writes.
		"wal_writer_delay":       "2s",
		"wal_writer_flush_after": "1GB",
		"bgwriter_lru_maxpages":  "0",
	}})
	p := newPair(t)
	if err := tgt.CreateDatabase(t.Context(), p.name); err != nil {
		t.Fatal(err)
	}
	direct := tgt.DSN(p.name)
	px := newProxy(t, fmt.Sprintf("127.0.0.1:%d", tgt.Port))
	p.tgt = px.DSN(direct, nil)
	psql(t, p.src, mixedSchema)
	psql(t, direct, mixedSchema)
	p.mustDecant("init")
	src := p.src
	args := []string{"--synchronous-commit", "off"}
	if immediate {
		// decant's replication session decodes with 64kB, so the large
		// writer's transactions are streamed in progress.
		p.src = streamingDSN(p.src)
		args = append(args, "--stream-apply", "immediate")
	}

	var stop atomic.Bool
	var committed atomic.Int64
	done, writers := make(chan error, 2), 1
	go func() {
		for !stop.Load() {
			n, err := workload(t, src, 2, 100)
			committed.Add(n)
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	if immediate {
		writers++
		go func() { done <- largeWriter(t, src, &stop) }()
	}

	a := p.start(args...)
	// Polls go through one session per server (and per life of the
	// target): queryValue's sessions last as long as the test.
	onSource := connect(t, src)
	sourceValue := func(sql string) string {
		t.Helper()
		var v string
		if err := onSource.QueryRow(t.Context(), sql).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	confirmed := func() source.LSN {
		return lsn(t, sourceValue(fmt.Sprintf(`SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '%s'`, p.name)))
	}
	var onTarget *pgx.Conn
	defer func() { onTarget.Close(context.Background()) }()
	reconnect := func() {
		t.Helper()
		if onTarget != nil {
			onTarget.Close(context.Background())
		}
		var err error
		if onTarget, err = compare.Connect(t.Context(), direct); err != nil {
			t.Fatal(err)
		}
	}
	reconnect()
	checkpoint := func() source.LSN {
		t.Helper()
		var v string
		if err := onTarget.QueryRow(t.Context(), `SELECT end_lsn::text FROM decant.checkpoint WHERE pipeline = $1`, p.name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return lsn(t, v)
	}
	rng := rand.New(rand.NewPCG(12, 12))
	lost := 0
	for round := 1; round <= 3; round++ {
		before := checkpoint()
		waitFor(t, 60*time.Second, func() bool { return checkpoint() != before || a.exited() })
		time.Sleep(time.Duration(1000+rng.IntN(1500)) * time.Millisecond) // apply for a while
		if a.exited() {
			t.Fatalf("decant run ended: %v\n%s", a.err, a.stderr.String())
		}
		// From here on decant learns nothing from the target: neither
		// what it committed nor how far it flushed.
		px.Stall()
		stalled := sourceValue(`SELECT clock_timestamp()::text`)
		visible, atCrash := checkpoint(), confirmed()
		if err := tgt.Crash(); err != nil {
			t.Fatal(err)
		}
		// Whatever decant acknowledged before the stall, its reader has
		// reported once it sent a status update 1.5 s after it, or once
		// it ended (it reports as it ends; a connection decant opened
		// since, to a server that is down, ended the session, and the next
		// one cannot start while the target is down or stalled).
		reportedSince := func() bool {
			return sourceValue(fmt.Sprintf(`SELECT (NOT s.active OR coalesce(r.reply_time > '%s'::timestamptz + interval '1.5 s', false))::text
				FROM pg_replication_slots s LEFT JOIN pg_stat_replication r ON r.pid = s.active_pid WHERE s.slot_name = '%s'`, stalled, p.name)) == "true"
		}
		if !waitUntil(30*time.Second, reportedSince) {
			t.Fatalf("round %d: decant neither reported its position in the 30 s after the stall nor ended its session:\n%s", round, a.stderr.String())
		}
		reported := confirmed()
		if err := tgt.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		reconnect()
		recovered := checkpoint()
		t.Logf("round %d: checkpoint %s visible before the crash, %s after recovery; slot confirmed %s at the crash, %s after",
			round, visible, recovered, atCrash, reported)
		if atCrash > recovered || reported > recovered {
			t.Errorf("round %d: the slot was confirmed to %s, past the checkpoint %s the target holds after its crash: the source was told of commits the target had not flushed",
				round, max(atCrash, reported), recovered)
		}
		if visible > recovered {
			lost++
		}
		px.Resume() // decant's connections fail now, and it reconnects
	}
	stop.Store(true)
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Without commits lost to a crash the rounds proved nothing.
	if lost == 0 {
		t.Errorf("no crash lost a commit the target had made visible: the target did not commit asynchronously, or the crashes came when nothing was in flight")
	}
	xid := finalMarker(t, src)
	waitFor(t, 90*time.Second, func() bool {
		var got string
		onTarget.QueryRow(t.Context(), `SELECT coalesce(xid::text, '') FROM decant.checkpoint WHERE pipeline = $1`, p.name).Scan(&got)
		return got == xid || a.exited()
	})
	a.stop(t)
	out := a.stderr.String()
	if n := strings.Count(out, "resuming from the checkpoint"); n < 3 {
		t.Errorf("decant reported %d reconnects, want at least 3:\n%s", n, out)
	}
	if strings.Contains(out, "panic") || strings.Contains(out, "level=ERROR") {
		t.Errorf("decant run failed by itself:\n%s", out)
	}
	if immediate && !strings.Contains(out, "applying a transaction while it is in progress") {
		t.Errorf("no transaction was applied while in progress:\n%s", out)
	}
	final, slot := checkpoint(), confirmed()
	if slot > final {
		t.Errorf("after the stop the slot is confirmed to %s, past the target's checkpoint %s", slot, final)
	}
	t.Logf("%d transactions committed, %d of 3 crashes lost visible commits; after the stop: checkpoint %s, slot confirmed %s",
		committed.Load(), lost, final, slot)
	p.src = src
	p.assertEqual()
}

// largeWriter commits a 3,000-row transaction every 300 ms until stop.
func largeWriter(t *testing.T, dsn string, stop *atomic.Bool) error {
	conn, err := compare.Connect(t.Context(), dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for n := 0; !stop.Load(); n++ {
		if _, err := conn.Exec(t.Context(), `INSERT INTO batches (client, n, body) SELECT 99, g, repeat('L', 40) FROM generate_series(1, 3000) g`); err != nil {
			return fmt.Errorf("large transaction %d: %w", n, err)
		}
		if _, err := conn.Exec(t.Context(), `DELETE FROM batches WHERE client = 99 AND n > 100`); err != nil {
			return fmt.Errorf("large transaction %d: %w", n, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	return nil
}

func lsn(t *testing.T, s string) source.LSN {
	t.Helper()
	l, err := source.ParseLSN(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
