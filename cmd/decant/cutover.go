package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
	"github.com/decant/decant/source/pgsession"
)

func cutoverCmd() *cobra.Command {
	var f flags
	var timeout time.Duration
	var verify, asJSON bool
	cmd := &cobra.Command{
		Use:   "cutover",
		Short: "Say whether it is safe to switch to the target: fence, catch-up, sequences, verify",
		Long: `Run while decant run applies the pipeline. Steps, each reported:

  fence      writes a transactional logical decoding message on the source
             and notes the source's WAL position after its commit;
  catch-up   waits until the target's checkpoint has reached that position:
             everything the source committed before the fence is on the
             target;
  sequences  copies each selected table's sequence positions (serial and
             identity columns) to the target: setval on PostgreSQL,
             AUTO_INCREMENT on MySQL, so new rows on the target do not
             collide with copied ones;
  verify     (with --verify) compares source and target as decant verify.

Stop the writers on the source before the fence for a clean switch: what
they commit after it is not covered. Exit 0 only when every step passed;
1 otherwise, with the report.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if c.gaussSource() {
				return usagef("cutover supports PostgreSQL sources only for now")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			r := cutover(ctx, c, verify)
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else {
				r.print(os.Stdout)
			}
			if !r.OK {
				return errors.New("cutover is not safe: " + r.failed())
			}
			return nil
		},
	}
	addFlags(cmd, &f, true)
	addMappingFlags(cmd, &f)
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up (exit 1) if the steps do not finish within this time")
	cmd.Flags().BoolVar(&verify, "verify", false, "also compare source and target table by table")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// cutoverReport is what cutover found, step by step.
type cutoverReport struct {
	Pipeline string        `json:"pipeline"`
	Steps    []cutoverStep `json:"steps"`
	OK       bool          `json:"ok"`
}

type cutoverStep struct {
	Name    string   `json:"name"`
	OK      bool     `json:"ok"`
	Detail  string   `json:"detail"`
	Seconds float64  `json:"seconds"`
	Items   []string `json:"items,omitempty"`
}

func (r *cutoverReport) step(name string, run func() (string, []string, error)) bool {
	start := time.Now()
	detail, items, err := run()
	s := cutoverStep{Name: name, OK: err == nil, Detail: detail, Items: items, Seconds: time.Since(start).Seconds()}
	if err != nil {
		s.Detail = err.Error()
	}
	r.Steps = append(r.Steps, s)
	return s.OK
}

func (r *cutoverReport) failed() string {
	for _, s := range r.Steps {
		if !s.OK {
			return s.Name + ": " + s.Detail
		}
	}
	return "no step ran"
}

func (r *cutoverReport) print(w io.Writer) {
	fmt.Fprintf(w, "cutover of pipeline %s\n", r.Pipeline)
	for _, s := range r.Steps {
		mark := "ok  "
		if !s.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %-10s %6.1fs  %s\n", mark, s.Name, s.Seconds, s.Detail)
		for _, it := range s.Items {
			fmt.Fprintf(w, "                         %s\n", it)
		}
	}
	if r.OK {
		fmt.Fprintln(w, "safe to switch: the target holds everything committed on the source before the fence")
	} else {
		fmt.Fprintln(w, "NOT safe to switch")
	}
}

// cutover runs the steps, stopping at the first that fails.
func cutover(ctx context.Context, c config, verify bool) *cutoverReport {
	r := &cutoverReport{Pipeline: c.Pipeline}
	src, err := pgsession.Connect(ctx, c.Source)
	if err != nil {
		r.step("connect", func() (string, []string, error) { return "", nil, err })
		return r
	}
	defer src.Close(context.WithoutCancel(ctx))
	tgt, err := openAdmin(ctx, c)
	if err != nil {
		r.step("connect", func() (string, []string, error) { return "", nil, err })
		return r
	}
	defer tgt.Close(context.WithoutCancel(ctx))

	var fence source.LSN
	ok := r.step("fence", func() (string, []string, error) {
		var err error
		fence, err = writeFence(ctx, src, c.Pipeline)
		return fmt.Sprintf("written; source WAL at %s after it", fence), nil, err
	}) && r.step("catch-up", func() (string, []string, error) {
		cp, err := waitCheckpoint(ctx, tgt, c.Pipeline, fence)
		return fmt.Sprintf("target checkpoint at %s (last commit %s)", cp.End, cp.Commit), nil, err
	}) && r.step("sequences", func() (string, []string, error) {
		items, err := syncSequences(ctx, c, src)
		return fmt.Sprintf("%d synchronised", len(items)), items, err
	})
	if ok && verify {
		ok = r.step("verify", func() (string, []string, error) { return runVerify(ctx, c) })
	}
	r.OK = ok
	return r
}

// writeFence commits a transactional logical decoding message on the
// source and returns the WAL position after its commit.
func writeFence(ctx context.Context, src *pgx.Conn, pipeline string) (source.LSN, error) {
	var lsn source.LSN
	err := pgx.BeginFunc(ctx, src, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT pg_logical_emit_message(true, 'decant.fence', $1)`, pipeline+" "+time.Now().UTC().Format(time.RFC3339Nano))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("write the fence on the source: %w", err)
	}
	if err := src.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return 0, fmt.Errorf("read the source's WAL position: %w", err)
	}
	return lsn, nil
}

