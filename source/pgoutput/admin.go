package pgoutput

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// CheckServer verifies that the source can serve logical replication to
// this slot: wal_level, the REPLICATION privilege and a free slot.
func CheckServer(ctx context.Context, conn *pgx.Conn, slot string) error {
	var walLevel, user string
	var maxSlots, usedSlots int
	var canReplicate, slotExists bool
	err := conn.QueryRow(ctx, `SELECT current_setting('wal_level'), current_user,
		current_setting('max_replication_slots')::int,
		(SELECT count(*) FROM pg_replication_slots)::int,
		(SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user),
		EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)`, slot).
		Scan(&walLevel, &user, &maxSlots, &usedSlots, &canReplicate, &slotExists)
	if err != nil {
		return fmt.Errorf("check source settings: %w", err)
	}
	if walLevel != "logical" {
		return setupf("source wal_level is %q; set wal_level = logical in postgresql.conf and restart the source server", walLevel)
	}
	if !canReplicate {
		return setupf("source user %q lacks the REPLICATION attribute; run ALTER ROLE %s REPLICATION on the source", user, pgsession.QuoteIdent(user))
	}
	if !slotExists && usedSlots >= maxSlots {
		return setupf("no free replication slot on the source (%d of max_replication_slots = %d in use); raise max_replication_slots or drop an unused slot", usedSlots, maxSlots)
	}
	return nil
}

// SelectTables lists the ordinary and partitioned tables the filter
// selects (partitions are replicated through their root), ordered by name.
// HasPK counts an immediate primary key only: PostgreSQL never takes a
// DEFERRABLE one as the replica identity.
func SelectTables(ctx context.Context, conn *pgx.Conn, filter source.TableFilter) ([]source.Table, error) {
	rows, err := conn.Query(ctx, `SELECT n.nspname, c.relname, c.relreplident::text,
			EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary AND i.indimmediate)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relpersistence = 'p'
		ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("list source tables: %w", err)
	}
	var out []source.Table
	for rows.Next() {
		var t source.Table
		var ident string
		if err := rows.Scan(&t.Name.Schema, &t.Name.Name, &ident, &t.HasPK); err != nil {
			return nil, fmt.Errorf("list source tables: %w", err)
		}
		if ident != "" {
			t.Identity = source.Identity(ident[0])
		}
		if filter.Match(t.Name.Schema, t.Name.Name) {
			out = append(out, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list source tables: %w", err)
	}
	return out, nil
}

// EnsurePublication creates the publication for tables, or brings an
// existing one to exactly that set. It returns the tables it added and
// removed (both empty when nothing changed).
func EnsurePublication(ctx context.Context, conn *pgx.Conn, name string, tables []source.TableName) (added, removed []source.TableName, err error) {
	if len(tables) == 0 {
		return nil, nil, setupf("no source table matches --tables; nothing to replicate")
	}
	list := make([]string, len(tables))
	for i, t := range tables {
		list[i] = pgsession.QuoteTable(t)
	}
	current, exists, err := publicationTables(ctx, conn, name)
	if err != nil {
		return nil, nil, err
	}
	if !exists {
		_, err := conn.Exec(ctx, fmt.Sprintf("CREATE PUBLICATION %s FOR TABLE %s WITH (publish_via_partition_root = true)",
			pgsession.QuoteIdent(name), strings.Join(list, ", ")))
		if err != nil {
			return nil, nil, fmt.Errorf("create publication %s: %w", name, err)
		}
		return tables, nil, nil
	}
	for _, t := range tables {
		if !slices.Contains(current, t) {
			added = append(added, t)
		}
	}
	for _, t := range current {
		if !slices.Contains(tables, t) {
			removed = append(removed, t)
		}
	}
	if len(added)+len(removed) == 0 {
		return nil, nil, nil
	}
	_, err = conn.Exec(ctx, fmt.Sprintf("ALTER PUBLICATION %s SET TABLE %s", pgsession.QuoteIdent(name), strings.Join(list, ", ")))
	if err != nil {
		return nil, nil, fmt.Errorf("alter publication %s: %w", name, err)
	}
	return added, removed, nil
}

func publicationTables(ctx context.Context, conn *pgx.Conn, name string) (tables []source.TableName, exists bool, err error) {
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)`, name).Scan(&exists)
	if err != nil || !exists {
		return nil, false, wrapErr("read publication "+name, err)
	}
	rows, err := conn.Query(ctx, `SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1, 2`, name)
	if err != nil {
		return nil, false, fmt.Errorf("read publication %s: %w", name, err)
	}
	for rows.Next() {
		var t source.TableName
		if err := rows.Scan(&t.Schema, &t.Name); err != nil {
			return nil, false, fmt.Errorf("read publication %s: %w", name, err)
		}
		tables = append(tables, t)
	}
	return tables, true, wrapErr("read publication "+name, rows.Err())
}

// PublicationTables lists the tables of an existing publication; it fails
// with ErrSetup when the publication is missing.
func PublicationTables(ctx context.Context, conn *pgx.Conn, name string) ([]source.TableName, error) {
	tables, exists, err := publicationTables(ctx, conn, name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, setupf("publication %s does not exist on the source; run decant init", name)
	}
	return tables, nil
}

