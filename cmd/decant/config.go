package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/notify"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/pgoutput"
	"github.com/decant/decant/source/pgsession"
)

// config holds the settings every command shares: the values of their
// flags, each from the command line, the environment or the --config
// file (settings.go), and the column rules, which only the file gives.
type config struct {
	Source   string
	Target   string
	Pipeline string
	Tables   tableList
	// Map routes source tables to target tables: "sales.*=sales_*".
	Map []string
	// Columns renames and leaves out columns, by source table.
	Columns map[string]mapping.ColumnRules
	// Webhooks are the file's webhooks: entries (URL and headers); run
	// and migrate add them to their --webhook URLs.
	Webhooks []notify.Target
	// OnUnrepresentable is the policy for values the target cannot hold.
	OnUnrepresentable string
	// OnUnsupportedDDL is stop or skip, for schema changes decant cannot
	// translate.
	OnUnsupportedDDL string
	// OnConflict are the KIND=POLICY conflict policies for every table,
	// Conflicts those of the file's conflicts: section, by source table.
	OnConflict []string
	Conflicts  map[string][]string
	LogLevel   string
	LogJSON    bool
	// MaxTxnMemory bounds the decoded changes held in memory, over all
	// transactions waiting for their commit; past it they spill to
	// files in SpillDir.
	MaxTxnMemory string
	SpillDir     string
	// StreamApply is how in-progress transactions streamed by a
	// PostgreSQL source are applied: spool (at commit) or immediate.
	StreamApply string
	// SynchronousCommit is on or off: off commits on a PostgreSQL
	// target without waiting for its disk (apply/pg, durable.go).
	SynchronousCommit string
	// SourceTimeout is the longest silence run accepts on the replication
	// stream, TargetTimeout the longest one round trip to the target may
	// take; past either the connection is given up and the pipeline
	// resumes from the checkpoint. "0" turns the bound off.
	SourceTimeout string
	TargetTimeout string
	// Compact applies the net change per key of a target transaction
	// where that ends in the same rows (default); false applies every
	// change on its own, for targets whose consumers must see each one.
	Compact bool

	// SourceKind is postgres, gaussdb or opengauss; by default from the
	// DSN's scheme. SourceOptions are GaussDB decoding options.
	SourceKind    string
	SourceOptions map[string]string
	// SourcePasswordFile and TargetPasswordFile hold the password of a
	// GaussDB source and a MySQL target, so that it is not on the
	// command line; PostgreSQL DSNs take PGPASSFILE and .pgpass instead.
	SourcePasswordFile string
	TargetPasswordFile string

	filter  source.TableFilter
	gauss   gauss.Options
	rules   []mapping.Rule
	columns map[source.TableName]mapping.ColumnRules
	policy  mapping.Policy
	// conflicts are the conflict policies by target table.
	conflicts apply.ConflictPolicies
	memory    int // MaxTxnMemory in bytes

	sourceTimeout, targetTimeout time.Duration
}

// tableList is a comma-separated list of table patterns; the file may
// give it as a YAML list.
type tableList string

// usageError is a mistake in how decant was called or configured: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// flags binds the shared flags to a command.
type flags struct {
	configFile string
	values     config
}

