package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

func statusCmd() *cobra.Command {
	var f flags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the slot, the checkpoint and the lag",
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			read := readStatus
			if c.gaussSource() {
				read = statusGauss
			}
			st, err := read(cmd.Context(), c)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			st.print(os.Stdout)
			return nil
		},
	}
	addFlags(cmd, &f, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

type status struct {
	Pipeline   string           `json:"pipeline"`
	SourceLSN  string           `json:"source_wal_lsn"`
	Slot       slotStatus       `json:"slot"`
	Checkpoint checkpointStatus `json:"checkpoint"`
	LagBytes   int64            `json:"lag_bytes"`
	LagSeconds float64          `json:"lag_seconds"`
}

type slotStatus struct {
	Exists       bool   `json:"exists"`
	Active       bool   `json:"active"`
	ActivePID    int    `json:"active_pid,omitempty"`
	Confirmed    string `json:"confirmed_flush_lsn,omitempty"`
	ConfirmedCSN uint64 `json:"confirmed_csn,omitempty"`
	Restart      string `json:"restart_lsn,omitempty"`
	Retained     int64  `json:"wal_retained_bytes"`
	WALStatus    string `json:"wal_status,omitempty"`
}

type checkpointStatus struct {
	Exists      bool       `json:"exists"`
	CommitLSN   string     `json:"commit_lsn,omitempty"`
	EndLSN      string     `json:"end_lsn,omitempty"`
	CommitCSN   uint64     `json:"commit_csn,omitempty"`
	Xid         uint32     `json:"xid,omitempty"`
	CommitTime  *time.Time `json:"commit_time,omitempty"`
	AppliedTime *time.Time `json:"applied_time,omitempty"`
}

// readStatus reads both sides. Lag in bytes is the source's WAL position
// minus the checkpoint's resume position. Lag in seconds is the source's
// own measure (pg_stat_replication.flush_lag) while decant runs; when it
// does not run and WAL is pending, the time since the checkpoint was last
// written.
func readStatus(ctx context.Context, c config) (status, error) {
	st := status{Pipeline: c.Pipeline}
	src, tgt, err := connectBoth(ctx, c)
	if err != nil {
		return st, err
	}
	defer src.Close(ctx)
	defer tgt.Close(ctx)

	s, err := pgoutput.ReadSlot(ctx, src, c.Pipeline)
	if err != nil {
		return st, err
	}
	st.SourceLSN = s.Current.String()
	st.Slot = slotStatus{Exists: s.Exists, Active: s.Active, ActivePID: s.ActivePID, Retained: s.Retained, WALStatus: s.WALStatus}
	if s.Exists {
		st.Slot.Confirmed, st.Slot.Restart = s.Confirmed.String(), s.Restart.String()
	}
	cp, err := tgt.ReadCheckpoint(ctx, c.Pipeline)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.fillCheckpoint(cp, s.Current)
	switch {
	case s.HasFlushLag:
		st.LagSeconds = s.FlushLag.Seconds()
	case !s.Active && st.LagBytes > 0:
		st.LagSeconds = time.Since(cp.AppliedTime).Seconds()
	}
	return st, nil
}

// fillCheckpoint sets the checkpoint fields and the lag in bytes behind
// the source's current WAL position.
func (st *status) fillCheckpoint(cp checkpoint.Row, current source.LSN) {
	st.Checkpoint = checkpointStatus{Exists: true, CommitLSN: cp.Commit.String(), EndLSN: cp.End.String(), CommitCSN: cp.CSN, Xid: cp.Xid, AppliedTime: &cp.AppliedTime}
	if !cp.CommitTime.IsZero() {
		st.Checkpoint.CommitTime = &cp.CommitTime
	}
	if current > cp.End {
		st.LagBytes = int64(current - cp.End)
	}
}

func (st status) print(w io.Writer) {
	fmt.Fprintf(w, "pipeline       %s\n", st.Pipeline)
	fmt.Fprintf(w, "source WAL     %s\n", st.SourceLSN)
	switch {
	case !st.Slot.Exists:
		fmt.Fprintf(w, "slot           missing (run decant init)\n")
	default:
		state := "inactive"
		if st.Slot.Active {
			state = fmt.Sprintf("active (pid %d)", st.Slot.ActivePID)
		}
		fmt.Fprintf(w, "slot           %s, confirmed_flush %s, restart %s, %s WAL retained\n",
			state, st.Slot.Confirmed, st.Slot.Restart, source.SizeText(st.Slot.Retained))
	}
	if !st.Checkpoint.Exists {
		fmt.Fprintf(w, "checkpoint     missing (run decant init)\n")
		return
	}
	commit := "none yet"
	if st.Checkpoint.CommitTime != nil {
		commit = fmt.Sprintf("%s (xid %d, committed %s)", st.Checkpoint.CommitLSN, st.Checkpoint.Xid, st.Checkpoint.CommitTime.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(w, "checkpoint     resume at %s, last applied commit %s, written %s\n",
		st.Checkpoint.EndLSN, commit, st.Checkpoint.AppliedTime.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "lag            %s, %.1f s\n", source.SizeText(st.LagBytes), st.LagSeconds)
}
