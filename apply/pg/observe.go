package pg

import (
	"context"
	"errors"
	"fmt"
)

// What a Target knows of its sessions, exported for the tests that check
// the writer against a real server (integration/pgtarget): nothing in
// decant acts on it.

// SessionState is the writer's view of its sessions.
type SessionState struct {
	PID      uint32 // backend pid of the main session; 0 while not connected
	Prepared int    // statements prepared on the main session, at most MaxPrepared
	Streams  int    // transactions streamed while in progress that hold a connection of their own
	// WALBlock and WALSegment are the WAL page and segment sizes the main
	// session read (recordEnd); 0 for a page layout recordEnd does not know.
	WALBlock, WALSegment uint64
}

// MaxPrepared bounds the statements one session prepares: past it, new
// statement shapes go unprepared.
const MaxPrepared = maxPrepared

// Session describes the writer's sessions as it knows them now.
func (t *Target) Session() SessionState {
	s := SessionState{Prepared: len(t.stmts), Streams: len(t.streams)}
	if t.conn != nil {
		s.PID = t.conn.PgConn().PID()
	}
	if t.wal != nil {
		s.WALBlock, s.WALSegment = t.wal.block, t.wal.segment
	}
	return s
}

// Setting reads run-time setting name of the main session.
func (t *Target) Setting(ctx context.Context, name string) (string, error) {
	if t.conn == nil {
		return "", errors.New("target: not connected")
	}
	if err := t.await(); err != nil {
		return "", err
	}
	var v string
	if err := t.conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
		return "", fmt.Errorf("target: read setting %s: %w", name, err)
	}
	return v, nil
}

// IsMainSessionGone reports whether err is the retryable refusal of a
// streamed transaction's connection that opened after the main session's
// backend ended (the server may have restarted and lost commits).
func IsMainSessionGone(err error) bool { return errors.As(err, new(mainSessionGone)) }
