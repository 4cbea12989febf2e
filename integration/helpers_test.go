package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/integration/compare"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// pair is one test's source and target database and its pipeline name.
type pair struct {
	t        testing.TB
	name     string
	src, tgt string // DSNs
	mysql    bool   // the target is MariaDB
	policy   mapping.Policy
	extra    []string // arguments added to init and run
}

var (
	dbNameRe = regexp.MustCompile(`[^a-z0-9_]+`)
	pairSeq  atomic.Int64
)

// newTargetPair is newMySQLPair when mysql is set, else newPair.
func newTargetPair(t testing.TB, mysql bool) *pair {
	t.Helper()
	if mysql {
		return newMySQLPair(t)
	}
	return newPair(t)
}

// newMySQLPair creates a fresh source database and a MariaDB target
// database for the test.
func newMySQLPair(t testing.TB) *pair {
	t.Helper()
	p := newPair(t)
	if err := targetMy.CreateDatabase(t.Context(), p.name); err != nil {
		t.Fatal(err)
	}
	p.tgt, p.mysql = targetMy.DSN(p.name), true
	return p
}

// newPair creates a fresh source and target database for the test.
func newPair(t testing.TB) *pair {
	t.Helper()
	name := strings.Trim(dbNameRe.ReplaceAllString(strings.ToLower(t.Name()), "_"), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	name = fmt.Sprintf("t%d_%s", pairSeq.Add(1), name)
	ctx := t.Context()
	if err := sourcePG.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := targetPG.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	p := &pair{t: t, name: name, src: sourcePG.DSN(name), tgt: targetPG.DSN(name)}
	t.Cleanup(func() {
		// Drop the slot so the shared source cluster keeps no WAL for it.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, p.src); err == nil {
			c.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active`, p.name)
			c.Close(ctx)
		}
		dropOrigins(ctx, targetPG.DSN(name), p.name)
	})
	return p
}

// dropOrigins drops the replication origins a pipeline's apply sessions
// took on dsn's server: each keeps one of its max_replication_slots
// replication states, which the shared clusters would run out of.
func dropOrigins(ctx context.Context, dsn, pipeline string) {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT roname FROM pg_replication_origin WHERE roname = $1 OR starts_with(roname, $1 || '.')`, "decant_"+pipeline)
	if err != nil {
		return
	}
	names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, n := range names {
		c.Exec(ctx, `SELECT pg_replication_origin_drop($1)`, n)
	}
}

// both runs SQL on source and target (the schema).
func (p *pair) both(sql string) {
	p.t.Helper()
	psql(p.t, p.src, sql)
	psql(p.t, p.tgt, sql)
}

// psql runs SQL through psql, statement by statement, stopping on error.
func psql(t testing.TB, dsn, sql string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", "-")
	cmd.Stdin = strings.NewReader(sql)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	return string(out)
}

// connect opens a session with decant's canonical text settings, so that
// row texts compare equal exactly when the values are equal.
func connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	c, err := compare.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// decant runs the CLI to completion.
func (p *pair) decant(args ...string) (stdout, stderr string, code int) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, decantBin, p.args(args...)...)
	// A run that hangs is ended with SIGQUIT: the Go runtime prints every
	// goroutine's stack to stderr, which the failing test shows, so that
	// a hang seen once says where it was.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			p.t.Fatalf("decant %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

func (p *pair) args(args ...string) []string {
	if len(args) > 0 && (args[0] == "init" || args[0] == "run") {
		args = append(args, p.extra...)
	}
	return append(args, "--source", p.src, "--target", p.tgt, "--pipeline", p.name)
}

// mustDecant runs the CLI and fails the test unless it exits 0.
func (p *pair) mustDecant(args ...string) string {
	p.t.Helper()
	out, errOut, code := p.decant(args...)
	if code != 0 {
		p.t.Fatalf("decant %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out + errOut
}

// agent is a background `decant run`.
type agent struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(b)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start launches `decant run` in the background.
func (p *pair) start(args ...string) *agent {
	p.t.Helper()
	return p.launch(append([]string{"run"}, args...)...)
}

// launch runs a decant command in the background; its stdout and stderr
// go to the agent's buffer.
func (p *pair) launch(args ...string) *agent {
	p.t.Helper()
	a := &agent{stderr: &syncBuffer{}, done: make(chan struct{})}
	a.cmd = exec.Command(decantBin, p.args(args...)...)
	a.cmd.Stderr = a.stderr
	a.cmd.Stdout = a.stderr
	if err := a.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	go func() { a.err = a.cmd.Wait(); close(a.done) }()
	p.t.Cleanup(func() { a.kill() })
	return a
}

// wait waits for the command to end and returns how it ended.
func (a *agent) wait() error {
	<-a.done
	return a.err
}

func (a *agent) kill() {
	select {
	case <-a.done:
	default:
		a.cmd.Process.Kill()
		<-a.done
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (a *agent) stop(t testing.TB) {
	t.Helper()
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		a.kill()
		t.Fatalf("decant run did not stop within 30s after SIGTERM\n%s", a.stderr.String())
	}
	if a.err != nil {
		t.Fatalf("decant run exited with %v after SIGTERM\n%s", a.err, a.stderr.String())
	}
}

// catchUp applies everything committed so far and checks target = source.
func (p *pair) catchUp() {
	p.t.Helper()
	out := p.mustDecant("run", "--catch-up", "--log-level", "debug")
	p.t.Log(out)
	p.assertEqual()
}

// assertEqual compares every source table with the target, row by row.
func (p *pair) assertEqual() {
	p.t.Helper()
	var results []compare.Result
	var err error
	if p.mysql {
		results, err = compare.MySQL(p.t.Context(), p.src, p.tgt, p.policy)
	} else {
		results, err = compare.PG(p.t.Context(), p.src, p.tgt)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	if len(results) == 0 {
		p.t.Fatal("source has no tables to compare")
	}
	for _, r := range results {
		p.t.Logf("table %s: %d rows on source, %d on target", r.Table, len(r.Source), len(r.Dest))
		if d := compare.Diff(r.Source, r.Dest); d != "" {
			p.t.Errorf("table %s: target differs from source (%d source rows, %d target rows):\n%s", r.Table, len(r.Source), len(r.Dest), d)
		}
	}
}

// queryValue runs a query returning one value, as text. The session is
// closed at once, not at the test's end: tests poll with
// it (waitFor), and a session kept per poll filled the shared servers'
// max_connections.
func queryValue(t testing.TB, dsn, sql string) string {
	t.Helper()
	c, err := compare.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	var v string
	if err := c.QueryRow(t.Context(), sql).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// sqlState returns the SQLSTATE of a server error, or "".
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// checkpointXid reads the xid of the last applied transaction.
func (p *pair) checkpointXid() string {
	p.t.Helper()
	if p.mysql {
		return p.myValue(`SELECT COALESCE(xid, '') FROM decant_checkpoint WHERE pipeline = '` + p.name + `'`)
	}
	return queryValue(p.t, p.tgt, fmt.Sprintf(`SELECT coalesce(xid::text, '') FROM decant.checkpoint WHERE pipeline = '%s'`, p.name))
}

// checkpointEnd reads the checkpoint's resume position (pg_lsn text).
func (p *pair) checkpointEnd() string {
	p.t.Helper()
	if p.mysql {
		n, err := strconv.ParseUint(p.myValue(`SELECT end_lsn FROM decant_checkpoint WHERE pipeline = '`+p.name+`'`), 10, 64)
		if err != nil {
			p.t.Fatal(err)
		}
		return source.LSN(n).String()
	}
	return queryValue(p.t, p.tgt, fmt.Sprintf(`SELECT end_lsn::text FROM decant.checkpoint WHERE pipeline = '%s'`, p.name))
}

// runDecant runs the CLI with exactly the given arguments.
func runDecant(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := &pair{t: t}
	cmd := exec.CommandContext(t.Context(), decantBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func itoa(n int) string { return strconv.Itoa(n) }
