package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/source"
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
			read := migrate.ReadStatus
			if c.gaussSource() {
				read = migrate.ReadStatusGauss
			}
			st, err := read(cmd.Context(), c.workflow(nil))
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printStatus(os.Stdout, st)
			return nil
		},
	}
	addFlags(cmd, &f, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printStatus(w io.Writer, st migrate.Status) {
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
	printPublications(w, st.Pipeline, st.Publications)
	if !st.Checkpoint.Exists {
		fmt.Fprintf(w, "checkpoint     missing (run decant init)\n")
		return
	}
	commit := "none yet"
	switch cp := st.Checkpoint; {
	case cp.CommitTime != nil:
		commit = fmt.Sprintf("%s (xid %d, committed %s)", cp.CommitLSN, cp.Xid, cp.CommitTime.UTC().Format(time.RFC3339))
	case cp.Xid != 0: // a source that sends no commit time (GaussDB without include-timestamp)
		commit = fmt.Sprintf("%s (xid %d)", cp.CommitLSN, cp.Xid)
	}
	fmt.Fprintf(w, "checkpoint     resume at %s, last applied commit %s, written %s\n",
		st.Checkpoint.EndLSN, commit, st.Checkpoint.AppliedTime.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "lag            %s, %.1f s\n", source.SizeText(st.LagBytes), st.LagSeconds)
	printSkips(w, st.Skips)
	printAddedTables(w, st.AddedTables)
}

// printAddedTables prints the tables add-tables brought in.
func printAddedTables(w io.Writer, ts []migrate.TableSyncStatus) {
	for _, t := range ts {
		if t.State == "ready" {
			fmt.Fprintf(w, "added table    %s ready, copied as of %s\n", t.Table, t.AsOf)
			continue
		}
		fmt.Fprintf(w, "added table    %s %s (decant run waits at its changes; run decant add-tables again if none is running)\n", t.Table, t.State)
	}
}

// printSkips prints where run stopped, a pending skip and the last
// skipped transactions.
func printSkips(w io.Writer, s *migrate.SkipStatus) {
	if s == nil {
		return
	}
	if s.Stopped != nil && s.Pending == nil {
		fmt.Fprintf(w, "stopped        at commit %s (xid %d): %s\n", s.Stopped.CommitLSN, s.Stopped.Xid, s.Stopped.Error)
	}
	if s.Pending != nil {
		fmt.Fprintf(w, "skip pending   commit %s%s, requested %s (decant skip --cancel withdraws it)\n", s.Pending.CommitLSN, xidText(s.Pending.Xid), stamp(s.Pending.RequestedAt))
	}
	for _, k := range s.Skipped {
		fmt.Fprintf(w, "skipped        commit %s%s, committed %s: %d change(s) to %s, skipped %s\n",
			k.CommitLSN, xidText(k.Xid), stamp(k.CommitTime), k.Changes, strings.Join(k.Tables, ", "), stamp(k.SkippedAt))
	}
}

func xidText(xid uint64) string {
	if xid == 0 {
		return ""
	}
	return fmt.Sprintf(" (xid %d)", xid)
}

func stamp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// printPublications prints a PostgreSQL pipeline's publications (a
// GaussDB source has none).
func printPublications(w io.Writer, pipeline string, p *migrate.PublicationStatus) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "publication    %s: %d table(s)\n", pipeline, p.Tables)
	if p.AppendOnlyPublication == "" {
		return
	}
	tables := ""
	if len(p.AppendOnlyTables) > 0 {
		tables = " (" + strings.Join(p.AppendOnlyTables, ", ") + ")"
	}
	fmt.Fprintf(w, "append-only    %s: %d table(s), inserts and truncates only%s\n", p.AppendOnlyPublication, len(p.AppendOnlyTables), tables)
}
