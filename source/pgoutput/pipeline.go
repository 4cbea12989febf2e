package pgoutput

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Admin is one pipeline's setup session on a PostgreSQL source: this
// package's catalog, publication, slot and fence functions on one SQL
// session, with the slot and the publication named after the pipeline,
// plus the replication sessions that identify the server and export a
// snapshot. apply/migrate's workflows take it through their PGSource
// interface.
type Admin struct {
	conn          *pgx.Conn
	dsn, pipeline string
}

// OpenAdmin opens the pipeline's setup session on the source at dsn.
func OpenAdmin(ctx context.Context, dsn, pipeline string) (*Admin, error) {
	conn, err := pgsession.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &Admin{conn: conn, dsn: dsn, pipeline: pipeline}, nil
}

// Close ends the session.
func (a *Admin) Close(ctx context.Context) { a.conn.Close(ctx) }

// CheckServer runs CheckServer for the pipeline's slot.
func (a *Admin) CheckServer(ctx context.Context) error {
	return CheckServer(ctx, a.conn, a.pipeline)
}

// SelectTables runs SelectTables.
func (a *Admin) SelectTables(ctx context.Context, filter source.TableFilter) ([]source.Table, error) {
	return SelectTables(ctx, a.conn, filter)
}

// Relation runs Relation.
func (a *Admin) Relation(ctx context.Context, t source.Table) (*source.Relation, error) {
	return Relation(ctx, a.conn, t)
}

// DescribeTable runs DescribeTable.
func (a *Admin) DescribeTable(ctx context.Context, name source.TableName) (*source.TableDef, error) {
	return DescribeTable(ctx, a.conn, name)
}

// SystemID identifies the source system over a replication session.
func (a *Admin) SystemID(ctx context.Context) (string, error) {
	reader, err := NewReader(Config{DSN: a.dsn, Slot: a.pipeline, Publication: a.pipeline})
	if err != nil {
		return "", err
	}
	srv, err := reader.Identify(ctx)
	return srv.SystemID, err
}

// EnsurePublications runs EnsurePublications for the pipeline's
// publications.
func (a *Admin) EnsurePublications(ctx context.Context, want source.Publications) (source.PublicationChanges, error) {
	return EnsurePublications(ctx, a.conn, a.pipeline, want)
}

// ReadPublications runs ReadPublications for the pipeline's publications.
func (a *Admin) ReadPublications(ctx context.Context) (source.Publications, error) {
	return ReadPublications(ctx, a.conn, a.pipeline)
}

// DropPublications runs DropPublications for the pipeline's publications.
func (a *Admin) DropPublications(ctx context.Context) (main, appendOnly bool, err error) {
	return DropPublications(ctx, a.conn, a.pipeline)
}

// InstallDDLCapture runs InstallDDLCapture for the pipeline and its
// publication.
func (a *Admin) InstallDDLCapture(ctx context.Context, filter source.TableFilter) error {
	return InstallDDLCapture(ctx, a.conn, a.pipeline, a.pipeline, filter)
}

// RemoveDDLCapture runs RemoveDDLCapture for the pipeline.
func (a *Admin) RemoveDDLCapture(ctx context.Context) (bool, error) {
	return RemoveDDLCapture(ctx, a.conn, a.pipeline)
}

// ReadSlot runs ReadSlot for the pipeline's slot.
func (a *Admin) ReadSlot(ctx context.Context) (source.SlotStatus, error) {
	return ReadSlot(ctx, a.conn, a.pipeline)
}

// EnsureSlot runs EnsureSlot for the pipeline's slot.
func (a *Admin) EnsureSlot(ctx context.Context) (source.LSN, bool, error) {
	return EnsureSlot(ctx, a.conn, a.pipeline)
}

// ExportSlot creates the pipeline's slot with an exported snapshot
// (ExportSlot), on a replication session of its own that holds the
// snapshot until the result is closed.
func (a *Admin) ExportSlot(ctx context.Context) (*source.ExportedSlot, error) {
	exp, err := ExportSlot(ctx, a.dsn, a.pipeline)
	if err != nil {
		return nil, err
	}
	return source.NewExportedSlot(exp.Consistent, exp.Snapshot, exp.Close), nil
}

// ExportSyncSlot creates a temporary slot with an exported snapshot
// (ExportTempSlot), named after the pipeline with a _sync suffix, for
// decant add-tables.
func (a *Admin) ExportSyncSlot(ctx context.Context) (*source.ExportedSlot, error) {
	exp, err := ExportTempSlot(ctx, a.dsn, SyncSlot(a.pipeline))
	if err != nil {
		return nil, err
	}
	return source.NewExportedSlot(exp.Consistent, exp.Snapshot, exp.Close), nil
}

// SyncSlot names the temporary slot of a pipeline's add-tables copy.
func SyncSlot(pipeline string) string { return pipeline + "_sync" }

// DropSlot runs DropSlot for the pipeline's slot.
func (a *Admin) DropSlot(ctx context.Context) (bool, error) {
	return DropSlot(ctx, a.conn, a.pipeline)
}

// WriteFence runs WriteFence for the pipeline.
func (a *Admin) WriteFence(ctx context.Context) (source.LSN, error) {
	return WriteFence(ctx, a.conn, a.pipeline)
}

// Sequences runs Sequences.
func (a *Admin) Sequences(ctx context.Context, table source.TableName) ([]source.Sequence, error) {
	return Sequences(ctx, a.conn, table)
}
