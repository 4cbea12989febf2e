package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
)

// How every consumer is timed, the same way for each: a case's workload
// is loaded on the source while nothing consumes, then one marker row is
// committed last (bench_marker, a fresh id per case). A consumer's clock
// runs from its start until that row is visible on its target, asked by a
// primary-key lookup every pollEvery on one connection opened before the
// clock starts: a connection per poll would cost the target a backend
// start each time, and a scan or a fingerprint would take CPU from the
// very apply it is timing. pg_recvlogical, which writes nowhere, is timed
// until it exits at --endpos, the position just after the marker's commit.

const (
	pollEvery = 15 * time.Millisecond
	// consumerLimit bounds one consumer's interval, so that a consumer
	// that never gets there fails the bench instead of hanging it.
	consumerLimit = 30 * time.Minute
)

// marker is the row a case commits after its workload.
type marker struct {
	id int
	// in is a position inside the marker's transaction, after its insert
	// and before its commit: a slot whose confirmed_flush_lsn has reached
	// it has confirmed the marker's commit. end is the position just after
	// that commit, pg_recvlogical's --endpos.
	in, end string
}

// commitMarker commits the case's marker row on the source.
func (b *bench) commitMarker(ctx context.Context, id int) (marker, error) {
	mk := marker{id: id}
	conn, err := pgx.Connect(ctx, b.srcDSN)
	if err != nil {
		return mk, err
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		return mk, err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO bench_marker VALUES ($1)`, id); err != nil {
		return mk, fmt.Errorf("marker: %w", err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&mk.in); err != nil {
		return mk, err
	}
	if err := tx.Commit(ctx); err != nil {
		return mk, fmt.Errorf("marker: %w", err)
	}
	err = conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&mk.end)
	return mk, err
}

// meter times one consumer: begin starts the clock, and stop (the marker
// is on the target) or exited (the consumer's process has ended) stops it
// and reads what the servers used in between.
type meter struct {
	b             *bench
	start         time.Time
	elapsed       time.Duration
	before, after servers
	kids          map[int]bool // the clusters' processes at begin
	// agentCPU and agentRSS are the consumer process's CPU time and peak
	// RSS at stop, when stop was given its pid.
	agentCPU time.Duration
	agentRSS int64
	stopped  bool
	// stall is how long, over the interval, some runnable task on the
	// machine waited for a CPU (/proc/pressure/cpu): how much the other
	// work on the machine weighed on this figure. -1 without PSI.
	stall, stallStart time.Duration
}

func (m *meter) begin() error {
	var err error
	if m.kids, err = m.b.pgChildren(); err != nil {
		return err
	}
	if m.before, err = m.b.serverCPU(); err != nil {
		return err
	}
	m.stallStart = cpuStall()
	m.start = time.Now()
	return nil
}

// cpuStall reads the machine's total CPU "some" stall time, -1 when the
// kernel has no pressure stall information.
func cpuStall() time.Duration {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(b), "\n")
	_, total, ok := strings.Cut(line, "total=")
	if !strings.HasPrefix(line, "some ") || !ok {
		return -1
	}
	us, err := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
	if err != nil {
		return -1
	}
	return time.Duration(us) * time.Microsecond
}

// stopStall records the stall over the interval.
func (m *meter) stopStall() {
	m.stall = -1
	if end := cpuStall(); end >= 0 && m.stallStart >= 0 {
		m.stall = end - m.stallStart
	}
}

// stop stops the clock and reads at once the CPU time of agent (the
// consumer's process, 0 for none) and of the servers: the sessions the
// consumer holds are still open and their time is read live, and nothing
// after the marker is counted.
func (m *meter) stop(agent int) error {
	m.elapsed = time.Since(m.start)
	m.stopStall()
	m.stopped = true
	if agent > 0 {
		p, err := procStat(agent)
		if err != nil {
			return err
		}
		m.agentCPU = p.self + p.reaped
		if m.agentRSS, err = peakRSS(agent); err != nil {
			return err
		}
	}
	var err error
	m.after, err = m.b.serverCPU()
	return err
}

// exited stops the clock for a consumer whose process has just ended,
// then waits until the servers have reaped the sessions it held, whose
// CPU time would otherwise be missed, before reading the servers' CPU.
func (m *meter) exited(ctx context.Context) error {
	m.elapsed = time.Since(m.start)
	m.stopStall()
	m.stopped = true
	if err := m.b.waitReaped(ctx, m.kids); err != nil {
		return err
	}
	var err error
	m.after, err = m.b.serverCPU()
	return err
}

// poller asks a target whether the marker row is there.
type poller interface {
	seen(ctx context.Context, id int) (bool, error)
	close()
}

type pgPoller struct{ conn *pgx.Conn }

func newPGPoller(ctx context.Context, dsn string) (*pgPoller, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &pgPoller{conn}, nil
}

func (p *pgPoller) seen(ctx context.Context, id int) (bool, error) {
	var ok bool
	err := p.conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bench_marker WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}

func (p *pgPoller) close() { p.conn.Close(context.Background()) }

// myPoller holds one connection of its own out of database/sql's pool.
// Each lookup runs in autocommit, so it sees what committed before it.
type myPoller struct {
	db   *sql.DB
	conn *sql.Conn
}

func newMyPoller(ctx context.Context, port int, db string) (*myPoller, error) {
	pool, err := sql.Open("mysql", fmt.Sprintf("decant:decant@tcp(127.0.0.1:%d)/%s", port, db))
	if err != nil {
		return nil, err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &myPoller{pool, conn}, nil
}

func (p *myPoller) seen(ctx context.Context, id int) (bool, error) {
	var n int
	// The id is the bench's own integer: in the text, the lookup is one
	// round trip, where a placeholder would prepare and close a statement
	// each time.
	err := p.conn.QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM bench_marker WHERE id = %d", id)).Scan(&n)
	return n > 0, err
}

func (p *myPoller) close() {
	p.conn.Close()
	p.db.Close()
}

// waitMarker polls until the marker is on the target, the consumer's
// process ends (exited is closed; nil for a consumer without one) or
// consumerLimit passes.
func waitMarker(ctx context.Context, p poller, id int, exited <-chan struct{}) error {
	deadline := time.Now().Add(consumerLimit)
	for {
		ok, err := p.seen(ctx, id)
		if err != nil {
			return fmt.Errorf("poll the marker: %w", err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("marker %d not on the target after %s", id, consumerLimit)
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before the marker reached the target")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

// waitConfirmed lets a consumer that has applied the marker run on,
// untimed, until its slot has confirmed the marker's commit and its
// restart_lsn has passed the marker, so that the next case starts it from
// there and not from an older position it would decode again inside the
// next timed interval (after the large case, that is a whole 1M-row
// transaction decoded a second time). restart_lsn moves only when the
// consumer confirms a position past a running-transactions record decoded
// after the marker; a CHECKPOINT on the source writes one, and a live
// consumer confirms past it with its next idle status update. A consumer
// that has exited (live false: pg_recvlogical at its end position) has its
// slot advanced past that record instead. The wait is bounded in case a
// consumer does not report.
func (b *bench) waitConfirmed(ctx context.Context, slot string, mk marker, live bool) error {
	conn, err := pgx.Connect(ctx, b.srcDSN)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(30 * time.Second)
	checkpointed := false
	for {
		var confirmed, restarted bool
		err := conn.QueryRow(ctx, `SELECT coalesce(confirmed_flush_lsn >= $2::pg_lsn, false), coalesce(restart_lsn >= $2::pg_lsn, false)
			FROM pg_replication_slots WHERE slot_name = $1`, slot, mk.in).Scan(&confirmed, &restarted)
		if err != nil {
			return fmt.Errorf("slot %s: %w", slot, err)
		}
		if confirmed && restarted {
			return nil
		}
		if confirmed && !checkpointed {
			if _, err := conn.Exec(ctx, `CHECKPOINT`); err != nil {
				return fmt.Errorf("checkpoint for slot %s: %w", slot, err)
			}
			checkpointed = true
			if !live {
				if _, err := conn.Exec(ctx, `SELECT pg_replication_slot_advance($1, pg_current_wal_lsn())`, slot); err != nil {
					return fmt.Errorf("advance slot %s: %w", slot, err)
				}
			}
			continue
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "warning: slot %s has not confirmed the marker (%v) or moved its restart position past it (%v) 30 s after it was applied; the next case restarts it further back\n", slot, confirmed, restarted)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// timeDecant runs decant run as in production, until SIGTERM: it starts
// the process, waits for the marker on the target, stops the clock and
// reads the process's CPU time and peak RSS at that moment, then lets it
// confirm the marker to the source and stops it.
func (b *bench) timeDecant(ctx context.Context, m *meter, p poller, mk marker, target, pipeline string, args []string) (result, error) {
	defer p.close()
	run := append([]string{"run"}, args...)
	if profileDir != "" {
		run = append(run, "--cpuprofile", filepath.Join(profileDir, b.caseKey+"-"+pipeline+".pprof"))
	}
	cmd := b.decant(ctx, target, pipeline, run...)
	var out bytes.Buffer // read only once the process has been waited for
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := m.begin(); err != nil {
		return result{}, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, fmt.Errorf("decant %s: %w", pipeline, err)
	}
	exited := make(chan struct{})
	var werr error // cmd.Wait's, once exited is closed
	go func() { werr = cmd.Wait(); close(exited) }()
	// end stops the process, and says how it went with its output.
	end := func(err error) error {
		select {
		case <-exited: // it has already ended
			return fmt.Errorf("decant %s: %v (%v)\n%s", pipeline, err, werr, out.Bytes())
		default:
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			<-exited
			werr = fmt.Errorf("did not exit within 60 s of SIGTERM; killed")
		}
		if err == nil && werr != nil {
			err = werr
		}
		if err != nil {
			return fmt.Errorf("decant %s: %v\n%s", pipeline, err, out.Bytes())
		}
		return nil
	}
	if err := waitMarker(ctx, p, mk.id, exited); err != nil {
		return result{}, end(err)
	}
	if err := m.stop(cmd.Process.Pid); err != nil {
		return result{}, end(err)
	}
	r := result{rssKiB: m.agentRSS, cpuSelf: m.agentCPU, decant: append([]string{"run"}, args...)}
	return r, end(b.waitConfirmed(ctx, pipeline, mk, true))
}

// timeNative sets the subscription's streaming option, enables it and
// waits for the marker on the subscriber, then disables it again for the
// next case. The clock starts at ALTER SUBSCRIPTION ENABLE, sent on the
// polling session.
func (b *bench) timeNative(ctx context.Context, m *meter, mk marker, streaming bool) (result, error) {
	subDSN := b.tgt.DSN("native")
	opt := "off"
	if streaming {
		opt = "on"
	}
	if err := execSQL(ctx, subDSN, `ALTER SUBSCRIPTION native SET (streaming = `+opt+`)`); err != nil {
		return result{}, err
	}
	p, err := newPGPoller(ctx, subDSN)
	if err != nil {
		return result{}, err
	}
	defer p.close()
	if err := m.begin(); err != nil {
		return result{}, err
	}
	if _, err := p.conn.Exec(ctx, `ALTER SUBSCRIPTION native ENABLE`); err != nil {
		return result{}, err
	}
	if err := waitMarker(ctx, p, mk.id, nil); err != nil {
		return result{}, err
	}
	if err := m.stop(0); err != nil {
		return result{}, err
	}
	if err := b.waitConfirmed(ctx, "native", mk, true); err != nil {
		return result{}, err
	}
	if _, err := p.conn.Exec(ctx, `ALTER SUBSCRIPTION native DISABLE`); err != nil {
		return result{}, err
	}
	conn, err := pgx.Connect(ctx, b.srcDSN)
	if err != nil {
		return result{}, err
	}
	defer conn.Close(ctx)
	for { // wait for the apply worker to release the slot
		var active bool
		if err := conn.QueryRow(ctx, `SELECT active FROM pg_replication_slots WHERE slot_name = 'native'`).Scan(&active); err != nil {
			return result{}, err
		}
		if !active {
			return result{}, nil
		}
		select {
		case <-ctx.Done():
			return result{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// timeDrain times pg_recvlogical decoding the slot up to the marker.
func (b *bench) timeDrain(ctx context.Context, m *meter, slot string, mk marker) (result, error) {
	if err := m.begin(); err != nil {
		return result{}, err
	}
	r, err := runCmd("pg_recvlogical", b.drain(ctx, slot, mk.end))
	if err != nil {
		return r, err
	}
	if err := m.exited(ctx); err != nil {
		return r, err
	}
	// It has exited: a short wait for what the walsender made of its last
	// status update, then the next case starts wherever it is.
	return r, b.waitConfirmed(ctx, slot, mk, false)
}

// drain is pg_recvlogical decoding slot up to end into /dev/null.
func (b *bench) drain(ctx context.Context, slot, end string) *exec.Cmd {
	return exec.CommandContext(ctx, "/usr/lib/postgresql/15/bin/pg_recvlogical",
		"-d", connString(b.src.Port, "bench"), "--slot", slot, "--start", "--endpos", end,
		"-o", "proto_version=1", "-o", "publication_names=bench", "-f", "/dev/null", "--no-loop")
}

// runCmd runs cmd to its end and reports its peak RSS (the child's
// ru_maxrss, in KiB on Linux), its CPU time and its own wall time; name
// says what failed.
func runCmd(name string, cmd *exec.Cmd) (result, error) {
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	r := result{elapsed: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rssKiB = ru.Maxrss
		r.cpuSelf = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return r, nil
}
