package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/source"
)

// Asynchronous commit (Config.AsyncCommit; decant run --synchronous-commit
// off), as PostgreSQL's own apply worker commits.
//
// The writer's sessions run with synchronous_commit = off: a COMMIT
// returns once its record is in the WAL buffers, and the walwriter writes
// it to disk within wal_writer_delay (three times that at worst). A crash
// of the target before then loses the transaction and its checkpoint row
// alike, so exactly once holds; what must not happen is that the source
// hears of it as flushed first (apply.DurableTarget). So every COMMIT goes
// out with a query for where the target's WAL ends now and how far it is
// flushed, in the same round trip; the insert position read after the
// commit is at or past the end of its commit record (recordEnd).
//
// A transaction streamed while in progress commits on a connection of its
// own, whose writer shares the main writer's walState, so the pipeline
// learns of its commit alike. Such a connection opens in the middle of a
// session: had the server crashed since the session began, the session's
// commits not yet on disk would be lost, and one more commit would record
// a checkpoint past them, on a target without them. A crash ends every
// backend, so a stream's connection first checks that the main session's
// backend still runs.

// walState is what a writer and its streams' writers know of the target's
// WAL.
type walState struct {
	main *Target // the writer whose session the pipeline opened
	// end and flushed are of the last commit: a WAL position at or past
	// its end, and how far the WAL was flushed as it returned.
	end, flushed source.LSN
	// pid and started name the main session's backend.
	pid     uint32
	started int64 // backend_start, in microseconds since 1970
	// block and segment are the WAL's page and segment sizes, when its
	// page headers are those recordEnd knows (0: unknown).
	block, segment uint64
}

// The sizes of a WAL page's header, and of the first page's in a
// segment, on a server with 8-byte alignment (SizeOfXLogShortPHD and
// SizeOfXLogLongPHD).
const (
	shortPageHeader = 24
	longPageHeader  = 40
)

// recordEnd turns the WAL insert position read after a commit into a
// position at or past the end of every record before it that a flush
// reaches. The insert position is where the next record starts: when the
// last record filled its page, that is past the next page's header, while
// the WAL flushed to the end of that record stops at the page's start (and
// on an idle server would never pass it). Only then does the position sit
// right after a page header: no record ends there.
func (w *walState) recordEnd(insert source.LSN) source.LSN {
	switch {
	case w.segment > 0 && uint64(insert)%w.segment == longPageHeader:
		return insert - longPageHeader
	case w.block > 0 && uint64(insert)%w.block == shortPageHeader:
		return insert - shortPageHeader
	}
	return insert
}

var _ apply.DurableTarget = (*Target)(nil)

// walPositions reads the WAL's insert and flush positions.
const walPositions = "SELECT pg_current_wal_insert_lsn()::text, pg_current_wal_flush_lsn()::text"

// Async reports whether the writer commits with synchronous_commit = off.
func (t *Target) Async() bool { return t.cfg.AsyncCommit }

// LastCommit tells where the last commit ends in the target's WAL, at the
// latest, and how far the WAL was flushed as it returned. Without a
// session set up, which a commit cannot be, it names no flush that ever
// reaches it.
func (t *Target) LastCommit() (end, flushed source.LSN) {
	if t.wal == nil {
		return ^source.LSN(0), 0
	}
	return t.wal.end, t.wal.flushed
}

// Flushed asks the target how far its WAL is flushed and where it ends.
func (t *Target) Flushed(ctx context.Context) (flushed, end source.LSN, err error) {
	if t.conn == nil {
		return 0, 0, errors.New("target: not connected")
	}
	if err := t.await(); err != nil {
		return 0, 0, err
	}
	err = t.bound().Do(ctx, "reading the WAL position", func(ctx context.Context) error {
		res, err := t.conn.PgConn().Exec(ctx, walPositions).ReadAll()
		if err != nil {
			return err
		}
		end, flushed, err = scanWAL(res)
		return err
	})
	if err == nil && t.wal != nil {
		end = t.wal.recordEnd(end)
	}
	return flushed, end, err
}

