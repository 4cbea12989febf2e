package migrate

import (
	"context"
	"errors"

	"github.com/decant/decant/source"
)

// The workflows know the source only through these interfaces; the
// caller wires in the implementations (cmd/decant: source/pgoutput.Admin
// and source/gauss.Admin), so that apply/ never imports a source reader.

// PGSource is a PostgreSQL source as the workflows use it: the catalog,
// publication, slot and fence work for the pipeline on one SQL session,
// plus the replication sessions that identify the server and export a
// snapshot. The slot and the publication are named after the pipeline.
type PGSource interface {
	CheckServer(ctx context.Context) error
	SelectTables(ctx context.Context, filter source.TableFilter) ([]source.Table, error)
	Relation(ctx context.Context, t source.Table) (*source.Relation, error)
	DescribeTable(ctx context.Context, name source.TableName) (*source.TableDef, error)
	SystemID(ctx context.Context) (string, error)

	// EnsurePublications brings the pipeline's publication and its
	// append-only one to want (source/pgoutput.EnsurePublications);
	// ReadPublications reads them, missing ones as empty.
	EnsurePublications(ctx context.Context, want source.Publications) (source.PublicationChanges, error)
	ReadPublications(ctx context.Context) (source.Publications, error)
	DropPublications(ctx context.Context) (main, appendOnly bool, err error)
	InstallDDLCapture(ctx context.Context, filter source.TableFilter) error
	RemoveDDLCapture(ctx context.Context) (bool, error)

	ReadSlot(ctx context.Context) (source.SlotStatus, error)
	EnsureSlot(ctx context.Context) (consistent source.LSN, created bool, err error)
	// ExportSlot creates the slot with an exported snapshot, which lives
	// until the result is closed.
	ExportSlot(ctx context.Context) (*source.ExportedSlot, error)
	// ExportSyncSlot creates a temporary slot (not the pipeline's) with
	// an exported snapshot, for add-tables: it marks where the copy
	// stands, and goes when the result is closed.
	ExportSyncSlot(ctx context.Context) (*source.ExportedSlot, error)
	DropSlot(ctx context.Context) (bool, error)

	WriteFence(ctx context.Context) (source.LSN, error)
	Sequences(ctx context.Context, table source.TableName) ([]source.Sequence, error)

	Close(ctx context.Context)
}

// GaussSource is a GaussDB or openGauss source as the workflows use it:
// the pipeline's slot (created in the order the decoding options ask
// for) and the definitions of the tables they select.
type GaussSource interface {
	// Slot reads the slot, the source's WAL position and its system
	// identifier.
	Slot(ctx context.Context) (source.SlotStatus, error)
	EnsureSlot(ctx context.Context) (slot source.SlotStatus, created bool, err error)
	DropSlot(ctx context.Context) (bool, error)
	DescribeTables(ctx context.Context, filter source.TableFilter) ([]*source.TableDef, error)
	// Fence takes cutover's goal: everything committed on the source
	// before it returns is covered once the checkpoint reaches the goal
	// (checkpoint.Row.Reached), which the pipeline's stream is sure to
	// reach (source/gauss.CSNGoal on a CSN-ordered slot).
	Fence(ctx context.Context) (source.Goal, error)
	Close(ctx context.Context)
}

// GaussOptions is what the GaussDB workflows ask of the source's
// decoding options (source/gauss.Options) before they connect.
type GaussOptions interface {
	// DDL reports whether the source sends DDL (enable-ddl-decoding).
	DDL() bool
	// Warnings are about options that are valid but have no effect.
	Warnings() []string
}

// openSource opens the PostgreSQL source through the caller's opener.
func (c *Config) openSource(ctx context.Context) (PGSource, error) {
	if c.OpenSource == nil {
		return nil, errors.New("migrate: Config.OpenSource is not set; the caller wires in the PostgreSQL source (source/pgoutput.OpenAdmin)")
	}
	return c.OpenSource(ctx)
}

// openGauss opens the GaussDB or openGauss source through the caller's
// opener.
func (c *Config) openGauss(ctx context.Context) (GaussSource, error) {
	if c.OpenGauss == nil {
		return nil, errors.New("migrate: Config.OpenGauss is not set; the caller wires in the GaussDB source (source/gauss.OpenAdmin)")
	}
	return c.OpenGauss(ctx)
}
