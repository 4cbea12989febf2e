package gauss

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// SlotState is what init, status and drop need to know about a slot.
type SlotState struct {
	Exists       bool
	Active       bool
	Plugin       string
	Confirmed    source.LSN
	ConfirmedCSN uint64
	Current      source.LSN // the source's WAL end (IDENTIFY_SYSTEM)
	SystemID     string
}

// Admin is a SQL session on the source for setup work.
type Admin struct{ conn *pgconn.PgConn }

// OpenAdmin connects (as a replication session: IDENTIFY_SYSTEM and the
// slot functions work there).
func OpenAdmin(ctx context.Context, dsn string) (*Admin, error) {
	cc, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cc.Replication = true
	conn, err := Connect(ctx, cc)
	if err != nil {
		return nil, err
	}
	return &Admin{conn: conn}, nil
}

// Close ends the session.
func (a *Admin) Close(ctx context.Context) { pgsession.Close(ctx, a.conn) }

// Slot reads the slot and the source's identity.
func (a *Admin) Slot(ctx context.Context, slot string) (SlotState, error) {
	srv, err := identify(ctx, a.conn)
	if err != nil {
		return SlotState{}, err
	}
	s, ok, err := readSlot(ctx, a.conn, slot)
	if err != nil {
		return SlotState{}, err
	}
	return SlotState{Exists: ok, Active: s.active, Plugin: s.plugin, Confirmed: s.confirmed, ConfirmedCSN: s.confirmedCSN,
		Current: srv.WALEnd, SystemID: srv.SystemID}, nil
}

// Plugin is the output plugin decant creates slots with: mppdb_decoding,
// which both GaussDB and openGauss have and which serves serial and
// parallel decoding (decode-style picks the parallel format).
const Plugin = "mppdb_decoding"

// EnsureSlot creates the slot unless it exists. A CSN-ordered slot
// (output_order 1) is created with pg_create_logical_replication_slot's
// third argument, which only GaussDB has. It returns the slot's position:
// the LSN it starts at, or for a CSN slot the confirmed CSN.
func (a *Admin) EnsureSlot(ctx context.Context, slot string, csnOrder bool) (SlotState, bool, error) {
	s, err := a.Slot(ctx, slot)
	if err != nil || s.Exists {
		return s, false, err
	}
	sql := fmt.Sprintf("SELECT * FROM pg_create_logical_replication_slot(%s, %s)", quoteLiteral(slot), quoteLiteral(Plugin))
	if csnOrder {
		sql = fmt.Sprintf("SELECT * FROM pg_create_logical_replication_slot(%s, %s, 1)", quoteLiteral(slot), quoteLiteral(Plugin))
	}
	row, err := queryRow(ctx, a.conn, sql)
	if err != nil || len(row) < 2 {
		return s, false, fmt.Errorf("create slot %s: %w", slot, errOr(err, "no answer"))
	}
	s.Exists, s.Plugin = true, Plugin
	if csnOrder {
		if s.ConfirmedCSN, err = strconv.ParseUint(row[1], 10, 64); err != nil {
			return s, false, fmt.Errorf("create slot %s: CSN %q: %w", slot, row[1], err)
		}
		return s, true, nil
	}
	if s.Confirmed, err = source.ParseLSN(row[1]); err != nil {
		return s, false, fmt.Errorf("create slot %s: %w", slot, err)
	}
	return s, true, nil
}

// DropSlot drops the slot if it exists; an active slot is refused.
func (a *Admin) DropSlot(ctx context.Context, slot string) (bool, error) {
	s, ok, err := readSlot(ctx, a.conn, slot)
	if err != nil || !ok {
		return false, err
	}
	if s.active {
		return false, setupf("slot %s is in use; stop decant run first", slot)
	}
	if _, err := queryRow(ctx, a.conn, fmt.Sprintf("SELECT pg_drop_replication_slot(%s)", quoteLiteral(slot))); err != nil {
		return false, fmt.Errorf("drop slot %s: %w", slot, err)
	}
	return true, nil
}
