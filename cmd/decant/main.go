// Command decant applies a source database's logical replication stream
// (PostgreSQL pgoutput; GaussDB and openGauss decoding) to a PostgreSQL or
// MySQL/MariaDB target in source commit order, exactly once.
//
//	decant init    set up the pipeline: publication, slot, checkpoint (--copy: and copy the tables)
//	decant copy    init --copy
//	decant run     stream and apply until SIGINT/SIGTERM (--catch-up: until caught up)
//	decant migrate init --copy, then run
//	decant status  the slot, the checkpoint and the lag
//	decant verify  compare source and target table by table
//	decant cutover fence, catch-up, sequences (and verify): is it safe to switch?
//	decant drop    remove the pipeline's slot, publication and checkpoint
//	decant skip    have the next run skip the transaction the target refused (--lsn), or --cancel
//	decant decode  decode captured GaussDB/openGauss payloads to JSON lines
//	decant version the version, commit and build time (also --version)
//	decant completion  shell completion scripts (bash, zsh, fish, powershell)
//
// This package is the command line only: flags, environment and the
// --config file become the configuration of the packages that do the work
// (apply/migrate for the workflows, apply for run), and their results
// become output.
//
// Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error,
// 3 needs a person, not retried: the target refused a change for good (a
// constraint violation, a value it cannot hold, a row it lacks), the spill
// directory is full, or the slot can no longer stream what the target
// lacks (missing, invalidated, consumed past the checkpoint); 4 gave up
// after transient failures (the first connection failed, the slot stayed
// busy past --slot-wait, --retry-for ran out): starting it again later may
// well succeed.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/apply/mysql"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd, err := newRoot().ExecuteContextC(ctx)
	stop()
	os.Exit(report(asLogged(cmd, err)))
}

// report prints err as one line and returns the exit code.
func report(err error) int {
	if err == nil {
		return 0
	}
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	printError(os.Stderr, err, msg)
	var u usageError
	var refused *migrate.UsageError
	if errors.As(err, &u) || errors.As(err, &refused) || strings.HasPrefix(msg, "unknown command") ||
		strings.HasPrefix(msg, "unknown flag") || strings.HasPrefix(msg, "unknown shorthand") {
		return 2
	}
	if apply.NeedsPerson(err) {
		return 3
	}
	if apply.GaveUp(err) {
		return 4
	}
	return 1
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "decant",
		Short: "Apply a source database's logical replication stream to a target, in commit order, exactly once",
		Long: `Apply a source database's logical replication stream to a target, in commit order, exactly once.

Exit codes:
  0  success (a clean stop on SIGINT or SIGTERM, or --catch-up reached its goal)
  1  runtime failure
  2  usage or configuration error
  3  needs a person, not worth a restart: the target refused a change for good
     (constraint violation, a value it cannot hold, a row it lacks), the spill
     directory is full, or the slot can no longer stream what the target lacks
  4  gave up after transient failures (the first connection failed, the slot
     stayed busy past --slot-wait, --retry-for ran out): restart it later`,
		Version:       readVersion().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(initCmd(), runCmd(), statusCmd(), dropCmd(), decodeCmd())
	root.AddCommand(copyCmd(), migrateCmd(), verifyCmd(), resyncCmd(), cutoverCmd(), skipCmd(), addTablesCmd(), versionCmd())
	for _, c := range root.Commands() {
		if c.Args != nil {
			continue // decode takes a file
		}
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("%s takes no arguments, got %q", cmd.Name(), args)
			}
			return nil
		}
	}
	return root
}

// logger builds the logger every package receives.
func logger(c config) *slog.Logger {
	level := slog.LevelInfo
	switch c.LogLevel {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	var log *slog.Logger
	if c.LogJSON {
		log = slog.New(slog.NewJSONHandler(os.Stderr, opts))
	} else {
		log = slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	// The MySQL driver's logger is global: route it once, here.
	mysql.RouteDriverLog(log)
	return log
}
