package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/pgsession"
)

// config holds the settings every command shares. Flags beat environment
// variables, which beat the --config file.
type config struct {
	Source   string    `yaml:"-"`
	Target   string    `yaml:"target"`
	Pipeline string    `yaml:"pipeline"`
	Tables   tableList `yaml:"tables"`
	// Map routes source tables to target tables: "sales.*=sales_*".
	Map []string `yaml:"map"`
	// Columns renames and leaves out columns, by source table.
	Columns map[string]mapping.ColumnRules `yaml:"columns"`
	// OnUnrepresentable is the policy for values the target cannot hold.
	OnUnrepresentable string `yaml:"on_unrepresentable"`
	// OnUnsupportedDDL is stop or skip, for schema changes decant cannot
	// translate.
	OnUnsupportedDDL string `yaml:"on_unsupported_ddl"`
	LogLevel         string `yaml:"log_level"`
	LogJSON          bool   `yaml:"log_json"`
	// MaxTxnMemory bounds the decoded changes held in memory, over all
	// transactions waiting for their commit; past it they spill to
	// files in SpillDir.
	MaxTxnMemory string `yaml:"max_txn_memory"`
	SpillDir     string `yaml:"spill_dir"`
	// StreamApply is how in-progress transactions streamed by a
	// PostgreSQL source are applied: spool (at commit) or immediate.
	StreamApply string `yaml:"stream_apply"`
	// SynchronousCommit is on or off: off commits on a PostgreSQL
	// target without waiting for its disk (apply/pg, durable.go).
	SynchronousCommit string `yaml:"synchronous_commit"`
	// SourceTimeout is the longest silence run accepts on the replication
	// stream, TargetTimeout the longest one round trip to the target may
	// take; past either the connection is given up and the pipeline
	// resumes from the checkpoint. "0" turns the bound off.
	SourceTimeout string `yaml:"source_timeout"`
	TargetTimeout string `yaml:"target_timeout"`
	// Compact applies the net change per key of a target transaction
	// where that ends in the same rows (default); false applies every
	// change on its own, for targets whose consumers must see each one.
	Compact *bool `yaml:"compact"`

	// SourceKind is postgres, gaussdb or opengauss; by default from the
	// DSN's scheme. SourceOptions are GaussDB decoding options.
	SourceKind    string            `yaml:"-"`
	SourceOptions map[string]string `yaml:"-"`

	filter  source.TableFilter
	gauss   gauss.Options
	rules   []mapping.Rule
	columns map[source.TableName]mapping.ColumnRules
	policy  mapping.Policy
	memory  int // MaxTxnMemory in bytes

	sourceTimeout, targetTimeout time.Duration
	compact                      bool // the --compact flag's value
}

// sourceSpec is the source in the config file: a DSN string, or a
// mapping {dsn: ..., kind: ..., options: {...}} (options are GaussDB
// decoding options).
type sourceSpec struct {
	DSN     string            `yaml:"dsn"`
	Kind    string            `yaml:"kind"`
	Options map[string]string `yaml:"options"`
}

func (s *sourceSpec) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return n.Decode(&s.DSN)
	}
	type plain sourceSpec // without this method
	return n.Decode((*plain)(s))
}

// fileConfig is the config file's shape: config's keys, with the richer
// source form.
type fileConfig struct {
	config `yaml:",inline"`
	Source sourceSpec `yaml:"source"`
}

// tableList accepts a YAML list or a comma-separated string.
type tableList string

