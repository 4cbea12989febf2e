package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/integration/harness"
)

// Running as a service: `decant run --http-addr` serves metrics that move
// with the workload, lag that returns to 0, readiness that follows the
// target going away and coming back, and /status; promtool accepts the
// scrape.

// endpoint is a running decant's HTTP endpoint.
type endpoint struct {
	t    testing.TB
	base string
}

// get fetches path, returning the status code and body.
func (e endpoint) get(path string) (int, string) {
	e.t.Helper()
	resp, err := http.Get(e.base + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// metrics scrapes /metrics into series text → value.
func (e endpoint) metrics() (map[string]float64, string) {
	e.t.Helper()
	code, body := e.get("/metrics")
	if code != http.StatusOK {
		e.t.Fatalf("/metrics answered %d: %s", code, body)
	}
	m := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		i := strings.LastIndexByte(line, ' ')
		if line == "" || line[0] == '#' || i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			e.t.Fatalf("scrape line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m, body
}

// TestServiceEndpoint drives a pipeline to its own target server, which
// the test stops and starts again.
func TestServiceEndpoint(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is missing: make deps installs it (Debian package prometheus)")
	}
	target := harness.PostgresT(t, harness.PostgresOptions{})
	p := newPair(t)
	if err := target.CreateDatabase(t.Context(), p.name); err != nil {
		t.Fatal(err)
	}
	p.tgt = target.DSN(p.name)
	p.both(opsSchema)
	p.mustDecant("init")
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	e := endpoint{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	a := p.start("--http-addr", fmt.Sprintf("127.0.0.1:%d", port), "--ready-max-lag", "30s", "--slot-check-interval", "200ms")
	ready := func(want int) func() bool {
		return func() bool { code, _ := e.get("/readyz"); return code == want || a.exited() }
	}
	waitFor(t, 30*time.Second, ready(http.StatusOK))
	series := func(name string) string { return name + `{pipeline="` + p.name + `"}` }
	op := func(o string) string { return `decant_changes_applied_total{op="` + o + `",pipeline="` + p.name + `"}` }

	w := startWriter(t, p.src)
	waitFor(t, 30*time.Second, func() bool { return w.rows.Load() > 500 })
	during, _ := e.metrics()
	w.finish(t)
	p.catchUpTo(a)
	// The last idle mark moves the checkpoint to the source's WAL end.
	var after map[string]float64
	var body string
	waitFor(t, 30*time.Second, func() bool {
		after, body = e.metrics()
		return after[series("decant_lag_bytes")] == 0 && after[series("decant_lag_seconds")] == 0 &&
			after[series("decant_slot_check_timestamp_seconds")] > 0 // a slot check came by too
	})
	if after[series("decant_transactions_applied_total")] <= during[series("decant_transactions_applied_total")] ||
		during[series("decant_transactions_applied_total")] == 0 {
		t.Errorf("transactions applied did not move with the workload: %v during, %v after",
			during[series("decant_transactions_applied_total")], after[series("decant_transactions_applied_total")])
	}
	if got, want := after[op("insert")], float64(w.rows.Load()+1); got < want {
		t.Errorf("inserts applied %v, want at least the %v rows written", got, want)
	}
	for _, name := range []string{"decant_target_commits_total", "decant_bytes_applied_total", "decant_applied_position_bytes",
		"decant_flushed_position_bytes", "decant_target_commit_duration_seconds_count", "decant_last_applied_commit_timestamp_seconds"} {
		if after[series(name)] <= 0 {
			t.Errorf("%s is %v after the workload, want it above 0", name, after[series(name)])
		}
	}
	reserved := `decant_slot_wal_status{pipeline="` + p.name + `",status="reserved"}`
	if after[reserved] != 1 || after[series("decant_slot_retained_wal_bytes")] <= 0 || after[series("decant_slot_check_timestamp_seconds")] <= 0 {
		t.Errorf("slot metrics: wal_status reserved %v, retained %v, checked at %v; want 1 and both above 0",
			after[reserved], after[series("decant_slot_retained_wal_bytes")], after[series("decant_slot_check_timestamp_seconds")])
	}
	if after[series("decant_streaming")] != 1 || after[series("decant_up")] != 1 {
		t.Errorf("streaming %v, up %v; want 1 each", after[series("decant_streaming")], after[series("decant_up")])
	}
	check := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	check.Stdin = strings.NewReader(body)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	checkStatus(t, e, p)

	// The target goes away: a transaction that cannot be applied ends the
	// session, and readiness says why until the target is back.
	if err := target.Stop(); err != nil {
		t.Fatal(err)
	}
	psql(t, p.src, `INSERT INTO load (client, v) VALUES (9, 'while the target is down')`)
	waitFor(t, 60*time.Second, ready(http.StatusServiceUnavailable))
	if code, reason := e.get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(reason, "not streaming") || strings.Count(reason, "\n") != 1 {
		t.Errorf("/readyz with the target down answered %d %q, want 503 with a one-line reason", code, reason)
	}
	if code, _ := e.get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz answered %d while decant waits to retry, want 200", code)
	}
	if err := target.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, ready(http.StatusOK))
	psql(t, p.src, `DELETE FROM marker`) // for the next final marker
	p.catchUpTo(a)
	back, _ := e.metrics()
	if back[series("decant_reconnects_total")] < 1 || back[`decant_errors_total{class="transient",pipeline="`+p.name+`"}`] < 1 {
		t.Errorf("after the target came back: reconnects %v, transient errors %v; want at least 1 each",
			back[series("decant_reconnects_total")], back[`decant_errors_total{class="transient",pipeline="`+p.name+`"}`])
	}
	a.stop(t)
	if log := a.stderr.String(); !strings.Contains(log, "progress at stop") || !strings.Contains(log, "position=") {
		t.Errorf("no progress line at the stop:\n%s", log)
	}
	p.assertEqual()
}

// checkStatus: /status parses as decant status --json does and names
// the checkpoint the target holds.
func checkStatus(t *testing.T, e endpoint, p *pair) {
	t.Helper()
	code, body := e.get("/status")
	var st migrate.Status
	if err := json.Unmarshal([]byte(body), &st); err != nil || code != http.StatusOK {
		t.Fatalf("/status answered %d %q: %v", code, body, err)
	}
	if st.Pipeline != p.name || !st.Checkpoint.Exists || st.Checkpoint.EndLSN != p.checkpointEnd() || st.SourceLSN == "" {
		t.Errorf("/status = %+v, want pipeline %s at checkpoint %s", st, p.name, p.checkpointEnd())
	}
}