// walSession sets a new session up. The main one learns its backend and
// the WAL's page layout (recordEnd); with AsyncCommit every session
// commits with synchronous_commit = off, and a stream's first checks that
// the main session's backend still runs.
func (t *Target) walSession(ctx context.Context, conn *pgx.Conn) error {
	if t.wal == nil {
		t.wal = &walState{main: t}
	}
	set := ""
	if t.cfg.AsyncCommit {
		set = "SET synchronous_commit = off; "
	}
	if w := t.wal; w.main != t {
		if !t.cfg.AsyncCommit {
			return nil
		}
		var running int
		err := sessionQuery(ctx, t, conn, set+fmt.Sprintf(`SELECT count(*) FROM pg_stat_activity
			WHERE pid = %d AND (extract(epoch FROM backend_start) * 1000000)::bigint = %d`, w.pid, w.started), &running)
		if err == nil && running == 0 {
			err = mainSessionGone{}
		}
		return err
	}
	w := walState{main: t}
	err := sessionQuery(ctx, t, conn, set+`SELECT pg_backend_pid(), (extract(epoch FROM a.backend_start) * 1000000)::bigint,
			CASE WHEN c.max_data_alignment = 8 THEN c.wal_block_size ELSE 0 END, CASE WHEN c.max_data_alignment = 8 THEN c.bytes_per_wal_segment ELSE 0 END
		FROM pg_stat_activity a, pg_control_init() c WHERE a.pid = pg_backend_pid()`, &w.pid, &w.started, &w.block, &w.segment)
	*t.wal = w
	return err
}

// sessionQuery runs sql (settings, then a query for one row) and scans
// the row's values into dst.
func sessionQuery(ctx context.Context, t *Target, conn *pgx.Conn, sql string, dst ...any) error {
	err := t.bound().Do(ctx, "setting the session up", func(ctx context.Context) error {
		res, err := conn.PgConn().Exec(ctx, sql).ReadAll()
		if err != nil {
			return err
		}
		if len(res) == 0 || len(res[len(res)-1].Rows) != 1 {
			return errors.New("no answer to the query for the session's backend")
		}
		var text []string
		for _, v := range res[len(res)-1].Rows[0] {
			text = append(text, string(v))
		}
		_, err = fmt.Sscan(strings.Join(text, " "), dst...)
		return err
	})
	if err != nil {
		return fmt.Errorf("target: set the session up for commits: %w", err)
	}
	return nil
}

// mainSessionGone: the target server may have restarted since the
// session began, taking commits not yet on disk with it. The pipeline
// resumes from the checkpoint the target holds now.
type mainSessionGone struct{}

func (mainSessionGone) Error() string {
	return "target: the main target session ended before a streamed transaction's connection opened (did the server restart?); with asynchronous commit its last commits may be lost: resuming from the checkpoint"
}

func (mainSessionGone) Retryable() bool { return true }

// commitSQL is the COMMIT, with the query for the WAL's positions when
// the session commits asynchronously.
func (t *Target) commitSQL() string {
	if t.cfg.AsyncCommit {
		return "COMMIT; " + walPositions
	}
	return "COMMIT"
}

// committed notes where the commit that just returned ends in the WAL:
// res holds what came back after the COMMIT's own result.
func (t *Target) committed(res []*pgconn.Result) error {
	if !t.cfg.AsyncCommit {
		return nil
	}
	end, flushed, err := scanWAL(res)
	if err != nil {
		return err
	}
	t.wal.end, t.wal.flushed = t.wal.recordEnd(end), flushed
	return nil
}

// committedAlone notes where the commit of a checkpoint written alone (in
// a transaction of its own, committed as the batch ended) ends.
func (t *Target) committedAlone(ctx context.Context) error {
	if !t.cfg.AsyncCommit {
		return nil
	}
	flushed, end, err := t.Flushed(ctx)
	if err != nil {
		return err
	}
	t.wal.end, t.wal.flushed = end, flushed
	return nil
}

// scanWAL reads walPositions' answer, the first result of res.
func scanWAL(res []*pgconn.Result) (end, flushed source.LSN, err error) {
	if len(res) == 0 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 2 {
		return 0, 0, errors.New("no answer to the query for the WAL's position")
	}
	row := res[0].Rows[0]
	if end, err = source.ParseLSN(string(row[0])); err == nil {
		flushed, err = source.ParseLSN(string(row[1]))
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read the WAL's position: %w", err)
	}
	return end, flushed, nil
}
