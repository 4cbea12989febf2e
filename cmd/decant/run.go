package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/notify"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

func runCmd() *cobra.Command {
	var f flags
	var w webhookFlags
	var o runOptions
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Stream and apply until SIGINT/SIGTERM (or, with --catch-up, until caught up)",
		Long: `Streams committed transactions from the pipeline's slot and applies them to
the target in source commit order, each with the checkpoint row in the same
target transaction. On SIGINT or SIGTERM it rolls back the target transaction
in flight, reports the flushed position and exits 0. With --catch-up it exits
0 as soon as everything committed on the source before it started is applied.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("tables") && !c.gaussSource() {
				return usagef("run --tables is for GaussDB and openGauss sources: a PostgreSQL source streams the tables of publication %s; change them with decant init --tables", c.Pipeline)
			}
			if err := o.checkOnSlotLost(c); err != nil {
				return err
			}
			if o.procs < 0 {
				return usagef("--procs must be 0 (one per CPU) or more, got %d", o.procs)
			}
			o.procsSet = cmd.Flags().Changed("procs")
			// No heap profile is ever taken of a run: the sampling the
			// runtime does for one by default, a stack walk every 512 KiB
			// allocated, is saved.
			runtime.MemProfileRate = 0
			log := logger(c)
			n, err := startNotifier(cmd.Context(), c, w, log)
			if err != nil {
				return err
			}
			defer stopNotifier(cmd.Context(), n, log)
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			err = runObserved(cmd.Context(), c, o, log, n)
			notifyStopped(n, err)
			if perr := stop(); err == nil {
				err = perr
			}
			return err
		},
	}
	addFlags(cmd, &f, true)
	// GaussDB sources decode --tables (white-table-list); PostgreSQL ones
	// keep the selection in the publication, which init makes.
	cmd.Flags().Lookup("tables").Usage = "GaussDB and openGauss sources: comma list of schema.table patterns to decode, '*' matches any run of characters (default: every table outside system schemas, env DECANT_TABLES); a PostgreSQL source streams its publication's tables (decant init --tables)"
	addMappingFlags(cmd, &f)
	addDDLFlags(cmd, &f)
	addConflictFlags(cmd, &f)
	addStreamFlags(cmd, &f)
	addTimeoutFlags(cmd, &f)
	addApplyFlags(cmd, &f)
	addWebhookFlags(cmd, &w)
	addServiceFlags(cmd, &o.service)
	cmd.Flags().BoolVar(&o.catchUp, "catch-up", false, "exit 0 once everything committed on the source before the start is applied")
	cmd.Flags().DurationVar(&o.slotWait, "slot-wait", 60*time.Second, "how long to keep retrying while the slot is held by another session before giving up")
	cmd.Flags().StringVar(&o.onSlotLost, "on-slot-lost", "stop", "when the slot can no longer stream what the target lacks (dropped, invalidated, lost in a failover): stop (exit 3) or resync (repair the target from a new slot, as decant resync --yes does, and stream on)")
	cmd.Flags().IntVar(&o.procs, "procs", 1, "how many threads run decant's own code at once (GOMAXPROCS); 0: the runtime's default (one per CPU the process may use). One is enough for a stream that one walsender decodes, and spares the source and target the CPU of idle threads polling for work; GOMAXPROCS in the environment wins over the default")
	cmd.Flags().DurationVar(&o.retryFor, "retry-for", 0, "give up (exit 4) when transient failures go on this long without a commit; 0 retries for as long as it takes")
	// How often the slot is checked while streaming: hidden, for tests
	// that cannot wait the 30 s default.
	cmd.Flags().DurationVar(&o.slotCheck, "slot-check-interval", 30*time.Second, "how often to check the slot on a side connection while streaming")
	_ = cmd.Flags().MarkHidden("slot-check-interval") // fails only for an undefined flag
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (Go pprof format, for go tool pprof), completed when decant exits, on SIGINT or SIGTERM too")
	return cmd
}

// startCPUProfile starts writing a CPU profile to path when it is set,
// and returns what completes and closes it. It is completed however the
// run ends (caught up, SIGINT or SIGTERM, an error), since each of those
// returns through runCmd; only SIGKILL leaves it truncated.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usagef("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, usagef("--cpuprofile: %v", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("write CPU profile %s: %w", path, err)
		}
		return nil
	}, nil
}

// runOptions are run's and migrate's own flags.
type runOptions struct {
	catchUp   bool          // --catch-up
	slotWait  time.Duration // --slot-wait
	retryFor  time.Duration // --retry-for
	slotCheck time.Duration // --slot-check-interval (run only; 0: the pipeline's default)
	// onSlotLost is --on-slot-lost (run only): "stop" or "resync"; ""
	// (migrate) stops.
	onSlotLost string
	// procs is --procs (run only; 0 with procsSet false: migrate, which
	// leaves the runtime's default).
	procs    int
	procsSet bool
	service  serviceOptions
}

// runObserved runs the pipeline with its state kept, served on
// --http-addr with n's counts and logged as the progress line.
func runObserved(ctx context.Context, c config, o runOptions, log *slog.Logger, n *notify.Notifier) error {
	ob, err := startObserving(ctx, c, o.service, log)
	if err != nil {
		return err
	}
	defer ob.stop(ctx, log)
	ob.webhooks(n)
	return runPipeline(ctx, c, o, log, ob)
}

// runPipeline streams and applies until ctx ends or, with --catch-up,
// the target has what the source committed before the start; ob hears
// it all.
func runPipeline(ctx context.Context, c config, o runOptions, log *slog.Logger, ob *observing) error {
	limitMemory(c.memory)
	limitProcs(o.procs, o.procsSet)
	if !c.gaussSource() {
		if err := migrate.CopyFinished(ctx, c.workflow(log)); err != nil {
			return err
		}
	}
	var reader apply.Source
	var err error
	if c.gaussSource() {
		reader, err = gaussReader(c, log, ob.spill)
	} else {
		reader, err = pgoutput.NewReader(pgoutput.Config{
			DSN: c.Source, Slot: c.Pipeline, Publication: c.Pipeline, AppendOnlyPublication: pgoutput.AppendOnlyPublication(c.Pipeline),
			Pipeline: c.Pipeline, Logger: log,
			DescribeTypes: c.mysqlTarget(),
			MaxTxnMemory:  c.memory, SpillDir: c.SpillDir, StreamApply: c.StreamApply,
			Timeout: c.sourceTimeout, Spill: ob.spill,
			TargetHasSlot: c.targetHasSlot(),
		})
	}
	if err != nil {
		return usageError{err}
	}
	target, err := newTarget(c, log)
	if err != nil {
		return usageError{err}
	}
	cfg := apply.Config{CatchUp: o.catchUp, SlotWait: o.slotWait, RetryFor: o.retryFor, SlotCheck: o.slotCheck,
		OnSlotLost: o.slotLostHandler(c, log), Observer: ob.observer(), Logger: log}
	if !c.gaussSource() {
		cfg.TableSyncs = migrate.TableSyncs(c.workflow(log))
	}
	p := apply.New(cfg, reader, target)
	ob.streaming(ctx, log)
	return p.Run(ctx)
}

// checkOnSlotLost refuses an --on-slot-lost that is neither stop nor
// resync, and resync for a source that decant resync does not support.
func (o runOptions) checkOnSlotLost(c config) error {
	switch {
	case o.onSlotLost != "stop" && o.onSlotLost != "resync":
		return usagef("--on-slot-lost %q: want stop or resync", o.onSlotLost)
	case o.onSlotLost == "resync" && c.gaussSource():
		return usagef("--on-slot-lost resync supports PostgreSQL sources only for now: use stop, and recover a GaussDB pipeline with decant drop and init --copy")
	}
	return nil
}

// slotLostHandler is the pipeline's OnSlotLost for --on-slot-lost resync
// (nil for stop): decant resync --yes, run in the process, waiting up to
// --slot-wait for the slot the stream just used to come free.
func (o runOptions) slotLostHandler(c config, log *slog.Logger) func(context.Context, error) error {
	if o.onSlotLost != "resync" {
		return nil
	}
	return func(ctx context.Context, _ error) error {
		// The resync compares spans with --jobs workers: give them the
		// CPUs for as long as it runs.
		prev := runtime.GOMAXPROCS(0)
		runtime.SetDefaultGOMAXPROCS()
		defer runtime.GOMAXPROCS(prev)
		r := migrate.DefaultResyncOptions()
		r.Confirm = func(source.SlotStatus) (bool, error) { return true, nil }
		r.SlotWait = o.slotWait
		r.Progress = newResyncProgress(log)
		res, err := migrate.Resync(ctx, c.workflow(log), r)
		if err != nil {
			return err
		}
		log.Warn("resync repaired the target", "pipeline", c.Pipeline, "result", res.Report.Summary(), "checkpoint", res.Checkpoint.End.String())
		return nil
	}
}

// limitMemory sets the Go runtime's soft memory limit to what decant may
// hold for transactions waiting for their commit (--max-txn-memory) plus
// 16 MiB for everything else (buffered chunks, a batch or COPY round trip
// of at most 4 MiB, the runtime), so that the garbage collector keeps the
// heap near that size instead of letting it grow to twice what is live:
// peak RSS then stays within --max-txn-memory + 32 MiB (the binary and
// the runtime's own memory take the rest; make bench's large case checks
// it). GOMEMLIMIT, when set, wins.
func limitMemory(txnMemory int) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	debug.SetMemoryLimit(int64(txnMemory) + 16<<20)
}

// limitProcs sets GOMAXPROCS for streaming: n (0: the runtime's
// default), unless the flag was left at its default and GOMAXPROCS is in
// the environment; migrate (n 0, not set) keeps the runtime's default.
// The apply loop is two goroutines in turn (the reader decoding, the
// writer waiting on the target), and on a machine shared with the source
// or the target every idle thread that looks for work (polling the
// network, waking another) takes CPU from them: make bench measured
// 19-31% less agent CPU with one (README).
func limitProcs(n int, set bool) {
	_, env := os.LookupEnv("GOMAXPROCS")
	switch {
	case !set && (env || n == 0):
	case n == 0:
		// The runtime's own default (the CPUs this process may use, as
		// a CPU quota limits them), the environment aside.
		runtime.SetDefaultGOMAXPROCS()
	default:
		runtime.GOMAXPROCS(n)
	}
}
