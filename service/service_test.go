package service

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// clock is a settable now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestState() (*State, *clock) {
	c := &clock{t: time.Unix(1_700_000_000, 0)}
	st := NewState("p1", &source.SpillUsage{})
	st.now = c.now
	return st, c
}

func commit(txns int, end source.LSN, committed time.Time, backlog bool, ops ...source.Op) apply.Commit {
	var t apply.Tally
	for _, op := range ops {
		t.Ops[op]++
	}
	t.Bytes = int64(100 * len(ops))
	return apply.Commit{Txns: txns, Changes: t, Duration: 3 * time.Millisecond, Backlog: backlog,
		Checkpoint: checkpoint.Row{Pipeline: "p1", End: end, Commit: end - 8, CommitTime: committed}}
}

func scrape(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// wantSeries fails unless the scrape has each series with its value.
func wantSeries(t *testing.T, body string, series ...string) {
	t.Helper()
	for _, s := range series {
		if !strings.Contains(body, "\n"+s+"\n") {
			t.Errorf("scrape lacks %q", s)
		}
	}
}

// TestCountersMovePerCommit: each commit the pipeline tells moves the
// counters and positions that /metrics serves, with the pipeline label
// on every series.
func TestCountersMovePerCommit(t *testing.T) {
	st, clk := newTestState()
	srv := httptest.NewServer(Handler(st, NewRegistry(st), Probes{MaxLag: time.Minute}))
	defer srv.Close()

	st.SessionStarted(checkpoint.Row{End: 0x100}, 0x400)
	st.Received(&source.Txn{Xid: 1, CommitTime: clk.t.Add(-5 * time.Second)})
	st.Committed(commit(2, 0x200, clk.t.Add(-4*time.Second), true, source.OpInsert, source.OpInsert, source.OpUpdate))
	st.Committed(commit(1, 0x300, clk.t.Add(-2*time.Second), false, source.OpDelete, source.OpDDL))
	st.Acked(0x300)
	st.SlotChecked(source.SlotState{Slot: "p1", Exists: true, WALStatus: "unreserved", Restart: 0x100, WALEnd: 0x1000}, nil)
	st.ResyncFinished(errors.New("lost connection"), time.Second)
	st.ResyncFinished(nil, time.Second)
	st.ResyncFinished(nil, time.Second)

	code, body := scrape(t, srv, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics answered %d", code)
	}
	wantSeries(t, body,
		`decant_up{pipeline="p1"} 1`,
		`decant_streaming{pipeline="p1"} 1`,
		`decant_transactions_applied_total{pipeline="p1"} 3`,
		`decant_target_commits_total{pipeline="p1"} 2`,
		`decant_changes_applied_total{op="insert",pipeline="p1"} 2`,
		`decant_changes_applied_total{op="update",pipeline="p1"} 1`,
		`decant_changes_applied_total{op="delete",pipeline="p1"} 1`,
		`decant_changes_applied_total{op="ddl",pipeline="p1"} 1`,
		`decant_changes_applied_total{op="truncate",pipeline="p1"} 0`,
		`decant_bytes_applied_total{pipeline="p1"} 500`,
		`decant_applied_position_bytes{pipeline="p1"} 768`,
		`decant_flushed_position_bytes{pipeline="p1"} 768`,
		// The slot check saw the WAL end at 0x1000.
		`decant_lag_bytes{pipeline="p1"} 3328`,
		`decant_lag_seconds{pipeline="p1"} 0`,
		`decant_last_applied_commit_timestamp_seconds{pipeline="p1"} 1.699999998e+09`,
		`decant_slot_wal_status{pipeline="p1",status="unreserved"} 1`,
		`decant_slot_wal_status{pipeline="p1",status="reserved"} 0`,
		`decant_slot_retained_wal_bytes{pipeline="p1"} 3840`,
		`decant_slot_check_timestamp_seconds{pipeline="p1"} 1.7e+09`,
		`decant_batch_transactions_count{pipeline="p1"} 2`,
		`decant_target_commit_duration_seconds_count{pipeline="p1"} 2`,
		`decant_errors_total{class="transient",pipeline="p1"} 0`,
		`decant_resyncs_total{pipeline="p1",result="done"} 2`,
		`decant_resyncs_total{pipeline="p1",result="failed"} 1`,
		`decant_spill_files{pipeline="p1"} 0`,
	)
	for _, line := range strings.Split(body, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.Contains(line, `pipeline="p1"`) {
			t.Errorf("series without the pipeline label: %s", line)
		}
	}
}

// TestLagSeconds: lag is measured from the commit time of the oldest
// transaction not yet applied, stands at the last applied one's while a
// backlog waits, and is 0 once nothing is pending.
func TestLagSeconds(t *testing.T) {
	st, clk := newTestState()
	st.SessionStarted(checkpoint.Row{End: 0x100}, 0x100)
	if v := st.Snapshot(); v.LagSeconds != 0 || v.LagBytes != 0 {
		t.Errorf("caught up at the start: lag %.1fs %d bytes, want 0", v.LagSeconds, v.LagBytes)
	}
	t0 := clk.t
	st.Received(&source.Txn{Xid: 1, CommitTime: t0.Add(-10 * time.Second)})
	st.Received(&source.Txn{Xid: 2, CommitTime: t0.Add(-3 * time.Second)}) // grouped with 1: 1 is still the oldest
	st.SourceEnd(0x500)
	clk.t = t0.Add(2 * time.Second)
	if v := st.Snapshot(); v.LagSeconds != 12 || v.LagBytes != 0x400 {
		t.Errorf("two pending: lag %.1fs %d bytes, want 12s and 1024", v.LagSeconds, v.LagBytes)
	}
	st.Committed(commit(2, 0x300, t0.Add(-3*time.Second), true))
	if v := st.Snapshot(); v.LagSeconds != 5 || v.LagBytes != 0x200 {
		t.Errorf("backlog after a commit: lag %.1fs %d bytes, want 5s and 512", v.LagSeconds, v.LagBytes)
	}
	st.SourceEnd(0x400) // an older report arriving late moves nothing
	st.Committed(commit(1, 0x500, t0.Add(-1*time.Second), false))
	if v := st.Snapshot(); v.LagSeconds != 0 || v.LagBytes != 0 {
		t.Errorf("caught up: lag %.1fs %d bytes, want 0", v.LagSeconds, v.LagBytes)
	}
	// A commit of part of a transaction (before a schema change) leaves
	// it pending.
	st.Received(&source.Txn{Xid: 3, CommitTime: clk.t.Add(-time.Second)})
	part := commit(0, 0x500, time.Time{}, false)
	part.Checkpoint.PartialCommit = 0x600
	st.Committed(part)
	if v := st.Snapshot(); v.LagSeconds != 1 {
		t.Errorf("after a partial commit: lag %.1fs, want 1s", v.LagSeconds)
	}
}

// TestReadyAndHealthy: ready only while streaming under the lag bound,
// with a one-line reason otherwise; healthy unless a streaming apply loop
// stopped turning.
func TestReadyAndHealthy(t *testing.T) {
	st, clk := newTestState()
	p := Probes{MaxLag: time.Minute, Stall: 10 * time.Second}
	srv := httptest.NewServer(Handler(st, NewRegistry(st), p))
	defer srv.Close()
	probe := func(path string, want int, reason string) {
		t.Helper()
		code, body := scrape(t, srv, path)
		if code != want || !strings.Contains(body, reason) || strings.Count(body, "\n") != 1 {
			t.Errorf("%s answered %d %q, want %d with %q on one line", path, code, body, want, reason)
		}
	}
	tbl := source.TableName{Schema: "public", Name: "t"}
	st.Planned(tbl, 10, 100)
	probe("/readyz", 503, "initial copy")
	st.Done(tbl)
	probe("/readyz", 503, "connecting")
	probe("/healthz", 200, "ok")

	st.SessionStarted(checkpoint.Row{End: 0x100}, 0x100)
	probe("/readyz", 200, "ok")
	st.Received(&source.Txn{Xid: 1, CommitTime: clk.t})
	clk.t = clk.t.Add(61 * time.Second)
	st.Beat(clk.t)
	probe("/readyz", 503, "--ready-max-lag")
	st.Committed(commit(1, 0x200, clk.t.Add(-61*time.Second), false))
	probe("/readyz", 200, "ok")

	clk.t = clk.t.Add(11 * time.Second) // no beat since
	probe("/healthz", 503, "has not turned for 11s")
	st.Beat(clk.t)
	probe("/healthz", 200, "ok")

	st.SessionEnded(apply.SessionEnd{Err: errors.New("connection\nrefused"), Class: apply.ClassTransient, Retry: true, Wait: time.Second})
	probe("/readyz", 503, "transient error: connection refused")
	probe("/healthz", 200, "ok")
	st.SessionStarted(checkpoint.Row{End: 0x200}, 0x200)
	if st.reconnects.Load() != 1 || st.errors[0].Load() != 1 {
		t.Errorf("reconnects %d, transient errors %d; want 1 each", st.reconnects.Load(), st.errors[0].Load())
	}
	probe("/readyz", 200, "ok")

	st.SessionEnded(apply.SessionEnd{Err: errors.New(`invalid MySQL DSN: parse "mysql://u:hun ter2@h/db": invalid userinfo`), Class: apply.ClassPermanent})
	if _, body := scrape(t, srv, "/readyz"); strings.Contains(body, "hun ter2") || !strings.Contains(body, "mysql://u:xxxxx@h/db") {
		t.Errorf("/readyz answered %q: the password is not redacted as in webhooks", body)
	}
}

// TestStatusJSON: /status has decant status --json's shape, from the
// process's own state.
func TestStatusJSON(t *testing.T) {
	st, clk := newTestState()
	srv := httptest.NewServer(Handler(st, NewRegistry(st), Probes{}))
	defer srv.Close()
	st.SessionStarted(checkpoint.Row{End: 0x100}, 0x100)
	st.Committed(commit(1, 0x200, clk.t, false))
	st.SlotChecked(source.SlotState{Slot: "p1", Exists: true, WALStatus: "reserved", Confirmed: 0x200, Restart: 0x180, WALEnd: 0x300}, nil)
	code, body := scrape(t, srv, "/status")
	var got migrate.Status
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 {
		t.Fatalf("/status answered %d %q: %v", code, body, err)
	}
	if got.Pipeline != "p1" || got.SourceLSN != "0/300" || got.Checkpoint.EndLSN != "0/200" || !got.Slot.Active ||
		got.Slot.WALStatus != "reserved" || got.Slot.Retained != 0x180 || got.LagBytes != 0x100 || got.Checkpoint.CommitTime == nil {
		t.Errorf("/status = %+v", got)
	}
}

// TestCopyGauges: the initial copy's progress per table, restarted by a
// second Planned.
func TestCopyGauges(t *testing.T) {
	st, _ := newTestState()
	srv := httptest.NewServer(Handler(st, NewRegistry(st), Probes{}))
	defer srv.Close()
	tbl := source.TableName{Schema: "public", Name: "orders"}
	st.Planned(tbl, 1000, 1<<20)
	st.Copied(tbl, 400, 4000)
	st.Copied(tbl, 100, 1000)
	_, body := scrape(t, srv, "/metrics")
	wantSeries(t, body,
		`decant_copy_rows_done{pipeline="p1",table="public.orders"} 500`,
		`decant_copy_rows_estimated{pipeline="p1",table="public.orders"} 1000`,
		`decant_copy_bytes_done{pipeline="p1",table="public.orders"} 5000`)
	st.Planned(tbl, 1000, 1<<20)
	_, body = scrape(t, srv, "/metrics")
	wantSeries(t, body, `decant_copy_rows_done{pipeline="p1",table="public.orders"} 0`)
}

// TestProgressLine: the line counts what was applied since the line
// before, and one more is logged at the stop.
func TestProgressLine(t *testing.T) {
	st, _ := newTestState()
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&syncWriter{w: &buf}, nil))
	st.SessionStarted(checkpoint.Row{End: 0x100}, 0x100)
	st.Committed(commit(3, 0x200, time.Now(), false, source.OpInsert, source.OpInsert))
	stop := StartProgress(context.Background(), st, log, time.Hour)
	stop()
	out := buf.String()
	for _, want := range []string{`msg="progress at stop"`, "txns=3", "rows=2", "position=0/200", "lag_seconds=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress line %q lacks %s", out, want)
		}
	}
}