func addFlags(cmd *cobra.Command, f *flags, withTables bool) {
	addConfigFlag(cmd, &f.configFile)
	fs := cmd.Flags()
	fs.StringVar(&f.values.Source, "source", "", "source DSN, postgres://user:pass@host:port/db (env DECANT_SOURCE)")
	fs.StringVar(&f.values.Target, "target", "", "target DSN, postgres://user:pass@host:port/db or mysql://user:pass@host:port/db (env DECANT_TARGET)")
	fs.StringVar(&f.values.Pipeline, "pipeline", "", `pipeline name: names the slot, the publication and the checkpoint row (default "decant", env DECANT_PIPELINE)`)
	fs.StringVar(&f.values.SourceKind, "source-kind", "", "postgres, gaussdb or opengauss (default: from the source DSN's scheme)")
	fs.StringToStringVar(&f.values.SourceOptions, "source-option", nil, "a GaussDB decoding option, repeatable: --source-option decode-style=b")
	fs.StringVar(&f.values.SourcePasswordFile, "source-password-file", "", "file holding the password of a GaussDB or openGauss source (one trailing newline is dropped), instead of the DSN; PostgreSQL sources read PGPASSFILE or ~/.pgpass")
	fs.StringVar(&f.values.TargetPasswordFile, "target-password-file", "", "file holding the password of a MySQL or MariaDB target (one trailing newline is dropped), instead of the DSN; PostgreSQL targets read PGPASSFILE or ~/.pgpass")
	fs.StringVar(&f.values.LogLevel, "log-level", "", "debug, info, warn or error (default info)")
	fs.BoolVar(&f.values.LogJSON, "log-json", false, "log as JSON lines instead of text")
	if withTables {
		fs.Var((*tableFlag)(&f.values.Tables), "tables", "comma list of schema.table patterns, '*' matches any run of characters (default: every table outside system schemas, env DECANT_TABLES)")
	}
}

// addConfigFlag adds --config.
func addConfigFlag(cmd *cobra.Command, path *string) {
	cmd.Flags().StringVar(path, "config", "", "YAML file of settings (env DECANT_CONFIG): every flag is also a key there, --slot-wait as slot_wait, and an environment variable, DECANT_SLOT_WAIT; the command line beats the environment, which beats the file")
}

// addMappingFlags adds the flags that decide what source rows become on
// the target (init, copy, migrate, run, verify, cutover).
func addMappingFlags(cmd *cobra.Command, f *flags) {
	fs := cmd.Flags()
	fs.StringArrayVar(&f.values.Map, "map", nil, "route source tables to target tables, repeatable: 'sales.*=sales_*', 'public.orders=shop.orders'")
	fs.StringVar(&f.values.OnUnrepresentable, "on-unrepresentable", "", "what to do with a value the target cannot hold: error, null or clamp (default error)")
}

// addDDLFlags adds the policy for schema changes decant cannot translate
// (run, migrate: the commands that apply the stream).
func addDDLFlags(cmd *cobra.Command, f *flags) {
	cmd.Flags().StringVar(&f.values.OnUnsupportedDDL, "on-unsupported-ddl", "", "what to do with a schema change decant cannot translate: stop or skip (default stop; skip records it on the target)")
}

// addStreamFlags adds the flags that bound what run holds in memory and
// say how streamed transactions are applied.
func addStreamFlags(cmd *cobra.Command, f *flags) {
	fs := cmd.Flags()
	fs.StringVar(&f.values.MaxTxnMemory, "max-txn-memory", "", "decoded changes held in memory over all transactions waiting for their commit, before they spill to --spill-dir (default 64MiB)")
	fs.StringVar(&f.values.SpillDir, "spill-dir", "", "directory for spill files (default the system's temporary directory)")
	fs.StringVar(&f.values.StreamApply, "stream-apply", "", "in-progress transactions streamed by PostgreSQL: spool (apply at commit) or immediate (apply as they arrive, in an open target transaction) (default spool)")
	fs.StringVar(&f.values.SynchronousCommit, "synchronous-commit", "", "on or off: off commits on a PostgreSQL target with synchronous_commit = off, as PostgreSQL's subscriptions do, and tells the source only what the target has flushed to disk (default off; MySQL and MariaDB targets: on)")
}

// addApplyFlags adds the flags of how run writes (run).
func addApplyFlags(cmd *cobra.Command, f *flags) {
	cmd.Flags().BoolVar(&f.values.Compact, "compact", true, "inside one target transaction, apply only the net change of each row where the target ends the same (tables whose only unique key is the replicated key, without triggers), as few set-based statements; --compact=false applies every change on its own")
}

