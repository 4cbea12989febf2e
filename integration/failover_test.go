package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/integration/harness"
)

// Following a promoted primary (issue 14 part 3): a source with a
// physical hot standby, reached by decant and the writer through one DSN
// naming both hosts with target_session_attrs=read-write. The standby
// stops receiving, the primary commits rows that decant applies and the
// standby never gets, then the primary crashes and the standby is
// promoted. The new primary has no copy of the slot (PostgreSQL 15), so
// decant must resync: at the end the target equals the new primary, the
// primary-only rows removed.

// failoverPair is a pair whose source is a primary of its own with a hot
// standby.
type failoverPair struct {
	*pair
	primary, standby *harness.Postgres
}

// newFailoverPair makes the primary, copies opsSchema's tables with rows
// to the target (init --copy), then makes the standby and waits until it
// has replayed all that. p.src names both servers, the primary first.
func newFailoverPair(t *testing.T) *failoverPair {
	p := newPair(t)
	primary := harness.PostgresT(t, harness.PostgresOptions{})
	if err := primary.CreateDatabase(t.Context(), p.name); err != nil {
		t.Fatal(err)
	}
	p.src = primary.DSN(p.name)
	p.both(opsSchema)
	psql(t, p.src, `INSERT INTO load (client, v) SELECT 0, 'copied' FROM generate_series(1, 1000)`)
	p.mustDecant("init", "--copy")
	standby := harness.StandbyT(t, primary)
	end := queryValue(t, p.src, `SELECT pg_current_wal_lsn()::text`)
	waitFor(t, 30*time.Second, func() bool {
		return queryValue(t, standby.DSN(p.name), `SELECT (pg_last_wal_replay_lsn() >= '`+end+`')::text`) == "true"
	})
	p.src = fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write", primary.Port, standby.Port, p.name)
	return &failoverPair{pair: p, primary: primary, standby: standby}
}

// failoverWriter inserts rows labelled with the current phase through
// the two-host DSN until stopped, reconnecting (to whichever host takes
// writes) after every error: the source's outage is not its failure.
type failoverWriter struct {
	phase atomic.Value // string: the label of the rows written now
	stop  atomic.Bool
	done  chan struct{}
}

