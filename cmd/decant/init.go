package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

func initCmd() *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Check the source, create the publication, the slot and the target checkpoint",
		Long: `Checks the source (wal_level = logical, the REPLICATION privilege, a free
slot), checks that every selected table exists on the target, creates the
publication for the selected tables and a pgoutput slot, and creates the
checkpoint table on the target with the pipeline's row at the slot's
consistent point. Running it again changes nothing (a changed --tables list
updates the publication).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			return initPipeline(cmd.Context(), c, logger(c))
		},
	}
	addFlags(cmd, &f, true)
	return cmd
}

func initPipeline(ctx context.Context, c config, log *slog.Logger) error {
	src, tgt, err := connectBoth(ctx, c)
	if err != nil {
		return err
	}
	defer src.Close(ctx)
	defer tgt.Close(ctx)

	if err := pgoutput.CheckServer(ctx, src, c.Pipeline); err != nil {
		return err
	}
	tables, err := pgoutput.SelectTables(ctx, src, c.filter)
	if err != nil {
		return err
	}
	if len(tables) == 0 {
		return fmt.Errorf("no source table matches --tables %q; nothing to replicate", c.filter)
	}
	names, err := checkTables(ctx, src, tgt, tables)
	if err != nil {
		return err
	}

	stored, err := checkpoint.PGRead(ctx, tgt, c.Pipeline)
	hasRow := err == nil
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return err
	}
	slot, err := pgoutput.ReadSlot(ctx, src, c.Pipeline)
	if err != nil {
		return err
	}
	if hasRow && !slot.Exists {
		return fmt.Errorf("the target holds a checkpoint for pipeline %s at %s but slot %s is missing on the source, so changes after it are lost: run decant drop --yes, then init again and recopy the tables",
			c.Pipeline, stored.End, c.Pipeline)
	}

	added, removed, err := pgoutput.EnsurePublication(ctx, src, c.Pipeline, names)
	if err != nil {
		return err
	}
	reader, err := pgoutput.NewReader(pgoutput.Config{DSN: c.Source, Slot: c.Pipeline, Publication: c.Pipeline})
	if err != nil {
		return err
	}
	srv, err := reader.Identify(ctx)
	if err != nil {
		return err
	}
	if hasRow && stored.SystemID != srv.SystemID {
		return fmt.Errorf("the target holds pipeline %s from source system %s, but this source is %s: use another --pipeline or run decant drop --yes for it", c.Pipeline, stored.SystemID, srv.SystemID)
	}
	start, slotCreated, err := pgoutput.EnsureSlot(ctx, src, c.Pipeline)
	if err != nil {
		return err
	}
	row, rowCreated, err := checkpoint.PGEnsure(ctx, tgt, checkpoint.Row{Pipeline: c.Pipeline, SystemID: srv.SystemID, Commit: start, End: start})
	if err != nil {
		return err
	}

	switch {
	case len(added) == len(names) && slotCreated:
		log.Info("publication created", "publication", c.Pipeline, "tables", len(names))
	case len(added)+len(removed) > 0:
		log.Warn("publication tables changed; rows that already existed in added tables are not copied",
			"publication", c.Pipeline, "added", joinNames(added), "removed", joinNames(removed))
	}
	if slotCreated {
		log.Info("slot created", "slot", c.Pipeline, "consistent_point", start.String())
	}
	if rowCreated {
		log.Info("checkpoint created", "pipeline", c.Pipeline, "position", row.End.String())
	}
	if !slotCreated && !rowCreated && len(added)+len(removed) == 0 {
		fmt.Printf("pipeline %s is already initialized (%d tables, checkpoint %s); nothing to do\n", c.Pipeline, len(names), row.End)
		return nil
	}
	fmt.Printf("pipeline %s initialized: %d tables, slot and checkpoint at %s\n", c.Pipeline, len(names), row.End)
	return nil
}

// checkTables refuses tables whose updates the source cannot publish and
// tables or columns the target lacks, listing all of them at once.
func checkTables(ctx context.Context, src, tgt *pgx.Conn, tables []pgoutput.Table) ([]source.TableName, error) {
	var noIdentity, missing, mismatched []string
	names := make([]source.TableName, len(tables))
	for i, t := range tables {
		names[i] = t.Name
		if !t.Replicable() {
			noIdentity = append(noIdentity, t.Name.String())
		}
		target := mapping.Route(t.Name)
		tt, err := pg.Inspect(ctx, tgt, target)
		if errors.Is(err, pg.ErrNoTable) {
			missing = append(missing, target.String())
			continue
		}
		if err != nil {
			return nil, err
		}
		cols, err := pgoutput.Columns(ctx, src, t.Name)
		if err != nil {
			return nil, err
		}
		if _, err := mapping.NewPlan(&source.Relation{Schema: t.Name.Schema, Name: t.Name.Name, Identity: t.Identity, Columns: cols}, *tt); err != nil {
			mismatched = append(mismatched, err.Error())
		}
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("target lacks table(s) %s; create them on the target first", strings.Join(missing, ", ")))
	}
	problems = append(problems, mismatched...)
	if len(noIdentity) > 0 {
		problems = append(problems, fmt.Sprintf("source table(s) %s have no primary key and no replica identity, so PostgreSQL would refuse their UPDATEs and DELETEs once published: add a primary key, or run ALTER TABLE ... REPLICA IDENTITY FULL, or leave them out of --tables",
			strings.Join(noIdentity, ", ")))
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return names, nil
}

func joinNames(ts []source.TableName) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, ",")
}
