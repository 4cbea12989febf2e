package pgsession

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestTransient(t *testing.T) {
	for code, want := range map[string]bool{
		"08006": true,  // connection_failure
		"08P01": true,  // protocol_violation
		"53300": true,  // too_many_connections
		"53100": true,  // disk_full
		"57P01": true,  // admin_shutdown
		"57P03": true,  // cannot_connect_now
		"55006": true,  // object_in_use: the slot
		"57014": false, // query_canceled: decant stopping
		"40001": false, // serialization_failure: the writer's to classify
		"40P01": false, // deadlock_detected: likewise
		"28P01": false, // invalid_password
		"42P01": false, // undefined_table
		"22023": false, // invalid_parameter_value
		"55000": false, // object_not_in_prerequisite_state (a lost slot)
		"":      false,
		"08":    false,
	} {
		if got := Transient(code); got != want {
			t.Errorf("Transient(%q) = %v, want %v", code, got, want)
		}
	}
}

func TestCode(t *testing.T) {
	err := fmt.Errorf("read: %w", &pgconn.PgError{Code: "42P01"})
	if got := Code(err); got != "42P01" {
		t.Errorf("Code = %q, want 42P01", got)
	}
	if got := Code(errors.New("plain")); got != "" {
		t.Errorf("Code of a plain error = %q", got)
	}
	if got := Code(nil); got != "" {
		t.Errorf("Code(nil) = %q", got)
	}
}