// waitCheckpoint waits until the pipeline's checkpoint reaches pos.
func waitCheckpoint(ctx context.Context, tgt targetAdmin, pipeline string, pos source.LSN) (checkpoint.Row, error) {
	for {
		cp, err := tgt.ReadCheckpoint(ctx, pipeline)
		if err != nil {
			return cp, err
		}
		if cp.End >= pos {
			return cp, nil
		}
		select {
		case <-ctx.Done():
			return cp, fmt.Errorf("the target's checkpoint is at %s, short of the fence at %s, when time ran out: is decant run applying pipeline %s? (--timeout)", cp.End, pos, pipeline)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// sequence is a source column fed by a sequence.
type sequence struct {
	table  source.TableName
	column string
	next   int64 // the value the sequence gives next
}

// syncSequences sets each target sequence (or AUTO_INCREMENT) so that it
// gives next what the source's would.
func syncSequences(ctx context.Context, c config, src *pgx.Conn) ([]string, error) {
	tables, err := pgoutput.SelectTables(ctx, src, c.filter)
	if err != nil {
		return nil, err
	}
	var seqs []sequence
	for _, t := range tables {
		rows, err := src.Query(ctx, `SELECT a.attname::text, s.seq::text FROM pg_attribute a
			CROSS JOIN LATERAL (SELECT pg_get_serial_sequence($1, a.attname) AS seq) s
			WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped AND s.seq IS NOT NULL
			ORDER BY a.attnum`, mapping.QuotePGTable(t.Name))
		if err != nil {
			return nil, fmt.Errorf("read the sequences of %s: %w", t.Name, err)
		}
		type colSeq struct{ col, seq string }
		found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (colSeq, error) {
			var cs colSeq
			err := row.Scan(&cs.col, &cs.seq)
			return cs, err
		})
		if err != nil {
			return nil, fmt.Errorf("read the sequences of %s: %w", t.Name, err)
		}
		for _, cs := range found {
			var next int64
			if err := src.QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value + (SELECT seqincrement FROM pg_sequence WHERE seqrelid = $1::regclass) ELSE last_value END FROM `+cs.seq, cs.seq).Scan(&next); err != nil {
				return nil, fmt.Errorf("read sequence %s: %w", cs.seq, err)
			}
			seqs = append(seqs, sequence{table: t.Name, column: cs.col, next: next})
		}
	}
	if c.mysqlTarget() {
		return syncAutoIncrement(ctx, c, seqs)
	}
	return syncPGSequences(ctx, c, seqs)
}

func syncPGSequences(ctx context.Context, c config, seqs []sequence) ([]string, error) {
	conn, err := pg.Connect(ctx, c.Target)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	router := c.router()
	var done []string
	for _, s := range seqs {
		target, col := router.Route(s.table), targetColumn(c, s.table, s.column)
		var seq *string
		if err := conn.QueryRow(ctx, `SELECT pg_get_serial_sequence($1, $2)`, mapping.QuotePGTable(target), col).Scan(&seq); err != nil {
			return done, fmt.Errorf("find the sequence of %s.%s on the target: %w", target, col, err)
		}
		if seq == nil {
			return done, fmt.Errorf("target column %s.%s has no sequence (serial or identity) but the source's has: give it one, or new rows on the target will need explicit values", target, col)
		}
		if _, err := conn.Exec(ctx, `SELECT setval($1, $2, false)`, *seq, s.next); err != nil {
			return done, fmt.Errorf("set sequence %s on the target: %w", *seq, err)
		}
		done = append(done, fmt.Sprintf("%s.%s: next value %d", target, col, s.next))
	}
	return done, nil
}

func syncAutoIncrement(ctx context.Context, c config, seqs []sequence) ([]string, error) {
	s, err := mysql.Connect(ctx, c.Target)
	if err != nil {
		return nil, err
	}
	defer s.DB.Close()
	defer s.Conn.Close()
	router := c.router()
	var done []string
	for _, sq := range seqs {
		target, col := router.Route(sq.table), targetColumn(c, sq.table, sq.column)
		var extra string
		err := s.Conn.QueryRowContext(ctx, `SELECT EXTRA FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND COLUMN_NAME = ?`, target.Schema, target.Name, col).Scan(&extra)
		if err != nil {
			return done, fmt.Errorf("read target column %s.%s: %w", target, col, err)
		}
		if extra != "auto_increment" {
			done = append(done, fmt.Sprintf("%s.%s: not AUTO_INCREMENT on the target (the source's next value is %d); new rows there need explicit values", mapping.QuoteMySQLTable(target), col, sq.next))
			continue
		}
		// MySQL never sets AUTO_INCREMENT below the largest value present.
		if _, err := s.Conn.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s AUTO_INCREMENT = %d", mapping.QuoteMySQLTable(target), sq.next)); err != nil {
			return done, fmt.Errorf("set AUTO_INCREMENT of %s: %w", target, err)
		}
		done = append(done, fmt.Sprintf("%s.%s: AUTO_INCREMENT %d", target, col, sq.next))
	}
	return done, nil
}

// targetColumn is a source column's name on the target, after --config
// column renames.
func targetColumn(c config, table source.TableName, column string) string {
	if to, ok := c.columns[table].Rename[column]; ok {
		return to
	}
	return column
}
