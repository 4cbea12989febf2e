package source

import (
	"context"
	"time"
)

// What a source's setup session reports: the tables it would publish, the
// pipeline's slot, and a slot made together with an exported snapshot.
// The readers' sub-packages fill them in; the workflows that set a
// pipeline up (apply/migrate) read them without knowing which source
// answered.

// Table is a source table selected for replication.
type Table struct {
	Name     TableName
	Identity Identity
	HasPK    bool
}

// Replicable reports whether UPDATE and DELETE on the table can be
// published: PostgreSQL refuses them on the source itself otherwise.
func (t Table) Replicable() bool {
	switch t.Identity {
	case IdentityFull, IdentityIndex:
		return true
	case IdentityDefault:
		return t.HasPK
	}
	return false
}

// Publications are the tables a PostgreSQL pipeline publishes, in its two
// publications: Tables in the one named after the pipeline, every change;
// AppendOnly, keyless tables whose rows are only inserted, in the second
// one (publish = 'insert, truncate'), so that their UPDATEs and DELETEs
// keep working on the source, unreplicated, without a replica identity.
type Publications struct {
	Tables     []TableName
	AppendOnly []TableName
	// HasAppendOnly: the second publication, named AppendOnlyName,
	// exists (both set when read from the source). A pipeline made before
	// decant had append-only tables has none, and gets none while its slot
	// lives (source/pgoutput says why).
	HasAppendOnly  bool
	AppendOnlyName string
}

// PublicationChanges is what bringing the publications to a set of tables
// changed, per publication.
type PublicationChanges struct {
	Added, Removed                     []TableName
	AppendOnlyAdded, AppendOnlyRemoved []TableName
}

// Changed reports whether anything changed.
func (c PublicationChanges) Changed() bool {
	return len(c.Added)+len(c.Removed)+len(c.AppendOnlyAdded)+len(c.AppendOnlyRemoved) > 0
}

// SlotStatus is what the source says about a pipeline's slot, and where
// its WAL is now. A source fills in what its server tells: the fields
// marked PostgreSQL or GaussDB stay zero on the other.
type SlotStatus struct {
	Exists    bool
	Active    bool
	ActivePID int // PostgreSQL: the walsender holding the slot
	// Plugin is the slot's output plugin (GaussDB).
	Plugin string
	// Confirmed is the slot's confirmed flush position; ConfirmedCSN the
	// same for a CSN-ordered GaussDB slot.
	Confirmed    LSN
	ConfirmedCSN uint64
	Restart      LSN    // PostgreSQL: the oldest WAL the slot keeps
	Current      LSN    // the source's current WAL position
	Retained     int64  // PostgreSQL: WAL bytes the slot holds back (0 for an invalidated slot, which has no restart_lsn)
	WALStatus    string // PostgreSQL: pg_replication_slots.wal_status
	// FlushLag is the source's own measure of the slot's consumer
	// (pg_stat_replication.flush_lag), when HasFlushLag (PostgreSQL).
	FlushLag    time.Duration
	HasFlushLag bool
	// SystemID identifies the source system (GaussDB, read along with
	// Current).
	SystemID string
}

// ExportedSlot is a pipeline's slot created together with an exported
// snapshot: the database exactly as of the slot's consistent point,
// which other sessions adopt to copy the tables. The snapshot lives while
// the session that exported it stays open: Close it after the copy.
type ExportedSlot struct {
	Consistent LSN
	Snapshot   string
	end        func(ctx context.Context)
}

// NewExportedSlot is a slot exported at consistent under snapshot; end
// closes the session that holds the snapshot.
func NewExportedSlot(consistent LSN, snapshot string, end func(ctx context.Context)) *ExportedSlot {
	return &ExportedSlot{Consistent: consistent, Snapshot: snapshot, end: end}
}

// Close ends the exporting session, and with it the snapshot.
func (e *ExportedSlot) Close(ctx context.Context) {
	if e.end != nil {
		e.end(ctx)
	}
}
