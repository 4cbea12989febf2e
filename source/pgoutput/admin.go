package pgoutput

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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

// AppendOnlySuffix ends the name of a pipeline's append-only publication
// (pipeline names cannot end in it, so no pipeline's main publication
// takes another's append-only name).
const AppendOnlySuffix = "_append_only"

// AppendOnlyPublication names the pipeline's second publication, of its
// append-only tables: publish = 'insert, truncate', so that a keyless
// table's UPDATEs and DELETEs, which PostgreSQL refuses on a table
// published for them without a replica identity, keep working on the
// source; they are not replicated.
func AppendOnlyPublication(pipeline string) string { return pipeline + AppendOnlySuffix }

// appendOnlyPublish is the append-only publication's publish option.
const appendOnlyPublish = "insert, truncate"

// querier is a session or a transaction on it.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// EnsurePublications creates the pipeline's two publications, or brings
// existing ones to exactly want's tables, in one transaction: a table
// moving between them is never in neither. Either may hold no table.
//
// The append-only publication is made only together with the pipeline,
// before its slot: pgoutput (before PostgreSQL 18) looks the publications
// it streams for up as of each change it decodes, and fails on changes
// older than one of them. A pipeline whose slot already exists without
// that publication (made by an older decant) keeps having none; asking
// it for append-only tables is refused with what to do.
func EnsurePublications(ctx context.Context, conn *pgx.Conn, pipeline string, want source.Publications) (source.PublicationChanges, error) {
	var ch source.PublicationChanges
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		withAppendOnly, err := appendOnlyAllowed(ctx, tx, pipeline, len(want.AppendOnly) > 0)
		if err != nil {
			return err
		}
		if ch.Added, ch.Removed, err = ensurePublication(ctx, tx, pipeline, "", want.Tables); err != nil || !withAppendOnly {
			return err
		}
		ch.AppendOnlyAdded, ch.AppendOnlyRemoved, err = ensurePublication(ctx, tx, AppendOnlyPublication(pipeline), appendOnlyPublish, want.AppendOnly)
		return err
	})
	if err != nil {
		return source.PublicationChanges{}, err
	}
	return ch, nil
}

// appendOnlyAllowed reports whether the pipeline has, or may be given,
// its append-only publication (see EnsurePublications), and refuses
// append-only tables for a pipeline that may not.
func appendOnlyAllowed(ctx context.Context, q querier, pipeline string, wanted bool) (bool, error) {
	name := AppendOnlyPublication(pipeline)
	var exists, slot bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1),
		EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $2)`, name, pipeline).Scan(&exists, &slot)
	if err != nil {
		return false, fmt.Errorf("read publication %s: %w", name, err)
	}
	switch {
	case exists || !slot:
		return true, nil
	case wanted:
		return false, setupf("pipeline %s has no append-only publication %s (it was initialized by a decant without append-only tables), and none can be added while its slot exists: PostgreSQL before 18 fails to decode the changes older than a publication; run decant drop --yes, then init again with --append-only (and --copy)", pipeline, name)
	}
	return false, nil
}

// ensurePublication creates publication name for tables (publish: its
// publish option, "" for every change), or brings an existing one to
// exactly that set. It returns the tables it added and removed.
func ensurePublication(ctx context.Context, q querier, name, publish string, tables []source.TableName) (added, removed []source.TableName, err error) {
	current, exists, err := publicationTables(ctx, q, name)
	if err != nil {
		return nil, nil, err
	}
	if !exists {
		if _, err := q.Exec(ctx, createPublicationSQL(name, publish, tables)); err != nil {
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
	// SET TABLE takes no empty list: a publication left with no table
	// drops the ones it has.
	alter := fmt.Sprintf("ALTER PUBLICATION %s SET TABLE %s", pgsession.QuoteIdent(name), tableList(tables))
	if len(tables) == 0 {
		alter = fmt.Sprintf("ALTER PUBLICATION %s DROP TABLE %s", pgsession.QuoteIdent(name), tableList(removed))
	}
	if _, err = q.Exec(ctx, alter); err != nil {
		return nil, nil, fmt.Errorf("alter publication %s: %w", name, err)
	}
	return added, removed, nil
}

// createPublicationSQL creates publication name for tables, publishing
// partitions' changes through their root.
func createPublicationSQL(name, publish string, tables []source.TableName) string {
	sql := "CREATE PUBLICATION " + pgsession.QuoteIdent(name)
	if len(tables) > 0 {
		sql += " FOR TABLE " + tableList(tables)
	}
	sql += " WITH (publish_via_partition_root = true"
	if publish != "" {
		sql += ", publish = " + quoteLiteral(publish)
	}
	return sql + ")"
}

func tableList(tables []source.TableName) string {
	list := make([]string, len(tables))
	for i, t := range tables {
		list[i] = pgsession.QuoteTable(t)
	}
	return strings.Join(list, ", ")
}

func publicationTables(ctx context.Context, q querier, name string) (tables []source.TableName, exists bool, err error) {
	err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)`, name).Scan(&exists)
	if err != nil || !exists {
		return nil, false, wrapErr("read publication "+name, err)
	}
	// A DDL queue table (ddl.go) is decant's, not one the pipeline
	// replicates: it is left out here, so nothing copies, verifies or
	// removes it from the publication.
	rows, err := q.Query(ctx, `SELECT schemaname, tablename FROM pg_publication_tables
		WHERE pubname = $1 AND NOT (schemaname = 'decant' AND starts_with(tablename, $2)) ORDER BY 1, 2`, name, queuePrefix)
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

// ReadPublications reads the tables of the pipeline's publications, which
// are what remembers the pipeline's append-only tables between init and
// the commands after it. A missing publication holds no table.
func ReadPublications(ctx context.Context, conn *pgx.Conn, pipeline string) (source.Publications, error) {
	p := source.Publications{AppendOnlyName: AppendOnlyPublication(pipeline)}
	var err error
	if p.Tables, _, err = publicationTables(ctx, conn, pipeline); err != nil {
		return p, err
	}
	p.AppendOnly, p.HasAppendOnly, err = publicationTables(ctx, conn, p.AppendOnlyName)
	return p, err
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

// DropPublications drops the pipeline's publication and its append-only
// one, each if it exists, and reports which it dropped.
func DropPublications(ctx context.Context, conn *pgx.Conn, pipeline string) (main, appendOnly bool, err error) {
	if main, err = dropPublication(ctx, conn, pipeline); err != nil {
		return main, false, err
	}
	appendOnly, err = dropPublication(ctx, conn, AppendOnlyPublication(pipeline))
	return main, appendOnly, err
}

func dropPublication(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
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
