package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/spf13/cobra"
)

// jsonLogged marks the final error of a command that logs JSON lines: it
// is printed as one more of them.
type jsonLogged struct{ err error }

func (e jsonLogged) Error() string { return e.err.Error() }
func (e jsonLogged) Unwrap() error { return e.err }

// asLogged marks err for JSON when the command that failed logs JSON
// lines: --log-json, else DECANT_LOG_JSON or log_json in the file. When
// the configuration itself is what failed, only the command line and the
// environment can say so.
func asLogged(cmd *cobra.Command, err error) error {
	if err == nil || cmd == nil {
		return err
	}
	fl := cmd.Flags().Lookup("log-json")
	if fl == nil {
		return err
	}
	on := fl.Value.String() == "true"
	if v, ok := lookupEnv(fl.Name); ok && !fl.Changed {
		fromEnv, perr := strconv.ParseBool(v)
		on = on || (perr == nil && fromEnv)
	}
	if on {
		return jsonLogged{err}
	}
	return err
}

// printError prints the final error: a JSON log record with the keys of
// every other (time, level, msg) under --log-json, else one line of
// text.
func printError(w io.Writer, err error, msg string) {
	if errors.As(err, new(jsonLogged)) {
		slog.New(slog.NewJSONHandler(w, nil)).Error(msg)
		return
	}
	fmt.Fprintf(w, "decant: error: %s\n", msg)
}
