package integration

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/decant/decant/integration/gaussstub"
	"github.com/decant/decant/integration/harness"
)

// Peers that accept TCP but stop answering: a proxy between decant and
// one server stalls. decant must notice within its timeout, say so,
// reconnect once the peer answers again, and leave the target equal to
// the source (the keyless events table would show a duplicate).

const faultTimeout = 3 * time.Second

func TestStalledPeer(t *testing.T) {
	t.Run("postgres-source", func(t *testing.T) {
		p := newPair(t)
		p.both(mixedSchema)
		p.mustDecant("init")
		prx := newProxy(t, hostPort(t, p.src))
		d := *p
		d.src = prx.DSN(p.src, map[string]string{"connect_timeout": "2"})
		stallTest(t, p, &d, prx, "no message from the source for 3s; reconnecting", prx.Resume)
	})
	t.Run("postgres-target", func(t *testing.T) {
		p := newPair(t)
		p.both(mixedSchema)
		p.mustDecant("init")
		prx := newProxy(t, hostPort(t, p.tgt))
		d := *p
		d.tgt = prx.DSN(p.tgt, map[string]string{"connect_timeout": "2"})
		stallTest(t, p, &d, prx, "no answer from the target within 3s", prx.Resume)
	})
	t.Run("mariadb-target", func(t *testing.T) {
		p := newMySQLPair(t)
		psql(t, p.src, mixedSchema)
		p.mustDecant("init", "--create-tables")
		prx := newProxy(t, hostPort(t, p.tgt))
		d := *p
		d.tgt = prx.DSN(p.tgt, map[string]string{"timeout": "2s"})
		stallTest(t, p, &d, prx, "no answer from the target within 3s", prx.CloseAll)
	})
}

// stallTest runs decant (d: p with a DSN through prx) under a workload,
// stalls the proxy, waits for decant to say so (want), then lets the
// connections go with release (Resume or CloseAll) and checks the
// catch-up. Every line decant writes must be a JSON log record.
func stallTest(t *testing.T, p, d *pair, prx *proxy, want string, release func()) {
	t.Helper()
	a := d.start("--source-timeout", faultTimeout.String(), "--target-timeout", faultTimeout.String(), "--log-json")
	waitApplied(t, p, p.mark(t, 0), a)
	// One round of the workload applied first: the stream has seen each
	// table then (and read their add-tables states on a side connection,
	// which a stalled peer would fail by its connect timeout instead).
	// The workload's rounds all touch the same tables (one seed).
	if _, err := workload(t, p.src, 2, 5); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, p, p.mark(t, 2), a)

	// The fault comes with work in flight, which keeps coming.
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	var werr error
	worked := make(chan struct{}) // closed after the first round
	go func() {
		defer wg.Done()
		for n := 0; !stop.Load() && werr == nil; n++ {
			_, werr = workload(t, p.src, 2, 5)
			if n == 0 {
				close(worked)
			}
		}
	}()
	select {
	case <-worked:
	case <-time.After(30 * time.Second):
		t.Fatal("the workload committed no round within 30s")
	}
	prx.Stall()
	stalled := time.Now()
	waitLog(t, a, want, faultTimeout+20*time.Second)
	t.Logf("decant noticed the stall after %s", time.Since(stalled).Round(100*time.Millisecond))
	// A reconnect while the peer still hangs must fail within its own
	// connect timeout and be retried.
	time.Sleep(3 * time.Second)
	release()
	time.Sleep(500 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	waitApplied(t, p, finalMarker(t, p.src), a)
	a.stop(t)
	out := a.stderr.String()
	if !strings.Contains(out, "resuming from the checkpoint") {
		t.Errorf("decant did not reconnect:\n%s", out)
	}
	assertJSONLines(t, out)
	p.assertEqual()
}

