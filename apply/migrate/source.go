package migrate

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
	"github.com/decant/decant/source/pgsession"
)

// pgSource is a PostgreSQL source as the workflows use it: source/pgoutput's
// catalog, publication, slot and fence functions for the pipeline, on
// one SQL session, plus the replication sessions that identify the
// server and export a snapshot.
type pgSource interface {
	CheckServer(ctx context.Context) error
	SelectTables(ctx context.Context, filter source.TableFilter) ([]source.Table, error)
	Relation(ctx context.Context, t source.Table) (*source.Relation, error)
	DescribeTable(ctx context.Context, name source.TableName) (*source.TableDef, error)
	SystemID(ctx context.Context) (string, error)

	EnsurePublication(ctx context.Context, tables []source.TableName) (added, removed []source.TableName, err error)
	DropPublication(ctx context.Context) (bool, error)
	InstallDDLCapture(ctx context.Context, filter source.TableFilter) error
	RemoveDDLCapture(ctx context.Context) (bool, error)

	ReadSlot(ctx context.Context) (source.SlotStatus, error)
	EnsureSlot(ctx context.Context) (consistent source.LSN, created bool, err error)
	ExportSlot(ctx context.Context) (*exportedSlot, error)
	DropSlot(ctx context.Context) (bool, error)

	WriteFence(ctx context.Context) (source.LSN, error)
	Sequences(ctx context.Context, table source.TableName) ([]source.Sequence, error)

	Close(ctx context.Context)
}

// exportedSlot is the pipeline's slot created with an exported snapshot.
// The snapshot lives while the session that exported it stays open:
// close it after the copy.
type exportedSlot struct {
	Consistent source.LSN
	Snapshot   string
	close      func(ctx context.Context)
}

func (e *exportedSlot) Close(ctx context.Context) { e.close(ctx) }

// pgSession is pgSource on a real server. The slot and the publication
// are named after the pipeline.
type pgSession struct {
	conn          *pgx.Conn
	dsn, pipeline string
}

var _ pgSource = (*pgSession)(nil)

func connectSource(ctx context.Context, dsn, pipeline string) (pgSource, error) {
	conn, err := pgsession.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &pgSession{conn: conn, dsn: dsn, pipeline: pipeline}, nil
}

func (s *pgSession) Close(ctx context.Context) { s.conn.Close(ctx) }

func (s *pgSession) CheckServer(ctx context.Context) error {
	return pgoutput.CheckServer(ctx, s.conn, s.pipeline)
}

func (s *pgSession) SelectTables(ctx context.Context, filter source.TableFilter) ([]source.Table, error) {
	return pgoutput.SelectTables(ctx, s.conn, filter)
}

func (s *pgSession) Relation(ctx context.Context, t source.Table) (*source.Relation, error) {
	return pgoutput.Relation(ctx, s.conn, t)
}

func (s *pgSession) DescribeTable(ctx context.Context, name source.TableName) (*source.TableDef, error) {
	return pgoutput.DescribeTable(ctx, s.conn, name)
}

// SystemID identifies the source system over a replication session.
func (s *pgSession) SystemID(ctx context.Context) (string, error) {
	reader, err := pgoutput.NewReader(pgoutput.Config{DSN: s.dsn, Slot: s.pipeline, Publication: s.pipeline})
	if err != nil {
		return "", err
	}
	srv, err := reader.Identify(ctx)
	return srv.SystemID, err
}

func (s *pgSession) EnsurePublication(ctx context.Context, tables []source.TableName) (added, removed []source.TableName, err error) {
	return pgoutput.EnsurePublication(ctx, s.conn, s.pipeline, tables)
}

func (s *pgSession) DropPublication(ctx context.Context) (bool, error) {
	return pgoutput.DropPublication(ctx, s.conn, s.pipeline)
}

func (s *pgSession) InstallDDLCapture(ctx context.Context, filter source.TableFilter) error {
	return pgoutput.InstallDDLCapture(ctx, s.conn, s.pipeline, s.pipeline, filter)
}

func (s *pgSession) RemoveDDLCapture(ctx context.Context) (bool, error) {
	return pgoutput.RemoveDDLCapture(ctx, s.conn, s.pipeline)
}

func (s *pgSession) ReadSlot(ctx context.Context) (source.SlotStatus, error) {
	return pgoutput.ReadSlot(ctx, s.conn, s.pipeline)
}

func (s *pgSession) EnsureSlot(ctx context.Context) (source.LSN, bool, error) {
	return pgoutput.EnsureSlot(ctx, s.conn, s.pipeline)
}

func (s *pgSession) ExportSlot(ctx context.Context) (*exportedSlot, error) {
	exp, err := pgoutput.ExportSlot(ctx, s.dsn, s.pipeline)
	if err != nil {
		return nil, err
	}
	return &exportedSlot{Consistent: exp.Consistent, Snapshot: exp.Snapshot, close: exp.Close}, nil
}

func (s *pgSession) DropSlot(ctx context.Context) (bool, error) {
	return pgoutput.DropSlot(ctx, s.conn, s.pipeline)
}

func (s *pgSession) WriteFence(ctx context.Context) (source.LSN, error) {
	return pgoutput.WriteFence(ctx, s.conn, s.pipeline)
}

func (s *pgSession) Sequences(ctx context.Context, table source.TableName) ([]source.Sequence, error) {
	return pgoutput.Sequences(ctx, s.conn, table)
}
