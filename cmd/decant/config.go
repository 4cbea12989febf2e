package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

// config holds the settings every command shares. Flags beat environment
// variables, which beat the --config file.
type config struct {
	Source   string    `yaml:"source"`
	Target   string    `yaml:"target"`
	Pipeline string    `yaml:"pipeline"`
	Tables   tableList `yaml:"tables"`
	LogLevel string    `yaml:"log_level"`
	LogJSON  bool      `yaml:"log_json"`

	filter source.TableFilter
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
	fs.StringVar(&f.configFile, "config", "", "YAML file with the same keys as the flags (source, target, pipeline, tables)")
	fs.StringVar(&f.values.Source, "source", "", "source DSN, postgres://user:pass@host:port/db (env DECANT_SOURCE)")
	fs.StringVar(&f.values.Target, "target", "", "target DSN, postgres://user:pass@host:port/db (env DECANT_TARGET)")
	fs.StringVar(&f.values.Pipeline, "pipeline", "", `pipeline name: names the slot, the publication and the checkpoint row (default "decant", env DECANT_PIPELINE)`)
	fs.StringVar(&f.values.LogLevel, "log-level", "", "debug, info, warn or error (default info)")
	fs.BoolVar(&f.values.LogJSON, "log-json", false, "log as JSON lines instead of text")
	if withTables {
		fs.Var((*tableFlag)(&f.values.Tables), "tables", "comma list of schema.table patterns, '*' matches any run of characters (default: every table outside system schemas, env DECANT_TABLES)")
	}
}

type tableFlag tableList

func (t *tableFlag) String() string     { return string(*t) }
func (t *tableFlag) Set(v string) error { *t = tableFlag(v); return nil }
func (t *tableFlag) Type() string       { return "LIST" }

var pipelineName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

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
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return c, usagef("config file %s: %v", f.configFile, err)
		}
	}
	for key, dst := range map[string]*string{
		"DECANT_SOURCE": &c.Source, "DECANT_TARGET": &c.Target,
		"DECANT_PIPELINE": &c.Pipeline, "DECANT_TABLES": (*string)(&c.Tables),
	} {
		if v, ok := os.LookupEnv(key); ok && v != "" {
			*dst = v
		}
	}
	fs := cmd.Flags()
	set := func(name string, dst *string, v string) {
		if fs.Changed(name) {
			*dst = v
		}
	}
	set("source", &c.Source, f.values.Source)
	set("target", &c.Target, f.values.Target)
	set("pipeline", &c.Pipeline, f.values.Pipeline)
	set("tables", (*string)(&c.Tables), string(f.values.Tables))
	set("log-level", &c.LogLevel, f.values.LogLevel)
	if fs.Changed("log-json") {
		c.LogJSON = f.values.LogJSON
	}
	if c.Pipeline == "" {
		c.Pipeline = "decant"
	}
	return c, c.validate()
}

func (c *config) validate() error {
	if !pipelineName.MatchString(c.Pipeline) {
		return usagef("invalid --pipeline %q: use 1 to 63 lowercase letters, digits and underscores, not starting with a digit", c.Pipeline)
	}
	if c.Source == "" {
		return usagef("no source: give --source postgres://user:pass@host:port/db, DECANT_SOURCE, or source: in --config")
	}
	if c.Target == "" {
		return usagef("no target: give --target postgres://user:pass@host:port/db, DECANT_TARGET, or target: in --config")
	}
	if _, err := pgoutput.ParseDSN(c.Source); err != nil {
		return usagef("--source: %v", err)
	}
	if _, err := pgoutput.ParseDSN(c.Target); err != nil {
		return usagef("--target: %v", err)
	}
	var err error
	if c.filter, err = source.ParseTableFilter(string(c.Tables)); err != nil {
		return usagef("--tables: %v", err)
	}
	switch c.LogLevel {
	case "", "debug", "info", "warn", "error":
	default:
		return usagef("invalid --log-level %q: use debug, info, warn or error", c.LogLevel)
	}
	return nil
}

// connectBoth opens SQL sessions on the source and the target.
func connectBoth(ctx context.Context, c config) (src, tgt *pgx.Conn, err error) {
	if src, err = pgoutput.Connect(ctx, c.Source); err != nil {
		return nil, nil, err
	}
	if tgt, err = pg.Connect(ctx, c.Target); err != nil {
		src.Close(ctx)
		return nil, nil, err
	}
	return src, tgt, nil
}
