package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/notify"
)

func migrateCmd() *cobra.Command {
	var f flags
	var w webhookFlags
	o := initOptions{copy: true}
	var ro runOptions
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "init --copy, then run: copy the tables as of a snapshot, then keep the target up to date",
		Long: `Does what decant init --copy and then decant run do: checks source and
target, creates the publication and a slot with an exported snapshot, copies
every selected table under it (--jobs workers; with --create-tables the
target tables are made first and their keys and indexes built after the
data), then streams from the slot's consistent point until SIGINT/SIGTERM,
or with --catch-up until the target has everything committed before the
streaming began. Then check it with decant verify, and switch over with
decant cutover.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, opts, log, err := loadInit(cmd, &f, o)
			if err != nil {
				return err
			}
			n, err := startNotifier(cmd.Context(), c, w, log)
			if err != nil {
				return err
			}
			defer stopNotifier(cmd.Context(), n, log)
			// The endpoint serves the copy's progress too.
			ob, err := startObserving(cmd.Context(), c, ro.service, log)
			if err != nil {
				return err
			}
			defer ob.stop(cmd.Context(), log)
			ob.webhooks(n)
			if opts.Copy {
				opts.Progress = newCopyProgress(log, ob.state)
			}
			err = migrateAndRun(cmd.Context(), c, opts, n, ro, log, ob)
			notifyStopped(n, err)
			return err
		},
	}
	addInitFlags(cmd, &f, &o, false)
	addDDLFlags(cmd, &f)
	addConflictFlags(cmd, &f)
	addStreamFlags(cmd, &f)
	addTimeoutFlags(cmd, &f)
	addApplyFlags(cmd, &f)
	addWebhookFlags(cmd, &w)
	addServiceFlags(cmd, &ro.service)
	cmd.Flags().BoolVar(&ro.catchUp, "catch-up", false, "exit 0 once the target has what the source committed before streaming began")
	cmd.Flags().DurationVar(&ro.slotWait, "slot-wait", 60*time.Second, "how long to keep retrying while the slot is held by another session")
	cmd.Flags().DurationVar(&ro.retryFor, "retry-for", 0, "give up (exit 4) when transient failures go on this long without a commit; 0 retries for as long as it takes")
	return cmd
}

// migrateAndRun is migrate's work: the copy, which migrate.Init always
// runs under opts.Copy (copy_finished), then streaming.
func migrateAndRun(ctx context.Context, c config, opts migrate.InitOptions, n *notify.Notifier, ro runOptions, log *slog.Logger, ob *observing) error {
	began := time.Now()
	res, err := initPipeline(ctx, c, opts, log)
	if err != nil {
		return err
	}
	if opts.Copy {
		n.CopyFinished(res.Tables, time.Since(began))
	}
	return runPipeline(ctx, c, ro, log, ob)
}

// copyCmd is init --copy under the name a migration's first step goes by.
func copyCmd() *cobra.Command {
	var f flags
	o := initOptions{copy: true}
	cmd := &cobra.Command{
		Use:   "copy",
		Short: "init --copy: create the pipeline and copy the tables as of its slot's snapshot",
		Long: `Does what decant init --copy does: checks source and target, creates the
publication and a slot with an exported snapshot, copies every selected
table under it (--jobs workers, large tables in --split-size block ranges;
with --create-tables the target tables are made first and their keys and
indexes built after the data), then writes the checkpoint at the slot's
consistent point. decant run then streams from exactly there. An
interrupted copy is restarted by running decant copy again.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _, err := runInit(cmd, &f, o)
			return err
		},
	}
	addInitFlags(cmd, &f, &o, false)
	return cmd
}