// EnsureSlot creates the pgoutput slot, or finds the existing one. It
// returns the slot's consistent point (for an existing slot, the position
// it has confirmed) and whether it created it.
func EnsureSlot(ctx context.Context, conn *pgx.Conn, slot string) (source.LSN, bool, error) {
	var plugin, db string
	var confirmed source.LSN
	err := conn.QueryRow(ctx, `SELECT plugin, database, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1`, slot).
		Scan(&plugin, &db, &confirmed)
	switch {
	case err == nil:
		var cur string
		if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&cur); err != nil {
			return 0, false, fmt.Errorf("read source database: %w", err)
		}
		if plugin != "pgoutput" || db != cur {
			return 0, false, setupf("slot %s already exists for plugin %s in database %s; choose another --pipeline or drop that slot", slot, plugin, db)
		}
		return confirmed, false, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return 0, false, fmt.Errorf("read slot %s: %w", slot, err)
	}
	// Two-phase decoding (PostgreSQL 15 and later, protocol 3) is a
	// property of the slot, set when it is made: prepared transactions
	// then arrive at PREPARE and are held until COMMIT PREPARED.
	var lsn source.LSN
	err = conn.QueryRow(ctx, `SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput',
		twophase => current_setting('server_version_num')::int >= 150000)`, slot).Scan(&lsn)
	if err != nil {
		return 0, false, fmt.Errorf("create slot %s: %w", slot, err)
	}
	return lsn, true, nil
}

// ReadSlot reads the slot's state and the source's current WAL position.
func ReadSlot(ctx context.Context, conn *pgx.Conn, slot string) (source.SlotStatus, error) {
	var s source.SlotStatus
	err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&s.Current)
	if err != nil {
		return s, fmt.Errorf("read source WAL position: %w", err)
	}
	var pid *int
	var lag *float64
	var walStatus *string
	err = conn.QueryRow(ctx, `SELECT s.active, s.active_pid, s.confirmed_flush_lsn::text, s.restart_lsn::text,
			coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), s.restart_lsn)::bigint, 0), s.wal_status,
			(SELECT extract(epoch FROM r.flush_lag)::float8 FROM pg_stat_replication r WHERE r.pid = s.active_pid)
		FROM pg_replication_slots s WHERE s.slot_name = $1`, slot).
		Scan(&s.Active, &pid, &s.Confirmed, &s.Restart, &s.Retained, &walStatus, &lag)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read slot %s: %w", slot, err)
	}
	s.Exists = true
	if pid != nil {
		s.ActivePID = *pid
	}
	if walStatus != nil {
		s.WALStatus = *walStatus
	}
	if lag != nil {
		s.FlushLag, s.HasFlushLag = time.Duration(*lag*float64(time.Second)), true
	}
	return s, nil
}

// DropSlot drops the slot if it exists. It refuses an active slot: a
// decant run is still using it.
func DropSlot(ctx context.Context, conn *pgx.Conn, slot string) (bool, error) {
	s, err := ReadSlot(ctx, conn, slot)
	if err != nil || !s.Exists {
		return false, err
	}
	if s.Active {
		return false, setupf("slot %s is in use by process %d; stop decant run first", slot, s.ActivePID)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, slot); err != nil {
		return false, fmt.Errorf("drop slot %s: %w", slot, err)
	}
	return true, nil
}

// DropPublication drops the publication if it exists.
func DropPublication(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
	_, exists, err := publicationTables(ctx, conn, name)
	if err != nil || !exists {
		return false, err
	}
	if _, err := conn.Exec(ctx, "DROP PUBLICATION "+pgsession.QuoteIdent(name)); err != nil {
		return false, fmt.Errorf("drop publication %s: %w", name, err)
	}
	return true, nil
}

func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Relation describes a selected source table as pgoutput will announce it:
// columns in attribute order without dropped and generated ones, each
// marked Key when it belongs to the replica identity (the primary key, the
// replica identity index, or every column for FULL).
func Relation(ctx context.Context, conn *pgx.Conn, t source.Table) (*source.Relation, error) {
	rows, err := conn.Query(ctx, `SELECT a.attname, a.atttypid, a.atttypmod,
			c.relreplident = 'f' OR EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND a.attnum = ANY (i.indkey)
				AND CASE c.relreplident WHEN 'i' THEN i.indisreplident WHEN 'd' THEN i.indisprimary AND i.indimmediate ELSE false END)
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		ORDER BY a.attnum`, t.Name.Schema, t.Name.Name)
	if err != nil {
		return nil, fmt.Errorf("read columns of source table %s: %w", t.Name, err)
	}
	rel := &source.Relation{Schema: t.Name.Schema, Name: t.Name.Name, Identity: t.Identity}
	for rows.Next() {
		var c source.Column
		if err := rows.Scan(&c.Name, &c.Type, &c.TypeMod, &c.Key); err != nil {
			return nil, fmt.Errorf("read columns of source table %s: %w", t.Name, err)
		}
		rel.Columns = append(rel.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read columns of source table %s: %w", t.Name, err)
	}
	return rel, describeUserTypes(ctx, conn, rel)
}

// describeUserTypes sets Info on the columns of user-defined types, which
// a target of another kind needs to map (enum labels, composite fields).
func describeUserTypes(ctx context.Context, conn *pgx.Conn, rel *source.Relation) error {
	var oids []uint32
	for _, c := range rel.Columns {
		if c.Type >= firstNormalOID {
			oids = append(oids, c.Type)
		}
	}
	if len(oids) == 0 {
		return nil
	}
	types, err := ResolveTypes(ctx, conn, oids)
	if err != nil {
		return fmt.Errorf("describe types of source table %s: %w", rel.Table(), err)
	}
	for i := range rel.Columns {
		if c := &rel.Columns[i]; c.Type >= firstNormalOID {
			c.Info = types[c.Type]
		}
	}
	return nil
}
