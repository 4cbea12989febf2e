package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/verify"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source/pgoutput"
	"github.com/decant/decant/source/pgsession"
)

// verifyOptions are verify's own flags.
type verifyOptions struct {
	jobs        int
	spanRows    int64
	maxKeys     int
	recheckWait time.Duration
}

func defaultVerifyOptions() verifyOptions {
	return verifyOptions{jobs: runtime.NumCPU(), spanRows: 100_000, maxKeys: 20, recheckWait: 30 * time.Second}
}

func verifyCmd() *cobra.Command {
	var f flags
	o := defaultVerifyOptions()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Compare source and target table by table and name the keys that differ",
		Long: `Compares every selected source table with its target table: row counts, and
a hash of every row over spans of the primary key (about --span-rows source
rows each; one span when a key column is text-like, which the two servers
would otherwise sort differently). Values are compared as decant writes
them: columns renamed and left out as configured, each source value
converted as the target writer converts it, then both sides brought to one
normal form, so a PostgreSQL -> MySQL pair compares equal when the data is.

On a PostgreSQL target both servers first count each span and checksum its
rows' text; spans that agree are not read further. The others (every span
on a MySQL target, where only decant can convert values as the writer does)
are streamed from both sides in key order and merged in decant, so the
report names the keys missing on the target, extra on the target, and
different; memory holds one row per side and the listed keys. A table
without a key is compared by row count and a hash of all its rows (a
multiset): the report says whether it differs, not where.

It can run while decant run applies changes: spans that differ are compared
again once the target's checkpoint has reached the source's WAL position
(waiting at most --recheck-wait; at once when the pipeline's slot is not in
use), and only what still differs is reported. Row values other than keys
are never printed.

Exit 0 when every table is equal, 1 with the report when not.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if c.gaussSource() {
				return usagef("verify supports PostgreSQL sources only for now")
			}
			if o.jobs < 1 || o.spanRows < 1 || o.maxKeys < 1 {
				return usagef("--jobs, --span-rows and --max-keys must be at least 1")
			}
			rep, err := verifyPipeline(cmd.Context(), c, o, logger(c))
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				out := struct {
					Pipeline string `json:"pipeline"`
					*verify.Report
				}{c.Pipeline, rep}
				if err := enc.Encode(out); err != nil {
					return err
				}
			} else {
				printVerify(os.Stdout, c.Pipeline, rep)
			}
			return verifyError(rep)
		},
	}
	addFlags(cmd, &f, true)
	addMappingFlags(cmd, &f)
	fs := cmd.Flags()
	fs.IntVar(&o.jobs, "jobs", o.jobs, "spans compared at once (each holds one session on either side)")
	fs.Int64Var(&o.spanRows, "span-rows", o.spanRows, "source rows per span of a table's key")
	fs.IntVar(&o.maxKeys, "max-keys", o.maxKeys, "keys listed per table for each of missing, extra and different")
	fs.DurationVar(&o.recheckWait, "recheck-wait", o.recheckWait, "how long to wait for the target to catch up before comparing differing spans again (0: compare them again at once)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// runVerify is verify as a cutover step: a one-line summary, the report's
// lines for the tables that differ, and an error when any does.
func runVerify(ctx context.Context, c config) (string, []string, error) {
	rep, err := verifyPipeline(ctx, c, defaultVerifyOptions(), logger(c))
	if err != nil {
		return "", nil, err
	}
	var details []string
	for _, t := range rep.Differing() {
		details = append(details, tableLines(t)...)
	}
	return verifySummary(rep), details, verifyError(rep)
}

// verifyPipeline compares the selected tables.
func verifyPipeline(ctx context.Context, c config, o verifyOptions, log *slog.Logger) (*verify.Report, error) {
	src, err := pgsession.Connect(ctx, c.Source)
	if err != nil {
		return nil, err
	}
	defer src.Close(context.WithoutCancel(ctx))
	tables, err := pgoutput.SelectTables(ctx, src, c.filter)
	if err != nil {
		return nil, err
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("no source table matches --tables %q; nothing to verify", c.filter)
	}
	defs, err := describeTables(ctx, src, tables)
	if err != nil {
		return nil, err
	}
	return verify.Run(ctx, verify.Config{
		Source: c.Source, Target: c.Target, MySQL: c.mysqlTarget(),
		Tables: defs, Router: c.router(), Columns: c.columns, Policy: c.policy,
		Jobs: o.jobs, SpanRows: o.spanRows, MaxKeys: o.maxKeys, Logger: log,
		Settle: func(ctx context.Context) error { return settle(ctx, c, src, o.recheckWait, log) },
	})
}

// settle waits until the target's checkpoint reaches the source's current
// WAL position (after a fence it writes), so that what still differs
// afterwards is not a change in flight. Without a running pipeline (its
// slot unused) there is nothing to wait for; past wait it gives up
// waiting, not verifying.
func settle(ctx context.Context, c config, src *pgx.Conn, wait time.Duration, log *slog.Logger) error {
	if wait <= 0 {
		return nil
	}
	slot, err := pgoutput.ReadSlot(ctx, src, c.Pipeline)
	if err != nil {
		return err
	}
	if !slot.Exists || !slot.Active {
		log.Info("the pipeline's slot is not in use; comparing the differing spans again now", "pipeline", c.Pipeline)
		return nil
	}
	// The fence (as cutover writes it) passes through the pipeline even
	// when nothing else does, so the checkpoint reaches it; WAL of other
	// databases alone would never move the checkpoint.
	pos, err := writeFence(ctx, src, c.Pipeline)
	if err != nil {
		log.Warn("could not write a fence on the source; waiting for its current WAL position instead", "error", err.Error())
		pos = slot.Current
	}
	tgt, err := openAdmin(ctx, c)
	if err != nil {
		return err
	}
	defer tgt.Close(context.WithoutCancel(ctx))
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cp, err := waitCheckpoint(wctx, tgt, c.Pipeline, pos)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil
	case err != nil:
		log.Warn("the target did not catch up within --recheck-wait; comparing the differing spans again anyway",
			"checkpoint", cp.End.String(), "source_wal", pos.String())
	default:
		log.Info("the target has caught up; comparing the differing spans again", "checkpoint", cp.End.String())
	}
	return nil
}

// verifyError is the command's error when tables differ.
func verifyError(rep *verify.Report) error {
	diff := rep.Differing()
	if len(diff) == 0 {
		return nil
	}
	names := make([]string, len(diff))
	for i, t := range diff {
		names[i] = t.Source
	}
	return fmt.Errorf("%d of %d tables differ: %s", len(diff), len(rep.Tables), strings.Join(names, ", "))
}

func verifySummary(rep *verify.Report) string {
	var rows int64
	for _, t := range rep.Tables {
		rows += t.SourceRows
	}
	s := fmt.Sprintf("%d tables, %d source rows: %d equal, %d differ", len(rep.Tables), rows,
		len(rep.Tables)-len(rep.Differing()), len(rep.Differing()))
	if rep.Rechecked {
		s += " (differing spans compared a second time)"
	}
	return s
}

func printVerify(w io.Writer, pipeline string, rep *verify.Report) {
	fmt.Fprintf(w, "verify of pipeline %s: %s\n", pipeline, verifySummary(rep))
	for _, t := range rep.Tables {
		if t.Equal {
			fmt.Fprintf(w, "  ok    %s -> %s: %d rows\n", t.Source, t.Target, t.SourceRows)
			continue
		}
		lines := tableLines(t)
		fmt.Fprintf(w, "  DIFF  %s\n", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "          %s\n", l)
		}
	}
}

// tableLines describes a differing table: a headline, then its keys.
func tableLines(t verify.TableReport) []string {
	head := t.Source + " -> " + t.Target + ": "
	switch {
	case t.Error != "":
		return []string{head + t.Error}
	case len(t.Key) == 0:
		return []string{head + fmt.Sprintf("%d rows on the source, %d on the target; the rows differ (no key: compared as a whole)", t.SourceRows, t.TargetRows)}
	}
	lines := []string{head + fmt.Sprintf("%d rows on the source, %d on the target; %d missing on the target, %d extra, %d different (%d of %d spans differ)",
		t.SourceRows, t.TargetRows, t.Missing, t.Extra, t.Different, t.DifferingSpans, t.Spans)}
	for _, l := range []struct {
		what  string
		keys  []verify.Key
		count int64
	}{{"missing on the target", t.MissingKeys, t.Missing}, {"extra on the target", t.ExtraKeys, t.Extra}, {"different", t.DifferentKeys, t.Different}} {
		for _, k := range l.keys {
			lines = append(lines, l.what+": "+keyText(t.Key, k))
		}
		if more := l.count - int64(len(l.keys)); more > 0 {
			lines = append(lines, fmt.Sprintf("%s: %d more", l.what, more))
		}
	}
	return lines
}

// keyText prints a key as col=value pairs, quoting values that would be
// ambiguous.
func keyText(cols []string, k verify.Key) string {
	parts := make([]string, len(k))
	for i, v := range k {
		if v == "" || strings.ContainsAny(v, " ,()=\"\n\t") {
			v = strconv.Quote(v)
		}
		name := "?"
		if i < len(cols) {
			name = cols[i]
		}
		parts[i] = name + "=" + v
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
