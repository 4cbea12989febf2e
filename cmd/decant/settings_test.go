package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandsOf is every command under root that takes settings: all but
// cobra's help and completion.
func commandsOf(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		out = append(out, c)
		out = append(out, commandsOf(c)...)
	}
	return out
}

// layerValues are a valid value of fl's type for the file, the
// environment and the command line, each different from the default
// and from each other.
func layerValues(fl *pflag.Flag) [3]string {
	switch fl.Value.Type() {
	case "bool":
		if fl.DefValue == "true" {
			return [3]string{"false", "true", "false"}
		}
		return [3]string{"true", "false", "true"}
	case "int", "int64", "uint64":
		return [3]string{"101", "102", "103"}
	case "duration":
		return [3]string{"11s", "12s", "13s"}
	case "stringToString":
		return [3]string{"k=file", "k=env", "k=flag"}
	case "stringArray":
		return [3]string{"a.x=file", "a.x=env", "a.x=flag"}
	}
	return [3]string{"file", "env", "flag"}
}

// fileLine is the --config line that gives fl the value v.
func fileLine(fl *pflag.Flag, v string) string {
	key := fileKey(fl.Name)
	switch fl.Value.Type() {
	case "stringToString":
		k, val, _ := strings.Cut(v, "=")
		return key + ":\n  " + k + ": " + val + "\n"
	case "stringArray", "LIST":
		return key + ":\n  - " + v + "\n"
	}
	return key + ": " + v + "\n"
}

// shown is how fl prints the value v once set.
func shown(fl *pflag.Flag, v string) string {
	switch fl.Value.Type() {
	case "stringToString", "stringArray":
		return "[" + v + "]"
	}
	return v
}

// TestEveryFlagFromEnvAndFile walks every command's flags: each has a
// file key and an environment variable by the one naming rule, the file
// sets it, the environment beats the file, and the command line beats
// both.
func TestEveryFlagFromEnvAndFile(t *testing.T) {
	seen := 0
	for _, c := range commandsOf(newRoot()) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if !configurable(fl.Name) {
				return
			}
			seen++
			vals := layerValues(fl)
			for layers := 1; layers <= 3; layers++ {
				t.Run(c.Name()+"/"+fl.Name+"/"+[]string{"", "file", "env", "flag"}[layers], func(t *testing.T) {
					got := settledValue(t, c.CommandPath(), fl.Name, vals, layers)
					if want := shown(fl, vals[layers-1]); got != want {
						t.Errorf("--%s with %d layers (file %s, env %s): %q, want %q", fl.Name, layers, fileKey(fl.Name), envName(fl.Name), got, want)
					}
				})
			}
		})
	}
	if seen < 40 {
		t.Errorf("only %d flags seen: the walk missed commands", seen)
	}
}

