package migrate

import (
	"context"
	"errors"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Status is a pipeline's state on both sides.
type Status struct {
	Pipeline  string     `json:"pipeline"`
	SourceLSN string     `json:"source_wal_lsn"`
	Slot      SlotStatus `json:"slot"`
	// Publications is nil for a GaussDB source, which has none.
	Publications *PublicationStatus `json:"publications,omitempty"`
	Checkpoint   CheckpointStatus   `json:"checkpoint"`
	LagBytes     int64              `json:"lag_bytes"`
	// Skips is the pipeline's decant.skipped: a pending skip, where run
	// stopped, the last skipped transactions; nil when it holds none.
	Skips *SkipStatus `json:"skips,omitempty"`
	// AddedTables are the tables decant add-tables brought in, with
	// their state (decant.table_sync); none when it brought in none.
	AddedTables []TableSyncStatus `json:"added_tables,omitempty"`
	LagSeconds  float64           `json:"lag_seconds"`
}

// TableSyncStatus is one table add-tables brought in: copying (the
// stream waits at its changes) or ready, with the position its copy was
// taken at.
type TableSyncStatus struct {
	Table string `json:"table"`
	State string `json:"state"`
	AsOf  string `json:"as_of,omitempty"`
}

// SlotStatus is the pipeline's slot on the source.
type SlotStatus struct {
	Exists       bool   `json:"exists"`
	Active       bool   `json:"active"`
	ActivePID    int    `json:"active_pid,omitempty"`
	Confirmed    string `json:"confirmed_flush_lsn,omitempty"`
	ConfirmedCSN uint64 `json:"confirmed_csn,omitempty"`
	Restart      string `json:"restart_lsn,omitempty"`
	Retained     int64  `json:"wal_retained_bytes"`
	WALStatus    string `json:"wal_status,omitempty"`
}

// PublicationStatus is the pipeline's publications on a PostgreSQL
// source: how many tables the one named after the pipeline holds, and
// the append-only one (inserts and truncates only) with its tables, when
// it exists.
type PublicationStatus struct {
	Tables                int      `json:"tables"`
	AppendOnlyPublication string   `json:"append_only_publication,omitempty"`
	AppendOnlyTables      []string `json:"append_only_tables,omitempty"`
}

// CheckpointStatus is the pipeline's checkpoint row on the target.
type CheckpointStatus struct {
	Exists      bool       `json:"exists"`
	CommitLSN   string     `json:"commit_lsn,omitempty"`
	EndLSN      string     `json:"end_lsn,omitempty"`
	CommitCSN   uint64     `json:"commit_csn,omitempty"`
	Xid         uint64     `json:"xid,omitempty"`
	CommitTime  *time.Time `json:"commit_time,omitempty"`
	AppliedTime *time.Time `json:"applied_time,omitempty"`
}

// ReadStatus reads a PostgreSQL pipeline's state on both sides. Lag in
// bytes is the source's WAL position minus the checkpoint's resume
// position. Lag in seconds is the source's own measure
// (pg_stat_replication.flush_lag) while decant runs; when it does not run
// and WAL is pending, the time since the checkpoint was last written.
func ReadStatus(ctx context.Context, cfg Config) (Status, error) {
	st := Status{Pipeline: cfg.Pipeline}
	e, err := newEnv(cfg)
	if err != nil {
		return st, err
	}
	src, tgt, err := e.connectBoth(ctx)
	if err != nil {
		return st, err
	}
	defer src.Close(ctx)
	defer tgt.Close(ctx)
	return e.status(ctx, src, tgt)
}

func (e *env) status(ctx context.Context, src PGSource, tgt target) (Status, error) {
	st := Status{Pipeline: e.cfg.Pipeline}
	s, err := src.ReadSlot(ctx)
	if err != nil {
		return st, err
	}
	pubs, err := src.ReadPublications(ctx)
	if err != nil {
		return st, err
	}
	st.Publications = publicationStatus(pubs)
	st.SourceLSN = s.Current.String()
	st.Slot = SlotStatus{Exists: s.Exists, Active: s.Active, ActivePID: s.ActivePID, Retained: s.Retained, WALStatus: s.WALStatus}
	if s.Exists {
		st.Slot.Confirmed, st.Slot.Restart = s.Confirmed.String(), s.Restart.String()
	}
	cp, err := tgt.ReadCheckpoint(ctx, e.cfg.Pipeline)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.fillCheckpoint(cp, s.Current)
	if st.Skips, err = readSkipStatus(ctx, tgt, cp); err != nil {
		return st, err
	}
	if st.AddedTables, err = readSyncStatus(ctx, tgt); err != nil {
		return st, err
	}
	switch {
	case s.HasFlushLag:
		st.LagSeconds = s.FlushLag.Seconds()
	case !s.Active && st.LagBytes > 0:
		st.LagSeconds = sinceSeconds(cp.AppliedTime)
	}
	return st, nil
}

func publicationStatus(p source.Publications) *PublicationStatus {
	ps := &PublicationStatus{Tables: len(p.Tables)}
	if p.HasAppendOnly {
		ps.AppendOnlyPublication = p.AppendOnlyName
		for _, t := range p.AppendOnly {
			ps.AppendOnlyTables = append(ps.AppendOnlyTables, t.String())
		}
	}
	return ps
}

// fillCheckpoint sets the checkpoint fields and the lag in bytes behind
// the source's current WAL position.
func (st *Status) fillCheckpoint(cp checkpoint.Row, current source.LSN) {
	st.Checkpoint = CheckpointStatus{Exists: true, CommitLSN: cp.Commit.String(), EndLSN: cp.End.String(), CommitCSN: cp.CSN, Xid: cp.Xid, AppliedTime: &cp.AppliedTime}
	if !cp.CommitTime.IsZero() {
		st.Checkpoint.CommitTime = &cp.CommitTime
	}
	if current > cp.End {
		st.LagBytes = int64(current - cp.End)
	}
}

func sinceSeconds(t time.Time) float64 { return time.Since(t).Seconds() }

func readSyncStatus(ctx context.Context, tgt target) ([]TableSyncStatus, error) {
	syncs, err := tgt.ReadSyncs(ctx)
	if err != nil {
		return nil, err
	}
	var out []TableSyncStatus
	for _, s := range syncs {
		ts := TableSyncStatus{Table: s.Table.String(), State: string(s.State)}
		if s.State == checkpoint.SyncReady {
			ts.AsOf = s.AsOf.String()
		}
		out = append(out, ts)
	}
	return out, nil
}