// syncWriter lets the test read what the progress goroutine wrote, after
// stop returned.
type syncWriter struct{ w io.Writer }

func (s *syncWriter) Write(b []byte) (int, error) { return s.w.Write(b) }

// TestListen serves on a free port and stops.
func TestListen(t *testing.T) {
	st, _ := newTestState()
	s, err := Listen("127.0.0.1:0", Handler(st, NewRegistry(st), Probes{}), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + s.Addr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(s.Addr()+"x", nil, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "--http-addr") {
		t.Errorf("a bad address gave %v, want an error naming --http-addr", err)
	}
}

// TestWebhookMetrics: the notifier's counts, labelled like the rest.
func TestWebhookMetrics(t *testing.T) {
	st, _ := newTestState()
	reg := NewRegistry(st)
	stats := WebhookStats{Delivered: 3, Dropped: 1, QueueLength: 2}
	if err := reg.RegisterWebhooks(func() WebhookStats { return stats }); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(st, reg, Probes{}))
	defer srv.Close()
	_, body := scrape(t, srv, "/metrics")
	wantSeries(t, body,
		`decant_webhook_events_total{pipeline="p1",result="delivered"} 3`,
		`decant_webhook_events_total{pipeline="p1",result="dropped"} 1`,
		`decant_webhook_events_total{pipeline="p1",result="failed"} 0`,
		`decant_webhook_queue_length{pipeline="p1"} 2`)
}