// addTimeoutFlags adds the bounds on a silent peer (run).
func addTimeoutFlags(cmd *cobra.Command, f *flags) {
	fs := cmd.Flags()
	fs.StringVar(&f.values.SourceTimeout, "source-timeout", "", "give up the replication connection after this long without a message from the source, not even a keepalive (decant asks for one halfway), and resume from the checkpoint; 0 turns it off (default 60s)")
	fs.StringVar(&f.values.TargetTimeout, "target-timeout", "", "give up the target connection when one round trip (a batch, a COPY, a COMMIT, a schema change) takes longer, and resume from the checkpoint; must exceed the longest statement the target runs; 0 turns it off (default 5m)")
}

type tableFlag tableList

func (t *tableFlag) String() string     { return string(*t) }
func (t *tableFlag) Set(v string) error { *t = tableFlag(v); return nil }
func (t *tableFlag) Type() string       { return "LIST" }

// pipelineName: the name goes into slot, publication, trigger and
// function names, which must stay within 63 bytes with decant's prefixes.
var pipelineName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

// load settles the command's flags from the command line, environment
// and file, and validates the result.
func (f *flags) load(cmd *cobra.Command) (config, error) {
	file, err := settle(cmd)
	if err != nil {
		return config{}, err
	}
	c := f.values
	c.Columns = file.columns
	c.Webhooks = file.webhooks
	c.Conflicts = file.conflicts
	if c.Pipeline == "" {
		c.Pipeline = "decant"
	}
	if err := c.validate(); err != nil {
		return c, err
	}
	// The context of a command that runs (main's) carries the process's
	// Links, which every connection reports to; a command a test built
	// and never ran has none to carry them.
	if ctx := cmd.Context(); ctx != nil {
		cmd.SetContext(source.WithLinks(ctx, source.NewLinks(logger(c), os.Getenv(loopbackIsRemoteEnv) == "1")))
	}
	return c, nil
}

// loopbackIsRemoteEnv, set to 1, makes decant treat connections to
// loopback addresses as remote ones: warned about unless verified, no
// cleartext password, no unverified server key (source.Links). It exists
// so that tests on a machine whose only network is loopback can prove
// the rules for remote hosts; it only makes decant stricter.
const loopbackIsRemoteEnv = "DECANT_LOOPBACK_IS_REMOTE"

