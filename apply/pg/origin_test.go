package pg

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestOriginError(t *testing.T) {
	tests := []struct {
		code, want string
	}{
		{"42501", "must be a superuser, or be granted EXECUTE"},
		{"53400", "raise max_replication_slots"},
		{"55000", "max_replication_slots of at least 1"},
		{"XX000", "target: set up replication origin decant_orders: "},
	}
	for _, tt := range tests {
		err := originError("decant_orders", "orders", &pgconn.PgError{Code: tt.code, Message: "server says"})
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "decant_orders") {
			t.Errorf("SQLSTATE %s: %q lacks %q", tt.code, err, tt.want)
		}
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Errorf("SQLSTATE %s: the server's error is not wrapped", tt.code)
		}
	}
	if !originInUse(&pgconn.PgError{Code: "55006"}) || originInUse(&pgconn.PgError{Code: "42501"}) || originInUse(nil) {
		t.Error("originInUse is not exactly SQLSTATE 55006")
	}
}

func TestOriginName(t *testing.T) {
	if got := OriginName("orders"); got != "decant_orders" {
		t.Errorf("OriginName = %q", got)
	}
}