func (l *tableList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var items []string
		if err := n.Decode(&items); err != nil {
			return err
		}
		*l = tableList(strings.Join(items, ","))
		return nil
	}
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*l = tableList(s)
	return nil
}

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
	fs := cmd.Flags()
	fs.StringVar(&f.configFile, "config", "", "YAML file of shared settings (source, target, pipeline, tables, map, columns, on_unrepresentable and the others the README lists); flags and environment variables beat it")
	fs.StringVar(&f.values.Source, "source", "", "source DSN, postgres://user:pass@host:port/db (env DECANT_SOURCE)")
	fs.StringVar(&f.values.Target, "target", "", "target DSN, postgres://user:pass@host:port/db or mysql://user:pass@host:port/db (env DECANT_TARGET)")
	fs.StringVar(&f.values.Pipeline, "pipeline", "", `pipeline name: names the slot, the publication and the checkpoint row (default "decant", env DECANT_PIPELINE)`)
	fs.StringVar(&f.values.SourceKind, "source-kind", "", "postgres, gaussdb or opengauss (default: from the source DSN's scheme)")
	fs.StringToStringVar(&f.values.SourceOptions, "source-option", nil, "a GaussDB decoding option, repeatable: --source-option decode-style=b")
	fs.StringVar(&f.values.LogLevel, "log-level", "", "debug, info, warn or error (default info)")
	fs.BoolVar(&f.values.LogJSON, "log-json", false, "log as JSON lines instead of text")
	if withTables {
		fs.Var((*tableFlag)(&f.values.Tables), "tables", "comma list of schema.table patterns, '*' matches any run of characters (default: every table outside system schemas, env DECANT_TABLES)")
	}
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
	cmd.Flags().BoolVar(&f.values.compact, "compact", true, "inside one target transaction, apply only the net change of each row where the target ends the same (tables whose only unique key is the replicated key, without triggers), as few set-based statements; --compact=false applies every change on its own")
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

// load composes file, environment and flags, and validates the result.
func (f *flags) load(cmd *cobra.Command) (config, error) {
	var c config
	if f.configFile != "" {
		data, err := os.ReadFile(f.configFile)
		if err != nil {
			return c, usagef("read config file: %v", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		var fc fileConfig
		if err := dec.Decode(&fc); err != nil && !errors.Is(err, io.EOF) {
			return c, usagef("config file %s: %v", f.configFile, err)
		}
		c = fc.config
		c.Source, c.SourceKind, c.SourceOptions = fc.Source.DSN, fc.Source.Kind, fc.Source.Options
	}
	for key, dst := range map[string]*string{
		"DECANT_SOURCE": &c.Source, "DECANT_TARGET": &c.Target,
		"DECANT_PIPELINE": &c.Pipeline, "DECANT_TABLES": (*string)(&c.Tables),
	} {
		if v, ok := os.LookupEnv(key); ok && v != "" {
			*dst = v
		}
	}
	f.override(cmd, &c)
	if c.Pipeline == "" {
		c.Pipeline = "decant"
	}
	return c, c.validate()
}

// override sets what the command's flags give: each only when given
// (a flag the command lacks is never given).
func (f *flags) override(cmd *cobra.Command, c *config) {
	fs := cmd.Flags()
	for name, dst := range map[string]*string{
		"source": &c.Source, "target": &c.Target, "pipeline": &c.Pipeline, "tables": (*string)(&c.Tables),
		"log-level": &c.LogLevel, "source-kind": &c.SourceKind,
		"on-unrepresentable": &c.OnUnrepresentable, "on-unsupported-ddl": &c.OnUnsupportedDDL,
		"max-txn-memory": &c.MaxTxnMemory, "spill-dir": &c.SpillDir, "stream-apply": &c.StreamApply,
		"synchronous-commit": &c.SynchronousCommit, "source-timeout": &c.SourceTimeout, "target-timeout": &c.TargetTimeout,
	} {
		if fs.Changed(name) {
			*dst = fs.Lookup(name).Value.String()
		}
	}
	if fs.Changed("source-option") {
		if c.SourceOptions == nil {
			c.SourceOptions = map[string]string{}
		}
		for k, v := range f.values.SourceOptions {
			c.SourceOptions[k] = v
		}
	}
	if fs.Changed("compact") {
		c.Compact = &f.values.compact
	}
	if fs.Changed("map") {
		c.Map = f.values.Map
	}
	if fs.Changed("log-json") {
		c.LogJSON = f.values.LogJSON
	}
}

// validate checks the settings and derives what the packages take from
// them; every mistake is a usage error, found before anything connects.
func (c *config) validate() error {
	for _, check := range []func() error{c.validateEnds, c.validateMapping, c.validateRun} {
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