// TestConflictCounters: the conflicts a commit resolved add up per kind
// and policy; every pair a policy can resolve is served from zero.
func TestConflictCounters(t *testing.T) {
	st, clk := newTestState()
	srv := httptest.NewServer(Handler(st, NewRegistry(st), Probes{MaxLag: time.Minute}))
	defer srv.Close()
	c := commit(1, 0x200, clk.t, false, source.OpInsert)
	c.Conflicts[apply.InsertExists][apply.PolicyApply] = 2
	c.Conflicts[apply.DeleteMissing][apply.PolicySkip] = 1
	st.Committed(c)
	st.Committed(c)
	_, body := scrape(t, srv, "/metrics")
	wantSeries(t, body,
		`decant_conflicts_total{kind="insert_exists",pipeline="p1",policy="apply"} 4`,
		`decant_conflicts_total{kind="delete_missing",pipeline="p1",policy="skip"} 2`,
		`decant_conflicts_total{kind="update_missing",pipeline="p1",policy="apply"} 0`,
		`decant_conflicts_total{kind="delete_differs",pipeline="p1",policy="skip"} 0`)
	if strings.Contains(body, `kind="delete_missing",pipeline="p1",policy="apply"`) {
		t.Error("a pair no policy can resolve is served")
	}
}

// TestConnectionTLSGauge: each side's last link, 1 when encrypted, with
// whether the server's certificate was verified.
func TestConnectionTLSGauge(t *testing.T) {
	st, _ := newTestState()
	links := source.NewLinks(slog.New(slog.DiscardHandler), false)
	st.WatchLinks(links)
	srv := httptest.NewServer(Handler(st, NewRegistry(st), Probes{}))
	defer srv.Close()
	links.Observe(source.Link{Side: "source", Addr: "db:5432", Encrypted: true, Verified: true})
	links.Observe(source.Link{Side: "target", Addr: "db:3306"})
	_, body := scrape(t, srv, "/metrics")
	wantSeries(t, body,
		`decant_connection_tls{pipeline="p1",side="source",verified="true"} 1`,
		`decant_connection_tls{pipeline="p1",side="target",verified="false"} 0`)
	links.Observe(source.Link{Side: "target", Addr: "db:3306", Encrypted: true})
	_, body = scrape(t, srv, "/metrics")
	wantSeries(t, body, `decant_connection_tls{pipeline="p1",side="target",verified="false"} 1`)
}

