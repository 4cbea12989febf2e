package bulk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// srcSession is a source session inside a read-only repeatable-read
// transaction that imported the exported snapshot: every query sees the
// database as of AsOf. Values print in decant's canonical text form (the
// pgsession settings), the form the streaming path receives.
type srcSession struct {
	conn    *pgx.Conn
	version int // server_version_num
}

// openSource connects and imports the snapshot.
func openSource(ctx context.Context, dsn, snapshot string) (*srcSession, error) {
	conn, err := pgsession.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s := &srcSession{conn: conn}
	if err := s.importSnapshot(ctx, snapshot); err != nil {
		s.close(ctx)
		return nil, err
	}
	return s, nil
}

func (s *srcSession) importSnapshot(ctx context.Context, snapshot string) error {
	if _, err := s.conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return fmt.Errorf("begin source transaction: %w", err)
	}
	_, err := s.conn.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+strings.ReplaceAll(snapshot, "'", "''")+"'")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pg.InvalidParameterValue {
		return fmt.Errorf("import snapshot %s: %w (%s); the copy cannot go on as of this position: start it again from a new slot and snapshot on emptied target tables",
			snapshot, ErrSnapshotGone, pgErr.Message)
	}
	if err != nil {
		return fmt.Errorf("import snapshot %s on the source: %w", snapshot, err)
	}
	v, err := strconv.Atoi(s.conn.PgConn().ParameterStatus("server_version_num"))
	if err != nil || v == 0 {
		err = s.conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v)
	}
	if err != nil {
		return fmt.Errorf("read source version: %w", err)
	}
	s.version = v
	return nil
}

// lock takes ACCESS SHARE locks on the tables for the rest of the
// transaction, as pg_dump does: no rewrite (VACUUM FULL, CLUSTER, ALTER
// TABLE) can move rows between block ranges while their tasks run. Where
// the server's lock table is too small for that many tables, the copy goes
// on without (each worker still locks a table from its first task on).
func (s *srcSession) lock(ctx context.Context, tables []source.TableName, log *slog.Logger) error {
	if len(tables) == 0 {
		return nil
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = mapping.QuotePGTable(t)
	}
	if _, err := s.conn.Exec(ctx, "SAVEPOINT decant_lock"); err != nil {
		return fmt.Errorf("lock source tables: %w", err)
	}
	_, err := s.conn.Exec(ctx, "LOCK TABLE "+strings.Join(names, ", ")+" IN ACCESS SHARE MODE")
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pg.OutOfSharedMemory {
		log.Warn("could not lock every source table for the copy; a concurrent table rewrite could go unnoticed",
			"tables", len(tables), "error", pgErr.Message)
		_, err = s.conn.Exec(ctx, "ROLLBACK TO SAVEPOINT decant_lock")
	}
	if err != nil {
		return fmt.Errorf("lock source tables: %w", err)
	}
	return nil
}

func (s *srcSession) close(ctx context.Context) {
	if s == nil || s.conn == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	s.conn.Close(cctx)
	s.conn = nil
}