// validate checks the settings and derives what the packages take from
// them; every mistake is a usage error, found before anything connects.
func (c *config) validate() error {
	for _, check := range []func() error{c.validateEnds, c.readPasswords, c.validateMapping, c.validateConflicts, c.validateRun} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateEnds checks the pipeline name and both DSNs.
func (c *config) validateEnds() error {
	if !pipelineName.MatchString(c.Pipeline) {
		return usagef("invalid --pipeline %q: use 1 to 48 lowercase letters, digits and underscores, not starting with a digit", c.Pipeline)
	}
	if strings.HasSuffix(c.Pipeline, pgoutput.AppendOnlySuffix) {
		return usagef("invalid --pipeline %q: a name ending in %s is the append-only publication of pipeline %s; choose another", c.Pipeline, pgoutput.AppendOnlySuffix, strings.TrimSuffix(c.Pipeline, pgoutput.AppendOnlySuffix))
	}
	if c.Source == "" {
		return usagef("no source: give --source postgres://user:pass@host:port/db (or gaussdb://, opengauss://), DECANT_SOURCE, or source: in --config")
	}
	if c.Target == "" {
		return usagef("no target: give --target postgres://user:pass@host:port/db (or mysql://...), DECANT_TARGET, or target: in --config")
	}
	switch c.sourceKind() {
	case "postgres":
		if _, err := pgsession.ParseDSN(c.Source); err != nil {
			return usagef("--source: %v", err)
		}
		if len(c.SourceOptions) > 0 {
			return usagef("--source-option is for GaussDB and openGauss sources; this source is PostgreSQL")
		}
	case "gaussdb", "opengauss":
		if _, err := gauss.ParseDSN(c.Source); err != nil {
			return usagef("--source: %v", err)
		}
	default:
		return usagef("invalid --source-kind %q: use postgres, gaussdb or opengauss", c.SourceKind)
	}
	if c.mysqlTarget() {
		if _, err := mysql.ParseDSN(c.Target); err != nil {
			return usagef("--target: %v", err)
		}
	} else if _, err := pgsession.ParseDSN(c.Target); err != nil {
		return usagef("--target: %v", err)
	}
	return nil
}

// readPasswords puts the passwords of --source-password-file and
// --target-password-file into the DSNs, which go nowhere but to the
// connections: no error and no log line quotes a DSN's password.
// PostgreSQL DSNs need no such flag: pgx reads PGPASSWORD, PGPASSFILE and
// ~/.pgpass as libpq does.
func (c *config) readPasswords() error {
	var err error
	if c.SourcePasswordFile != "" {
		if !c.gaussSource() {
			return usagef("--source-password-file is for GaussDB and openGauss sources: a PostgreSQL source takes its password from PGPASSWORD, PGPASSFILE or ~/.pgpass (docs/operations.md#passwords)")
		}
		if c.Source, err = withPasswordFile(c.Source, c.SourcePasswordFile, "source", gauss.WithPassword); err != nil {
			return err
		}
	}
	if c.TargetPasswordFile != "" {
		if !c.mysqlTarget() {
			return usagef("--target-password-file is for MySQL and MariaDB targets: a PostgreSQL target takes its password from PGPASSWORD, PGPASSFILE or ~/.pgpass (docs/operations.md#passwords)")
		}
		if c.Target, err = withPasswordFile(c.Target, c.TargetPasswordFile, "target", mysql.WithPassword); err != nil {
			return err
		}
	}
	return nil
}

// withPasswordFile reads a password file, drops one trailing newline
// (what echo and most editors add) and puts the password into dsn.
func withPasswordFile(dsn, path, end string, with func(dsn, password string) (string, error)) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", usagef("--%s-password-file: %v", end, err)
	}
	password := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if password == "" {
		return "", usagef("--%s-password-file %s is empty: write the %s user's password into it", end, path, end)
	}
	if dsn, err = with(dsn, password); err != nil {
		return "", usagef("--%s-password-file: %v", end, err)
	}
	return dsn, nil
}

// validateMapping checks which tables are selected and what they become.
func (c *config) validateMapping() error {
	var err error
	if c.filter, err = source.ParseTableFilter(string(c.Tables)); err != nil {
		return usagef("--tables: %v", err)
	}
	if c.gaussSource() {
		if c.gauss, err = gauss.ParseOptions(c.SourceOptions, string(c.Tables)); err != nil {
			return usageError{err}
		}
	}
	for _, spec := range c.Map {
		r, err := mapping.ParseRule(spec)
		if err != nil {
			return usageError{err}
		}
		c.rules = append(c.rules, r)
	}
	c.columns = map[source.TableName]mapping.ColumnRules{}
	for name, rules := range c.Columns {
		schema, table, ok := strings.Cut(name, ".")
		if !ok {
			return usagef("columns: %q is not schema.table", name)
		}
		c.columns[source.TableName{Schema: schema, Name: table}] = rules
	}
	switch c.OnUnsupportedDDL {
	case "":
		c.OnUnsupportedDDL = "stop"
	case "stop", "skip":
	default:
		return usagef("invalid --on-unsupported-ddl %q: use stop or skip", c.OnUnsupportedDDL)
	}
	if c.OnUnrepresentable == "" {
		c.OnUnrepresentable = "error"
	}
	if c.policy, err = mapping.ParsePolicy(c.OnUnrepresentable); err != nil {
		return usagef("--on-unrepresentable: %v", err)
	}
	return nil
}

