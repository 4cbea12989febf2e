package apply

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// A server error no writer classified (a source reader's, a target's
// outside a statement) is retried when it says the session ended for a
// passing reason; what a transaction's statements meet is the writer's to
// classify (apply/pg), and a retry is not assumed.
func TestTransientUnclassifiedServerError(t *testing.T) {
	for code, want := range map[string]bool{
		"57P01": true,  // admin_shutdown: the source restarts
		"57P03": true,  // cannot_connect_now: still starting
		"08006": true,  // connection_failure
		"55006": true,  // object_in_use: the slot is held
		"57014": false, // query_canceled
		"28P01": false, // invalid_password
		"55000": false, // object_not_in_prerequisite_state: a lost slot
		"40P01": false, // deadlock_detected: apply/pg marks its own
	} {
		err := fmt.Errorf("source replication stream: %w", &pgconn.PgError{Code: code})
		if got := Transient(err); got != want {
			t.Errorf("Transient(%s) = %v, want %v", code, got, want)
		}
	}
	// A connect that failed without a server's answer stays transient.
	refused := &pgconn.ConnectError{Config: &pgconn.Config{}}
	if !Transient(refused) {
		t.Error("a connect error without a server error is not transient")
	}
}

func TestSlotBusyServerError(t *testing.T) {
	if !slotBusy(fmt.Errorf("start replication: %w", &pgconn.PgError{Code: "55006"})) {
		t.Error("object_in_use is not a busy slot")
	}
	if slotBusy(&pgconn.PgError{Code: "55000"}) {
		t.Error("another server error is a busy slot")
	}
}

func TestNeedsPersonAndGaveUp(t *testing.T) {
	refused := &Error{Op: "insert", Xid: 7, Commit: 0x100, Err: errors.New("duplicate key")}
	lost := &net.OpError{Op: "read", Err: syscall.ECONNRESET}
	cases := []struct {
		name           string
		err            error
		person, gaveUp bool
	}{
		{"a change refused for good", refused, true, false},
		{"a connection lost", lost, false, false},
		{"a change that failed on a lost connection", &Error{Op: "insert", Err: lost}, false, false},
		{"retries given up", &GaveUpError{Err: lost}, false, true},
		{"nothing", nil, false, false},
	}
	for _, c := range cases {
		if got := NeedsPerson(c.err); got != c.person {
			t.Errorf("%s: NeedsPerson %v, want %v", c.name, got, c.person)
		}
		if got := GaveUp(c.err); got != c.gaveUp {
			t.Errorf("%s: GaveUp %v, want %v", c.name, got, c.gaveUp)
		}
	}
}
