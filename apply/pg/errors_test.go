package pg

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/source"
)

// A described target error is retried exactly when its SQLSTATE says a
// new session or a new attempt of the transaction can succeed.
func TestDescribeRetryable(t *testing.T) {
	for code, want := range map[string]bool{
		"40001": true,  // serialization_failure
		"40P01": true,  // deadlock_detected
		"55P03": true,  // lock_not_available
		"55006": true,  // object_in_use
		"08006": true,  // connection_failure
		"53300": true,  // too_many_connections
		"57P01": true,  // admin_shutdown
		"57014": false, // query_canceled: decant stopping
		"23505": false, // unique_violation
		"23503": false, // foreign_key_violation
		"22P02": false, // invalid_text_representation
		"42P01": false, // undefined_table
		"42703": false, // undefined_column
		"28P01": false, // invalid_password
	} {
		err := &apply.Error{Op: "insert", Err: describe(fmt.Errorf("exec: %w", &pgconn.PgError{Code: code, Message: "m"}))}
		if got := apply.Transient(err); got != want {
			t.Errorf("Transient(described %s) = %v, want %v", code, got, want)
		}
	}
}

// What the described error wraps may know better than its SQLSTATE.
func TestDescribeKeepsInnerRetryable(t *testing.T) {
	timeout := &source.TimeoutError{Peer: "target", Op: "COPY", Timeout: time.Second, Err: &pgconn.PgError{Code: "57014", Message: "canceling statement"}}
	if !apply.Transient(describe(timeout)) {
		t.Error("a timed out round trip described is not transient")
	}
}

func TestDescribeText(t *testing.T) {
	err := describe(&pgconn.PgError{Code: "22P02", Message: `invalid input syntax for type integer: "secret-42"`, Detail: "Key (id)=(5)"})
	if got, want := err.Error(), `invalid input syntax for type integer: "…" (SQLSTATE 22P02)`; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	err = describe(&pgconn.PgError{Code: "23505", Message: `duplicate key value violates unique constraint "t_pkey"`, Detail: "Key (id)=(5) already exists."})
	if got, want := err.Error(), `duplicate key value violates unique constraint "t_pkey" (SQLSTATE 23505)`; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Error("the described error does not unwrap to the server's")
	}
	plain := errors.New("no server error")
	if describe(plain) != plain {
		t.Error("describe changed an error without a server error")
	}
}

func TestClassify(t *testing.T) {
	deadlock := fmt.Errorf("lock source tables: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"})
	got := Classify(deadlock)
	if !apply.Transient(got) || got.Error() != deadlock.Error() {
		t.Errorf("Classify(deadlock) = %v (transient %v), want the same text, transient", got, apply.Transient(got))
	}
	if !errors.Is(got, deadlock) {
		t.Error("Classify does not unwrap to its input")
	}
	if apply.Transient(Classify(&pgconn.PgError{Code: "23505"})) {
		t.Error("a unique violation is classified transient")
	}
	timeout := &source.TimeoutError{Peer: "source", Op: "COPY", Timeout: time.Second, Err: &pgconn.PgError{Code: "23505"}}
	if Classify(timeout) != error(timeout) {
		t.Error("Classify wrapped an error that knows whether it is retryable")
	}
	plain := errors.New("plain")
	if Classify(plain) != plain || Classify(nil) != nil {
		t.Error("Classify changed an error without a server error")
	}
}

func TestMissing(t *testing.T) {
	for code, want := range map[string]bool{"42P01": true, "3F000": true, "42703": false, "": false} {
		var err error = errors.New("x")
		if code != "" {
			err = fmt.Errorf("read: %w", &pgconn.PgError{Code: code})
		}
		if got := Missing(err); got != want {
			t.Errorf("Missing(%q) = %v, want %v", code, got, want)
		}
	}
	if !Missing(describe(&pgconn.PgError{Code: "42P01", Message: "relation does not exist"})) {
		t.Error("a described undefined_table is not Missing")
	}
}