// TestMySQLDriverLog cuts decant's MariaDB connection while it idles: the
// driver, reading the next answer, meets the end of the stream and logs
// it. Under --log-json that must be a JSON record like any other.
func TestMySQLDriverLog(t *testing.T) {
	p := newMySQLPair(t)
	psql(t, p.src, mixedSchema)
	p.mustDecant("init", "--create-tables")
	prx := newProxy(t, hostPort(t, p.tgt))
	d := *p
	d.tgt = prx.DSN(p.tgt, nil)
	a := d.start("--log-json")
	waitApplied(t, p, p.mark(t, 0), a)
	prx.CloseAll()
	waitApplied(t, p, finalMarker(t, p.src), a)
	a.stop(t)
	out := a.stderr.String()
	if !strings.Contains(out, `"component":"mysql-driver"`) {
		t.Errorf("the driver logged nothing about the cut connection:\n%s", out)
	}
	assertJSONLines(t, out)
	p.assertEqual()
}

// TestAbandonedCommit holds the COMMIT of one target transaction in the
// network, so that decant gives the session up while the server still
// holds the transaction, ready to commit when the COMMIT arrives. The
// next session must end the old one before it reads the checkpoint:
// otherwise it replays the transaction, the old one commits too, and the
// keyless events table holds its rows twice.
func TestAbandonedCommit(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		p := newPair(t)
		p.both(mixedSchema)
		p.mustDecant("init")
		abandonedCommit(t, p, func() bool {
			return queryValue(t, p.tgt, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`) != "0"
		}, map[string]string{"connect_timeout": "2"})
	})
	t.Run("mariadb", func(t *testing.T) {
		p := newMySQLPair(t)
		psql(t, p.src, mixedSchema)
		p.mustDecant("init", "--create-tables")
		abandonedCommit(t, p, func() bool {
			return p.myValue(`SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`) != "0"
		}, map[string]string{"timeout": "2s"})
	})
}

// abandonedCommit: lockWait reports whether a target session waits for a
// lock, which is where a replay stands when the old session still holds
// the checkpoint row.
func abandonedCommit(t *testing.T, p *pair, lockWait func() bool, params map[string]string) {
	prx := newProxy(t, hostPort(t, p.tgt))
	d := *p
	d.tgt = prx.DSN(p.tgt, params)
	// The timeout leaves the test time to see a replay waiting for the
	// old session's lock before that round trip expires too.
	a := d.start("--target-timeout", "5s")
	waitApplied(t, p, p.mark(t, 0), a)

	prx.HoldOn("COMMIT")
	psql(t, p.src, `INSERT INTO events SELECT 1, 'held' FROM generate_series(1, 5)`)
	waitFor(t, 30*time.Second, prx.Held)
	waitLog(t, a, "COMMIT: no answer from the target within 5s", 30*time.Second)
	xid := finalMarker(t, p.src)
	// Either the replay is through (the old session was ended) or it
	// waits for the old session's lock: then let the COMMIT through.
	waitFor(t, 30*time.Second, func() bool { return lockWait() || p.checkpointXid() == xid })
	prx.Resume()
	waitApplied(t, p, xid, a)
	a.stop(t)
	if got := countRows(t, p, "events"); got != "5" {
		t.Errorf("target has %s events rows, want 5: the abandoned transaction committed beside its replay\n%s", got, a.stderr.String())
	}
	p.assertEqual()
}

// TestQuietSource: a healthy source with nothing to send says nothing
// for long stretches; decant asks it for a keepalive halfway through its
// timeout instead of reconnecting.
func TestQuietSource(t *testing.T) {
	p := newPair(t)
	// A source cluster of its own: on the shared one the other tests'
	// WAL keeps the walsender talking.
	quiet := harness.PostgresT(t, harness.PostgresOptions{})
	if err := quiet.CreateDatabase(t.Context(), p.name); err != nil {
		t.Fatal(err)
	}
	p.src = quiet.DSN(p.name)
	p.both(mixedSchema)
	p.mustDecant("init")
	a := p.start("--source-timeout", "2s", "--log-level", "debug")
	waitApplied(t, p, p.mark(t, 0), a)
	time.Sleep(5 * time.Second) // two and a half timeouts
	out := a.stderr.String()
	if strings.Contains(out, "no message from the source") || strings.Contains(out, "resuming from the checkpoint") {
		t.Fatalf("decant gave up a healthy idle source:\n%s", out)
	}
	if !strings.Contains(out, "asking for a keepalive") {
		t.Errorf("the source was never quiet long enough to ask it for a keepalive:\n%s", out)
	}
	waitApplied(t, p, finalMarker(t, p.src), a)
	a.stop(t)
}

// TestGaussStalledSource: the GaussDB reader, from a stand-in that sends
// no keepalives unless asked, through a proxy: quiet is fine, a stall is
// noticed and survived.
func TestGaussStalledSource(t *testing.T) {
	p := newPair(t)
	p.both(mixedSchema)
	work := captureWorkload(t, p, "accounts, events, batches, marker", func() {
		if _, err := workload(t, p.src, 2, 40); err != nil {
			t.Fatal(err)
		}
		finalMarker(t, p.src)
	})
	q := newPair(t)
	psql(t, q.tgt, mixedSchema)
	q.src = p.src
	srv, err := gaussstub.Start(gaussstub.Config{User: "decant", Password: "Gauss@123", AuthMethod: "sha256",
		SystemID: "7300000000000000009", KeepaliveInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	g := gaussPair(t, q, srv, nil)
	g.mustDecant("init")
	prx := newProxy(t, srv.Addr())
	d := *g
	d.src = prx.DSN(g.src, map[string]string{"connect_timeout": "2"})

	half := len(work.txns) / 2
	srv.Append(work.txns[:half]...)
	a := d.start("--source-timeout", "2s", "--log-level", "debug")
	waitFor(t, 30*time.Second, func() bool { return q.checkpointXid() == fmt.Sprint(work.txns[half-1].Xid) })
	time.Sleep(5 * time.Second)
	if out := a.stderr.String(); strings.Contains(out, "no message from the source") || !strings.Contains(out, "asking for a keepalive") {
		t.Fatalf("decant did not keep a quiet source alive by asking for keepalives:\n%s", out)
	}
	prx.Stall()
	waitLog(t, a, "no message from the source for 2s; reconnecting", 20*time.Second)
	srv.Append(work.txns[half:]...)
	time.Sleep(time.Second)
	prx.CloseAll()
	waitFor(t, 60*time.Second, func() bool { return q.checkpointXid() == fmt.Sprint(work.txns[len(work.txns)-1].Xid) })
	a.stop(t)
	q.assertEqual()
}

// mark inserts marker row id on the source and returns its xid.
func (p *pair) mark(t *testing.T, id int) string {
	t.Helper()
	return queryValue(t, p.src, fmt.Sprintf(`INSERT INTO marker VALUES (%d, pg_current_xact_id()::text) RETURNING xid`, id))
}

// waitApplied waits until the target's checkpoint names xid.
func waitApplied(t *testing.T, p *pair, xid string, a *agent) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for p.checkpointXid() != xid {
		select {
		case <-a.done:
			t.Fatalf("decant run ended before applying xid %s: %v\n%s", xid, a.err, a.stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("xid %s not applied within 60s\n%s", xid, a.stderr.String())
		}
	}
}

// waitLog waits until decant's output holds want.
func waitLog(t *testing.T, a *agent, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(a.stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("decant did not log %q within %s:\n%s", want, timeout, a.stderr.String())
		}
		select {
		case <-a.done:
			t.Fatalf("decant run ended without logging %q: %v\n%s", want, a.err, a.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// assertJSONLines checks that every line of out is a JSON object.
func assertJSONLines(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a line on stderr is not a JSON record: %q", line)
		}
	}
}

// countRows counts a target table's rows.
func countRows(t *testing.T, p *pair, table string) string {
	t.Helper()
	if p.mysql {
		return p.myValue("SELECT COUNT(*) FROM " + table)
	}
	return queryValue(t, p.tgt, "SELECT count(*) FROM "+table)
}

// hostPort is the host:port of a postgres:// or mysql:// URL.
func hostPort(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
