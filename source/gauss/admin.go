package gauss

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Admin is one pipeline's setup session on the source: its slot, named
// after the pipeline, and the table definitions its decoding options
// select. apply/migrate's workflows take it through their GaussSource
// interface.
type Admin struct {
	conn *pgconn.PgConn
	dsn  string
	slot string
	opts Options
}

// OpenAdmin connects (as a replication session: IDENTIFY_SYSTEM and the
// slot functions work there) for the pipeline's slot, decoded with opts.
func OpenAdmin(ctx context.Context, dsn, slot string, opts Options) (*Admin, error) {
	cc, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cc.Replication = true
	conn, err := Connect(ctx, cc)
	if err != nil {
		return nil, err
	}
	return &Admin{conn: conn, dsn: dsn, slot: slot, opts: opts}, nil
}

// Close ends the session.
func (a *Admin) Close(ctx context.Context) { pgsession.Close(ctx, a.conn) }

// Slot reads the slot and the source's identity.
func (a *Admin) Slot(ctx context.Context) (source.SlotStatus, error) {
	srv, err := identify(ctx, a.conn)
	if err != nil {
		return source.SlotStatus{}, err
	}
	s, ok, err := readSlot(ctx, a.conn, a.slot)
	if err != nil {
		return source.SlotStatus{}, err
	}
	return source.SlotStatus{Exists: ok, Active: s.active, Plugin: s.plugin, Confirmed: s.confirmed, ConfirmedCSN: s.confirmedCSN,
		Current: srv.WALEnd, SystemID: srv.SystemID}, nil
}

// DescribeTables reads the definitions of the source tables the filter
// selects, with the rowno column where the options enable it
// (DescribeTables).
func (a *Admin) DescribeTables(ctx context.Context, filter source.TableFilter) ([]*source.TableDef, error) {
	return DescribeTables(ctx, a.dsn, filter, a.opts.Rowno())
}

// Plugin is the output plugin decant creates slots with: mppdb_decoding,
// which both GaussDB and openGauss have and which serves serial and
// parallel decoding (decode-style picks the parallel format).
const Plugin = "mppdb_decoding"

// EnsureSlot creates the slot unless it exists. A CSN-ordered slot
// (output_order 1) is created with pg_create_logical_replication_slot's
// third argument, which only GaussDB has (openGauss's takes two:
// src/common/backend/catalog/builtin_funcs.ini, and CheckServer refuses
// output-order 1 there). It returns the slot's position:
// the LSN it starts at, or for a CSN slot the confirmed CSN.
func (a *Admin) EnsureSlot(ctx context.Context) (source.SlotStatus, bool, error) {
	slot, csnOrder := a.slot, a.opts.CSNOrder()
	v, err := server(ctx, a.conn)
	if err != nil {
		return source.SlotStatus{}, false, err
	}
	if err := a.opts.CheckServer(v); err != nil {
		return source.SlotStatus{}, false, err
	}
	s, err := a.Slot(ctx)
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
func (a *Admin) DropSlot(ctx context.Context) (bool, error) {
	slot := a.slot
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