// validateRun checks logging and how run streams and applies.
func (c *config) validateRun() error {
	switch c.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		return usagef("invalid --log-level %q: use debug, info, warn or error", c.LogLevel)
	}
	if c.MaxTxnMemory == "" {
		c.MaxTxnMemory = "64MiB"
	}
	var err error
	if c.memory, err = parseBytes(c.MaxTxnMemory); err != nil || c.memory < 1<<20 {
		return usagef("invalid --max-txn-memory %q: give a size of at least 1MiB, like 64MiB or 1GiB", c.MaxTxnMemory)
	}
	if c.SpillDir != "" {
		if st, err := os.Stat(c.SpillDir); err != nil || !st.IsDir() {
			return usagef("--spill-dir %s is not a directory decant can use: create it (decant removes only its own spill files there)", c.SpillDir)
		}
	}
	switch c.StreamApply {
	case "":
		c.StreamApply = "spool"
	case "spool", "immediate":
	default:
		return usagef("invalid --stream-apply %q: use spool or immediate", c.StreamApply)
	}
	if err := c.validateCommit(); err != nil {
		return err
	}
	if c.sourceTimeout, err = parseTimeout("source-timeout", c.SourceTimeout, defaultSourceTimeout); err != nil {
		return err
	}
	c.targetTimeout, err = parseTimeout("target-timeout", c.TargetTimeout, defaultTargetTimeout)
	return err
}

// validateCommit checks --synchronous-commit, whose default depends on
// the target.
func (c *config) validateCommit() error {
	switch {
	case c.SynchronousCommit == "" && c.mysqlTarget():
		c.SynchronousCommit = "on"
	case c.SynchronousCommit == "":
		c.SynchronousCommit = "off"
	case c.SynchronousCommit == "off" && c.mysqlTarget():
		return usagef("--synchronous-commit off is for PostgreSQL targets: MySQL and MariaDB set durability for the whole server (innodb_flush_log_at_trx_commit, sync_binlog), not per session; leave the flag out")
	case c.SynchronousCommit != "on" && c.SynchronousCommit != "off":
		return usagef("invalid --synchronous-commit %q: use on or off", c.SynchronousCommit)
	}
	return nil
}

// The default bounds on a silent peer. 60 s of silence on the replication
// stream is PostgreSQL's own wal_receiver_timeout: a healthy walsender,
// even one busy decoding a large transaction it filters out, talks more
// often, and asked for a keepalive it answers at once. A target round
// trip carries at most a batch of 1000 statements or 4 MiB (a COPY chunk,
// a COMMIT): seconds even on a loaded server, so 5 min only catches a
// target that stopped answering, and leaves room for a large replicated
// DELETE or a schema change; raise it for schema changes that rewrite big
// tables.
const (
	defaultSourceTimeout = 60 * time.Second
	defaultTargetTimeout = 5 * time.Minute
)

// parseTimeout reads a duration flag; "" is the default, "0" no bound.
func parseTimeout(flag, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if s == "0" {
		d, err = 0, nil
	}
	if err != nil || d < 0 {
		return 0, usagef("invalid --%s %q: give a duration like 30s or 5m, or 0 for no limit", flag, s)
	}
	return d, nil
}

// parseBytes reads a size: a number with an optional unit B, KiB, MiB,
// GiB (or kB, MB, GB, taken as powers of 1024 like PostgreSQL's).
func parseBytes(s string) (int, error) {
	num := strings.TrimRight(s, "BbKkMmGgIi")
	n, err := strconv.ParseUint(strings.TrimSpace(num), 10, 40)
	if err != nil {
		return 0, err
	}
	unit := strings.ToLower(strings.TrimSpace(s[len(num):]))
	shift, ok := map[string]uint{"": 0, "b": 0, "kb": 10, "kib": 10, "k": 10, "mb": 20, "mib": 20, "m": 20, "gb": 30, "gib": 30, "g": 30}[unit]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	return int(n << shift), nil
}

// sourceKind is the kind of source: --source-kind, else the DSN's scheme.
func (c *config) sourceKind() string {
	if c.SourceKind != "" {
		return c.SourceKind
	}
	scheme, _, _ := strings.Cut(c.Source, "://")
	switch scheme {
	case "gaussdb", "opengauss":
		return scheme
	}
	return "postgres"
}

// gaussSource reports whether the source is GaussDB or openGauss.
func (c *config) gaussSource() bool { k := c.sourceKind(); return k == "gaussdb" || k == "opengauss" }
