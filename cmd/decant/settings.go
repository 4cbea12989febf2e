package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every flag of every command can also come from the environment and
// from the --config file, by one naming rule: flag --slot-wait is file
// key slot_wait and environment variable DECANT_SLOT_WAIT. A flag given
// on the command line beats the environment, which beats the file, which
// beats the flag's default. The one exception to "the winner takes all"
// is a flag of name=value pairs (--source-option): the layers add up,
// and per name the same order decides.
//
// Values from the environment and the file are set on the flags
// themselves, so every command reads one set of variables; they are not
// marked as changed, so a check that refuses a flag given by hand
// (init's --jobs without --copy) leaves a shared file alone.

// envPrefix starts the environment variable of every flag.
const envPrefix = "DECANT_"

// fileKey is a flag's key in the --config file.
func fileKey(flag string) string { return strings.ReplaceAll(flag, "-", "_") }

// envName is a flag's environment variable.
func envName(flag string) string { return envPrefix + strings.ToUpper(fileKey(flag)) }

// configurable reports whether a flag takes its value from the
// environment and the file too: all but --config itself (DECANT_CONFIG
// names the file) and cobra's --help and --version.
func configurable(flag string) bool {
	return flag != "config" && flag != "help" && flag != "version"
}

// settle gives every flag of cmd its value from the command line, the
// environment or the --config file (--config, else DECANT_CONFIG), and
// returns what only the file can say.
func settle(cmd *cobra.Command) (fileSettings, error) {
	path := os.Getenv(envPrefix + "CONFIG")
	if fl := cmd.Flags().Lookup("config"); fl != nil && fl.Changed {
		path = fl.Value.String()
	}
	var file fileSettings
	if path != "" {
		var err error
		if file, err = readSettings(path, knownKeys(cmd.Root())); err != nil {
			return file, err
		}
	}
	var err error
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if err == nil && configurable(fl.Name) {
			err = settleFlag(cmd.Flags(), fl, file)
		}
	})
	return file, err
}

// settleFlag sets one flag from the environment or the file unless the
// command line gave it.
func settleFlag(fs *pflag.FlagSet, fl *pflag.Flag, file fileSettings) error {
	if fl.Value.Type() == "stringToString" {
		return mergePairs(fs, fl, file)
	}
	if fl.Changed {
		return nil
	}
	if v, ok := lookupEnv(fl.Name); ok {
		return setFromEnv(fl, v)
	}
	if e, ok := file.values[fl.Name]; ok {
		return file.set(fl, e)
	}
	return nil
}

// mergePairs adds up a flag of name=value pairs: the file's, then the
// environment's, then the command line's again, so that per name the
// command line wins.
func mergePairs(fs *pflag.FlagSet, fl *pflag.Flag, file fileSettings) error {
	var given map[string]string
	if fl.Changed {
		var err error
		if given, err = fs.GetStringToString(fl.Name); err != nil {
			return err
		}
	}
	if e, ok := file.values[fl.Name]; ok {
		if err := file.set(fl, e); err != nil {
			return err
		}
	}
	if v, ok := lookupEnv(fl.Name); ok {
		if err := setFromEnv(fl, v); err != nil {
			return err
		}
	}
	for k, v := range given {
		if err := fl.Value.Set(pairText(k, v)); err != nil {
			return err
		}
	}
	return nil
}

// lookupEnv reads a flag's environment variable; set but empty counts as
// not set, so that an empty assignment in a unit file disables nothing.
func lookupEnv(flag string) (string, bool) {
	v, ok := os.LookupEnv(envName(flag))
	return v, ok && v != ""
}

// setFromEnv sets a flag from its environment variable. A repeatable
// flag (--map) takes a comma-separated list there.
func setFromEnv(fl *pflag.Flag, v string) error {
	values := []string{v}
	if fl.Value.Type() == "stringArray" {
		values = strings.Split(v, ",")
	}
	for _, s := range values {
		if err := fl.Value.Set(strings.TrimSpace(s)); err != nil {
			return usagef("%s: invalid value %q: %s", envName(fl.Name), v, valueHint(fl, err))
		}
	}
	return nil
}

// valueHint says what a flag of fl's type takes, after a value it
// refused.
func valueHint(fl *pflag.Flag, err error) string {
	switch fl.Value.Type() {
	case "bool":
		return "want true or false"
	case "int", "int64":
		return "want a whole number"
	case "duration":
		return "want a duration like 30s or 5m"
	}
	return err.Error()
}

// pairText is name=value as a pairs flag parses it: pflag reads a text
// with several "=" as CSV, so such a pair is quoted.
func pairText(k, v string) string {
	s := k + "=" + v
	if strings.Count(s, "=") > 1 {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// knownKeys is every key the --config file may hold: the file keys of
// every command's flags (one file serves all commands, each taking the
// keys it has flags for), columns, webhooks and conflicts.
func knownKeys(root *cobra.Command) map[string]bool {
	keys := map[string]bool{"columns": true, "webhooks": true, "conflicts": true}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if configurable(fl.Name) {
				keys[fileKey(fl.Name)] = true
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return keys
}

// suggest is the known key closest to an unknown one, if one is close.
func suggest(key string, known map[string]bool) string {
	best, bestDist := "", 3
	for k := range known {
		if d := editDistance(key, k); d < bestDist || (d == bestDist && best != "" && k < best) {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// unknownKey is the error for a key no command has.
func unknownKey(path string, line int, key string, known map[string]bool) error {
	if s := suggest(key, known); s != "" {
		return usagef("%s line %d: unknown key %q (did you mean %q?)", path, line, key, s)
	}
	return usagef("%s line %d: unknown key %q (the README's configuration table lists the keys)", path, line, key)
}
