package migrate

import (
	"context"
	"fmt"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// SkipRequest is a pending skip as decant skip recorded it.
type SkipRequest struct {
	Commit source.LSN
	Xid    uint64 // 0 when neither given nor recorded by run
	// Error is what run stopped on at Commit, when it recorded that;
	// StoppedElsewhere is the commit run last stopped on when that is
	// another one not yet applied (0: none).
	Error            string
	StoppedElsewhere source.LSN
	Resume           source.LSN // the checkpoint's resume position
}

// RequestSkip asks the next run to skip the transaction that commits at
// commit (decant skip); xid, when not 0, must match it. Run checks that
// it is the next transaction to apply; here the request is refused when
// the target already has it, when another skip is pending, or when run
// recorded that it stopped at commit with another xid.
func RequestSkip(ctx context.Context, cfg Config, commit source.LSN, xid uint64) (SkipRequest, error) {
	req := SkipRequest{Commit: commit, Xid: xid}
	if err := cfg.Validate(); err != nil {
		return req, err
	}
	tgt, err := OpenTarget(ctx, cfg)
	if err != nil {
		return req, err
	}
	defer tgt.Close(ctx)
	cp, err := tgt.ReadCheckpoint(ctx, cfg.Pipeline)
	if err != nil {
		return req, err
	}
	rows, err := tgt.ReadSkips(ctx, 0)
	if err != nil {
		return req, err
	}
	if req, err = judgeSkipRequest(cfg.Pipeline, cp, rows, commit, xid); err != nil {
		return req, &UsageError{Err: err}
	}
	return req, tgt.RequestSkip(ctx, checkpoint.Skip{Pipeline: cfg.Pipeline, Commit: commit, Xid: req.Xid})
}

// judgeSkipRequest checks a request against the checkpoint cp and the
// pipeline's rows of decant.skipped not yet skipped.
func judgeSkipRequest(pipeline string, cp checkpoint.Row, rows []checkpoint.Skip, commit source.LSN, xid uint64) (SkipRequest, error) {
	req := SkipRequest{Commit: commit, Xid: xid, Resume: cp.End}
	if commit < cp.End {
		return req, fmt.Errorf("skip commit %s: the target already has it (pipeline %s resumes at %s); give the commit position from the error that stopped run", commit, pipeline, cp.End)
	}
	for _, r := range rows {
		switch {
		case r.Skipped():
		case r.Pending() && r.Commit != commit:
			return req, fmt.Errorf("skip commit %s: the skip of commit %s is already pending for pipeline %s; cancel it first with decant skip --cancel", commit, r.Commit, pipeline)
		case r.StoppedAt.IsZero():
		case r.Commit != commit:
			if r.Commit >= cp.End {
				req.StoppedElsewhere = r.Commit
			}
		case xid != 0 && r.Xid != 0 && r.Xid != xid:
			return req, fmt.Errorf("skip commit %s: run stopped on that commit as xid %d, not %d; check the error it printed", commit, r.Xid, xid)
		default:
			req.Error = r.Error
			if req.Xid == 0 {
				req.Xid = r.Xid
			}
		}
	}
	return req, nil
}

// CancelSkip withdraws the pipeline's pending skip (decant skip
// --cancel); it reports whether there was one.
func CancelSkip(ctx context.Context, cfg Config) (bool, error) {
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	tgt, err := OpenTarget(ctx, cfg)
	if err != nil {
		return false, err
	}
	defer tgt.Close(ctx)
	return tgt.CancelSkip(ctx)
}

// SkipStatus is the pipeline's decant.skipped, as status shows it.
type SkipStatus struct {
	Pending *SkipInfo `json:"pending,omitempty"`
	// Stopped is where run last stopped on a transaction the target
	// refused, while it is not yet applied nor skipped.
	Stopped *SkipInfo  `json:"stopped,omitempty"`
	Skipped []SkipInfo `json:"skipped,omitempty"` // the last ones, newest first
}

// SkipInfo is one row of decant.skipped.
type SkipInfo struct {
	CommitLSN   string     `json:"commit_lsn"`
	Xid         uint64     `json:"xid,omitempty"`
	CommitTime  *time.Time `json:"commit_time,omitempty"`
	Tables      []string   `json:"tables,omitempty"`
	Changes     int64      `json:"changes,omitempty"`
	Error       string     `json:"error,omitempty"`
	RequestedAt *time.Time `json:"requested_at,omitempty"`
	SkippedAt   *time.Time `json:"skipped_at,omitempty"`
}

// statusSkipped is how many skipped transactions status shows.
const statusSkipped = 5

// readSkipStatus reads decant.skipped for status; cp is the checkpoint.
func readSkipStatus(ctx context.Context, tgt Admin, cp checkpoint.Row) (*SkipStatus, error) {
	rows, err := tgt.ReadSkips(ctx, statusSkipped)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return skipStatus(rows, cp), nil
}

func skipStatus(rows []checkpoint.Skip, cp checkpoint.Row) *SkipStatus {
	st := &SkipStatus{}
	for _, r := range rows {
		info := skipInfo(r)
		switch {
		case r.Skipped():
			st.Skipped = append(st.Skipped, info)
		case r.Pending():
			st.Pending = &info
		case !r.StoppedAt.IsZero() && r.Commit >= cp.End:
			st.Stopped = &info
		}
	}
	return st
}

func skipInfo(r checkpoint.Skip) SkipInfo {
	return SkipInfo{CommitLSN: r.Commit.String(), Xid: r.Xid, CommitTime: timeOrNil(r.CommitTime), Tables: r.Tables,
		Changes: r.Changes, Error: r.Error, RequestedAt: timeOrNil(r.RequestedAt), SkippedAt: timeOrNil(r.SkippedAt)}
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