func startFailoverWriter(t *testing.T, dsn string) *failoverWriter {
	w := &failoverWriter{done: make(chan struct{})}
	w.phase.Store("before")
	go func() {
		defer close(w.done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		for !w.stop.Load() {
			var err error
			if conn == nil {
				conn, err = pgx.Connect(t.Context(), dsn)
			}
			if err == nil {
				_, err = conn.Exec(t.Context(), `INSERT INTO load (client, v) SELECT 1, $1 FROM generate_series(1, 3)`, w.phase.Load().(string))
			}
			if err != nil && conn != nil {
				conn.Close(context.Background())
				conn = nil
			}
			if err != nil {
				time.Sleep(100 * time.Millisecond)
			} else {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	t.Cleanup(w.finish)
	return w
}

func (w *failoverWriter) finish() {
	w.stop.Store(true)
	<-w.done
}

// targetRows counts the target's rows of load labelled v.
func (p *failoverPair) targetRows(v string) int {
	n, err := strconv.Atoi(queryValue(p.t, p.tgt, `SELECT count(*)::text FROM load WHERE v = '`+v+`'`))
	if err != nil {
		p.t.Fatalf("count the target's %s rows: %v", v, err)
	}
	return n
}

// failOver runs the failover under a live decant run a: it waits until a
// applies the writer's rows, stops the standby, waits until a has applied
// rows only the primary has, crashes the primary and promotes the
// standby.
func (p *failoverPair) failOver(a *agent, w *failoverWriter) {
	p.t.Helper()
	waitFor(p.t, 30*time.Second, func() bool { return p.targetRows("before") >= 30 || a.exited() })
	if err := p.standby.Stop(); err != nil {
		p.t.Fatal(err)
	}
	w.phase.Store("primary only")
	waitFor(p.t, 30*time.Second, func() bool { return p.targetRows("primary only") >= 30 || a.exited() })
	if a.exited() {
		p.t.Fatalf("decant run ended before the failover: %v\n%s", a.err, a.stderr.String())
	}
	if err := p.primary.Crash(); err != nil {
		p.t.Fatal(err)
	}
	w.phase.Store("after")
	if err := p.standby.Start(p.t.Context()); err != nil {
		p.t.Fatal(err)
	}
	if err := p.standby.Promote(p.t.Context()); err != nil {
		p.t.Fatal(err)
	}
}

// assertFollowed checks the end: the target equals the new primary, with
// rows written there after the promotion and none of those only the old
// primary had.
func (p *failoverPair) assertFollowed(w *failoverWriter) {
	p.t.Helper()
	waitFor(p.t, 30*time.Second, func() bool {
		return queryValue(p.t, p.standby.DSN(p.name), `SELECT (count(*) >= 30)::text FROM load WHERE v = 'after'`) == "true"
	})
	w.finish()
}

// TestFailoverResync: run --on-slot-lost resync follows the promotion by
// itself: it reports the lost slot as a failover, resyncs, says so (log,
// webhook events), and streams what the new primary commits.
func TestFailoverResync(t *testing.T) {
	p := newFailoverPair(t)
	hook := newWebhookReceiver(t)
	w := startFailoverWriter(t, p.src)
	a := p.start("--on-slot-lost", "resync", "--slot-check-interval", "200ms", "--webhook", hook.URL)
	p.failOver(a, w)
	waitFor(t, 60*time.Second, func() bool { return strings.Contains(a.stderr.String(), "resync done") || a.exited() })
	p.assertFollowed(w)
	p.catchUpTo(a)
	a.stop(t)
	log := a.stderr.String()
	for _, want := range []string{"level=WARN msg=\"the slot can no longer stream", "likely failed over (its timeline moved from 1 to 2)", "level=WARN msg=\"resync done"} {
		if !strings.Contains(log, want) {
			t.Errorf("run's log lacks %q:\n%s", want, log)
		}
	}
	p.assertEqual()
	if n := p.targetRows("primary only"); n != 0 {
		t.Errorf("the target keeps %d rows only the old primary had", n)
	}
	var kinds []string
	for _, e := range hook.events() {
		kinds = append(kinds, fmt.Sprint(e["kind"]))
	}
	if got := strings.Join(kinds, ","); !strings.Contains(got, "resync_started,resync_finished") {
		t.Errorf("webhook events %s, want resync_started then resync_finished", got)
	}
	if strings.Contains(hook.raw(), "resync failed") {
		t.Errorf("a resync failed: %s", hook.raw())
	}
}

// TestFailoverStop: with --on-slot-lost stop (the default) run stops
// with exit 3 and the lost slot, likely a failover; decant resync --yes
// and run reach the same end.
func TestFailoverStop(t *testing.T) {
	p := newFailoverPair(t)
	w := startFailoverWriter(t, p.src)
	a := p.start("--slot-check-interval", "200ms")
	p.failOver(a, w)
	select {
	case <-a.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("decant run still runs after the failover\n%s", a.stderr.String())
	}
	if code := exitCode(a.err); code != 3 {
		t.Errorf("run after the failover: exit %d (%v), want 3\n%s", code, a.err, a.stderr.String())
	}
	oneLineError(t, "failover", a.stderr.String(), "slot "+p.name+" does not exist", "likely failed over (its timeline moved from 1 to 2)",
		"decant resync --pipeline "+p.name+" --yes")
	p.mustDecant("resync", "--yes")
	p.assertFollowed(w)
	p.catchUp()
	if n := p.targetRows("primary only"); n != 0 {
		t.Errorf("the target keeps %d rows only the old primary had", n)
	}
}