// settledValue settles a fresh command's flags from the first layers of
// file, environment and command line, and returns the flag's value.
func settledValue(t *testing.T, path, flag string, vals [3]string, layers int) string {
	t.Helper()
	root := newRoot()
	cmd, _, err := root.Find(strings.Fields(path)[1:])
	if err != nil {
		t.Fatal(err)
	}
	fl := cmd.Flags().Lookup(flag)
	file := filepath.Join(t.TempDir(), "decant.yaml")
	if err := os.WriteFile(file, []byte(fileLine(fl, vals[0])), 0o600); err != nil {
		t.Fatal(err)
	}
	if layers >= 2 {
		t.Setenv(envName(flag), vals[1])
	}
	args := []string{"--config", file}
	if layers >= 3 {
		args = append(args, "--"+flag+"="+vals[2])
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if _, err := settle(cmd); err != nil {
		t.Fatal(err)
	}
	return fl.Value.String()
}

// runFlags parses args as decant run's and settles them.
func runFlags(t *testing.T, args ...string) (*cobra.Command, error) {
	t.Helper()
	cmd, _, err := newRoot().Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	_, err = settle(cmd)
	return cmd, err
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "decant.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// The config file can be named by DECANT_CONFIG; --config beats it.
func TestConfigFromEnv(t *testing.T) {
	t.Setenv("DECANT_CONFIG", writeFile(t, "pipeline: fromenvfile\n"))
	cmd, err := runFlags(t)
	if err != nil || cmd.Flags().Lookup("pipeline").Value.String() != "fromenvfile" {
		t.Errorf("DECANT_CONFIG: %v, pipeline %s", err, cmd.Flags().Lookup("pipeline").Value)
	}
	cmd, err = runFlags(t, "--config", writeFile(t, "pipeline: fromflagfile\n"))
	if err != nil || cmd.Flags().Lookup("pipeline").Value.String() != "fromflagfile" {
		t.Errorf("--config over DECANT_CONFIG: %v, pipeline %s", err, cmd.Flags().Lookup("pipeline").Value)
	}
}

// A repeatable flag takes a comma list in its environment variable; the
// pairs of --source-option add up over the layers, the command line
// winning per name.
func TestListsAndPairs(t *testing.T) {
	t.Setenv("DECANT_MAP", "a.*=x_*, b.*=y_*")
	t.Setenv("DECANT_SOURCE_OPTION", "b=env,c=env")
	file := writeFile(t, "source_option:\n  a: file\n  b: file\n  white-table-list: \"s.a,s.b\"\n")
	cmd, err := runFlags(t, "--config", file, "--source-option", "c=flag")
	if err != nil {
		t.Fatal(err)
	}
	if got := cmd.Flags().Lookup("map").Value.String(); got != "[a.*=x_*,b.*=y_*]" {
		t.Errorf("DECANT_MAP: %s", got)
	}
	got, _ := cmd.Flags().GetStringToString("source-option")
	want := map[string]string{"a": "file", "b": "env", "c": "flag", "white-table-list": "s.a,s.b"}
	if len(got) != len(want) {
		t.Errorf("source options %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("source option %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

// The file's long source form still gives source, source_kind and
// source_option, and a key given both ways is refused.
func TestSourceLongForm(t *testing.T) {
	file := writeFile(t, "source:\n  dsn: gaussdb://u@h/db\n  kind: opengauss\n  options:\n    decode-style: b\n")
	cmd, err := runFlags(t, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	fs := cmd.Flags()
	if fs.Lookup("source").Value.String() != "gaussdb://u@h/db" || fs.Lookup("source-kind").Value.String() != "opengauss" || fs.Lookup("source-option").Value.String() != "[decode-style=b]" {
		t.Errorf("long form: %s %s %s", fs.Lookup("source").Value, fs.Lookup("source-kind").Value, fs.Lookup("source-option").Value)
	}
	file = writeFile(t, "source:\n  dsn: gaussdb://u@h/db\n  kind: opengauss\nsource_kind: gaussdb\n")
	if _, err := runFlags(t, "--config", file); err == nil || !strings.Contains(err.Error(), "line 4: source_kind is already given on line 3") {
		t.Errorf("source.kind and source_kind: %v", err)
	}
}

// Mistakes in the file name the file, the line and the key in words.
func TestFileErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"source: postgres://h/db\ntarget: postgres://h/db\n\npipline: x\n", `line 4: unknown key "pipline" (did you mean "pipeline"?)`},
		{"slot-wait: 5s\n", `line 1: unknown key "slot-wait" (did you mean "slot_wait"?)`},
		{"frobnicate: 1\n", `line 1: unknown key "frobnicate" (the README's configuration table lists the keys)`},
		{"slot_wait: soon\n", `line 1: invalid slot_wait "soon": want a duration like 30s or 5m`},
		{"catch_up: maybe\n", `line 1: invalid catch_up "maybe": want true or false`},
		{"pipeline: [a, b]\n", `line 1: pipeline takes one value, not a list or a mapping`},
		{"pipeline: a\npipeline: b\n", `line 2: pipeline is already given on line 1`},
		{"source:\n  url: x\n", `line 2: unknown key "url" under source (want dsn, kind or options)`},
		{"columns:\n  public.t:\n    renam: {a: b}\n", `line 3: unknown key "renam" under columns public.t (want rename or exclude)`},
		{"columns:\n  public.t:\n    exclude: a\n", `line 3: columns public.t exclude: want a list`},
		{"- a\n- b\n", `line 1: want key: value lines`},
		{"pipeline: a\n  target: b\n", `line 2: mapping values are not allowed`},
	} {
		file := writeFile(t, c.text)
		_, err := runFlags(t, "--config", file)
		if err == nil || !strings.HasPrefix(err.Error(), file+" ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v\nwant %s", c.text, err, c.want)
			continue
		}
		if !errors.As(err, new(usageError)) || strings.Contains(err.Error(), "main.") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v: want one line, a usage error, no Go type names", c.text, err)
		}
	}
	t.Setenv("DECANT_SLOT_WAIT", "soon")
	if _, err := runFlags(t); err == nil || err.Error() != `DECANT_SLOT_WAIT: invalid value "soon": want a duration like 30s or 5m` {
		t.Errorf("bad environment value: %v", err)
	}
}

// One file serves every command: a key of another command is no error,
// and a value from the file is not "given" to checks that refuse flags
// typed by hand (init's --jobs without --copy).
func TestSharedFile(t *testing.T) {
	file := writeFile(t, "source: postgres://h/db\ntarget: postgres://h/db\nslot_wait: 5s\njobs: 4\nspan_rows: 10\ncolumns:\n  public.t:\n    rename: {a: b}\n    exclude: [c]\n")
	root := newRoot()
	cmd, _, _ := root.Find([]string{"init"})
	if err := cmd.ParseFlags([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	fromFile, err := settle(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if r := fromFile.columns["public.t"]; r.Rename["a"] != "b" || len(r.Exclude) != 1 || r.Exclude[0] != "c" {
		t.Errorf("columns: %+v", fromFile.columns)
	}
	if _, err := (initOptions{}).options(cmd); err != nil {
		t.Errorf("jobs from the file refused as if given: %v", err)
	}
	code, msg := execute(t, "status", "--config", file)
	if code != 1 || !strings.Contains(msg, "connect") {
		t.Errorf("status with keys of other commands: exit %d, %s", code, msg)
	}
}

// The README's configuration section names every flag and its
// environment variable, except hidden ones (test knobs).
func TestReadmeListsEveryFlag(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	start := strings.Index(readme, "### Configuration")
	end := strings.Index(readme[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("README has no configuration section")
	}
	section := readme[start : start+1+end]
	for _, c := range commandsOf(newRoot()) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if configurable(fl.Name) && !fl.Hidden && !strings.Contains(section, "`--"+fl.Name+"`") {
				t.Errorf("README's configuration section lacks --%s (%s)", fl.Name, c.Name())
			}
		})
	}
}