// TestListenTimeouts: the endpoint ends a connection whose client stops
// sending in the middle of a request, and a keep-alive connection left
// idle; and Listen sets every bound. The bounds are shortened here so
// that the server's own closing is what the test waits for.
func TestListenTimeouts(t *testing.T) {
	if to := serveTimeouts(); to.readHeader <= 0 || to.read <= 0 || to.write <= 0 || to.idle <= 0 {
		t.Fatalf("Listen's timeouts %+v: each must be set", to)
	}
	st, _ := newTestState()
	short := timeouts{readHeader: 200 * time.Millisecond, read: 200 * time.Millisecond, write: time.Second, idle: 200 * time.Millisecond}
	s, err := listen("127.0.0.1:0", Handler(st, NewRegistry(st), Probes{}), slog.New(slog.DiscardHandler), short)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	for name, send := range map[string]string{
		"half a request":                "GET /healthz HTTP/1.1\r\nHost: x\r\n",
		"an idle keep-alive connection": "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
	} {
		conn, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, send); err != nil {
			t.Fatal(err)
		}
		// A generous deadline: the test fails only if the server never
		// closes the connection.
		_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
		got, err := io.ReadAll(conn)
		conn.Close()
		if err != nil {
			t.Errorf("%s: the server did not close the connection: %v", name, err)
		}
		if strings.HasSuffix(send, "\r\n\r\n") != strings.Contains(string(got), "200 OK") {
			t.Errorf("%s: answered %q", name, got)
		}
	}
}
