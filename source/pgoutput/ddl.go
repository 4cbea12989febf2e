package pgoutput

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// DDL capture. pgoutput streams rows, never schema changes: a table's new
// shape only shows in the next Relation message, and a new table not at
// all until it is added to the publication. decant therefore installs, on
// the source, event triggers (ddl_command_end, sql_drop, and
// ddl_command_start for DROP INDEX) whose function describes the tables a
// command created, changed or dropped and writes the description as a row
// of the pipeline's queue table, decant.ddl_events_<pipeline> (QueueTable).
// The table is in the pipeline's publication, so pgoutput delivers the
// row inside the transaction, in order with its other rows. The SQL is in
// ddlsql.go.
//
// Why a table and not a logical decoding message: the stream is written
// by every role that can connect to the source, and
// pg_logical_emit_message is executable by PUBLIC, so a message proves
// nothing about who wrote it. The queue table is owned by the superuser
// who installed the capture and grants nothing to anyone; the capture
// function is SECURITY DEFINER. A row of that table (checked by OID, owner
// and privileges at each session's start: QueueOID) was written by the
// capture or by a superuser. A "decant.ddl" message, which an older
// capture wrote, is reported as untrusted and never applied.
//
// The row's event column is a JSON object:
//
//	{"pipeline": "orders", "tag": "ALTER TABLE", "statement": "...",
//	 "tables": [{"oid": 16390, "schema": "app", "name": "items",
//	             "columns": [{"attnum": 1, "name": "id", "type_oid": 23, "typmod": -1,
//	                          "sql_type": "integer", "not_null": true, "default": "",
//	                          "identity": "d", "generated": ""}],
//	             "primary_key": ["id"],
//	             "uniques": [{"name": "items_code_key", "columns": ["code"], "expr": ""}],
//	             "indexes": [{"name": "items_lower_idx", "columns": [], "expr": "CREATE INDEX ..."}]}],
//	 "dropped": [{"oid": 16400, "schema": "app", "name": "old"}]}
//
// or, when the capture function failed, {"pipeline", "tag", "statement",
// "error"}.

// DDLMessagePrefix is the prefix of the DDL messages an older capture
// wrote; a message with it is never applied (see above).
const DDLMessagePrefix = "decant.ddl"

// QueueTable names, in schema decant, the table a pipeline's DDL capture
// writes its descriptions into.
func QueueTable(pipeline string) string { return queuePrefix + pipeline }

const queuePrefix = "ddl_events_"

// untrustedMessage is why a "decant.ddl" message is not applied.
const untrustedMessage = "it is a logical decoding message, which any role on the source can write (pg_logical_emit_message is executable by PUBLIC); decant applies only the rows its capture writes into its queue table (re-run decant init --ddl if this pipeline's capture predates it)"

// CaptureError is the capture function's report that it could not
// describe a DDL command on the source. The command itself went through;
// decant cannot know the schema after it and must stop. It is permanent.
type CaptureError struct {
	Pipeline string // the pipeline whose capture failed
	Tag      string // the command tag
	Message  string // the PostgreSQL error message (SQLERRM)
}

func (e *CaptureError) Error() string {
	return fmt.Sprintf("DDL capture failed on the source for %q: %s", e.Tag, e.Message)
}

// InstallDDLCapture installs, in the source database, the DDL capture of
// a pipeline: the function decant.ddl_<pipeline>() and its event triggers
// decant_ddl_<pipeline> (ddl_command_end), decant_drop_<pipeline>
// (sql_drop) and decant_pre_<pipeline> (ddl_command_start, DROP INDEX
// only), and the SECURITY DEFINER function decant.ddl_<pipeline>_publish
// through which users who do not own the publication add their new tables
// to it, and the queue table decant.ddl_events_<pipeline> the capture
// writes into, added to the publication (ensureQueue). It creates schema
// decant if needed and grants USAGE on it to PUBLIC.
//
// Tables are selected as filter selects them (and, once in the
// publication, whatever their name). A CREATE TABLE [AS] of a selected
// table also adds the table to the publication in the same transaction,
// so that its rows are published from the start; a new table without a
// primary key whose replica identity is DEFAULT is first given REPLICA
// IDENTITY FULL, without which the source would refuse its UPDATEs and
// DELETEs once published.
//
// It is idempotent: the functions are replaced (with the current filter
// and publication), the triggers and the queue table are created only if
// missing. It needs a
// superuser (only superusers create event triggers) and an existing
// publication. The pipeline name must fit in the trigger names: at most
// 51 lowercase letters, digits and underscores.
func InstallDDLCapture(ctx context.Context, conn *pgx.Conn, pipeline, publication string, filter source.TableFilter) error {
	names, err := newCaptureNames(pipeline)
	if err != nil {
		return setupf("install DDL capture: %v", err)
	}
	functions, err := captureFuncSQL(names, publication, filter)
	if err != nil {
		return err
	}
	var user string
	var super, pubExists bool
	err = conn.QueryRow(ctx, `SELECT current_user, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user),
		EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)`, publication).Scan(&user, &super, &pubExists)
	if err != nil {
		return fmt.Errorf("install DDL capture: %w", err)
	}
	if !super {
		return setupf("DDL capture needs the SUPERUSER attribute on the source (only superusers create event triggers); source user %q lacks it: run decant init --ddl as a superuser", user)
	}
	if !pubExists {
		return setupf("publication %s does not exist on the source; DDL capture adds new tables to it, so create it first (decant init)", publication)
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		// Users running DDL call the publish function, in schema decant.
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS decant; GRANT USAGE ON SCHEMA decant TO PUBLIC"); err != nil {
			return err
		}
		if err := ensureQueue(ctx, tx, names, publication); err != nil {
			return err
		}
		for _, sql := range functions {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("create functions: %w", err)
			}
		}
		rows, err := tx.Query(ctx, `SELECT evtname::text FROM pg_event_trigger WHERE evtname = ANY ($1)`, names.triggers())
		if err != nil {
			return err
		}
		existing, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for name, sql := range names.createTriggerSQL() {
			if !slices.Contains(existing, name) {
				if _, err := tx.Exec(ctx, sql); err != nil {
					return fmt.Errorf("create event trigger %s: %w", name, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("install DDL capture for pipeline %s: %w", pipeline, err)
	}
	return nil
}

// ensureQueue creates the pipeline's queue table, owned by the installing
// superuser with no privilege granted to anyone, and adds it to the
// publication. A queue table that exists but that a role other than a
// superuser may write is refused: rows written there would pass for the
// capture's.
func ensureQueue(ctx context.Context, tx pgx.Tx, names captureNames, publication string) error {
	queue := names.queueIdent()
	_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+queue+` (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, event text NOT NULL);
		REVOKE ALL ON `+queue+` FROM PUBLIC`)
	if err != nil {
		return fmt.Errorf("create queue table %s: %w", queue, err)
	}
	if _, err := queueOID(ctx, tx, names.pipeline); err != nil {
		return err
	}
	var published bool
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = 'decant' AND tablename = $2)`,
		publication, names.queue).Scan(&published)
	if err != nil || published {
		return err
	}
	if _, err := tx.Exec(ctx, "ALTER PUBLICATION "+pgsession.QuoteIdent(publication)+" ADD TABLE "+queue); err != nil {
		return fmt.Errorf("add queue table %s to publication %s: %w", queue, publication, err)
	}
	return nil
}

// queueSQL finds the queue table named by the SQL text expression name,
// and whether only superusers may write it: it is owned by one and grants
// INSERT or UPDATE to no other role. (Roles an administrator made members
// of pg_write_all_data may write every table, this one too: they are
// trusted as superusers are.)
func queueSQL(name string) string {
	return `SELECT c.oid, (SELECT r.rolsuper FROM pg_roles r WHERE r.oid = c.relowner)
		AND NOT EXISTS (SELECT 1 FROM aclexplode(c.relacl) a
			WHERE a.grantee <> c.relowner AND a.privilege_type IN ('INSERT', 'UPDATE')
				AND NOT coalesce((SELECT r.rolsuper FROM pg_roles r WHERE r.oid = a.grantee), false))
	FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = 'decant' AND c.relname = ` + name + ` AND c.relkind = 'r'`
}

// QueueOID reads, on a replication connection, the OID of the pipeline's
// queue table when only superusers may write it: the rows of that
// relation are the capture's. It is 0 when there is no such table or
// another role may write it (said in the error, which the reader logs).
func QueueOID(ctx context.Context, conn *pgconn.PgConn, pipeline string) (uint32, error) {
	var oid uint32
	q := `SELECT coalesce((SELECT CASE WHEN q.safe THEN q.oid::text ELSE 'unsafe' END FROM (` + queueSQL(quoteLiteral(QueueTable(pipeline))) + `) q(oid, safe)), '0')`
	err := queryOne(ctx, conn, q, func(v string) error {
		if v == "unsafe" {
			return setupf("DDL queue table decant.%s may be written by a role that is not a superuser, so its rows cannot be trusted as decant's DDL capture and no schema change will be applied: drop it and run decant init --ddl again as a superuser", QueueTable(pipeline))
		}
		n, err := strconv.ParseUint(v, 10, 32)
		oid = uint32(n)
		return err
	})
	return oid, err
}

// queueOID returns the OID of the pipeline's queue table, 0 when there is
// none; a queue table that a role other than a superuser may write is an
// ErrSetup.
func queueOID(ctx context.Context, q querier, pipeline string) (uint32, error) {
	var oid uint32
	var safe bool
	err := q.QueryRow(ctx, queueSQL("$1"), QueueTable(pipeline)).Scan(&oid, &safe)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read DDL queue table decant.%s: %w", QueueTable(pipeline), err)
	}
	if !safe {
		return 0, setupf("DDL queue table decant.%s may be written by a role that is not a superuser, so its rows cannot be trusted as decant's DDL capture: drop it and run decant init --ddl again as a superuser", QueueTable(pipeline))
	}
	return oid, nil
}

// RemoveDDLCapture drops a pipeline's event triggers, functions and queue
// table, those that exist, and reports whether there was any. Schema
// decant stays.
func RemoveDDLCapture(ctx context.Context, conn *pgx.Conn, pipeline string) (bool, error) {
	names, err := newCaptureNames(pipeline)
	if err != nil {
		return false, setupf("remove DDL capture: %v", err)
	}
	var found bool
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = ANY ($1))
			OR EXISTS (SELECT 1 FROM unnest($2::text[]) f WHERE to_regprocedure(f) IS NOT NULL)
			OR to_regclass($3) IS NOT NULL`, names.triggers(), names.functions(), names.queueIdent()).Scan(&found)
		if err != nil || !found {
			return err
		}
		for _, name := range names.triggers() {
			if _, err := tx.Exec(ctx, "DROP EVENT TRIGGER IF EXISTS "+pgsession.QuoteIdent(name)); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, "DROP FUNCTION IF EXISTS "+strings.Join(names.functions(), ", ")+"; DROP TABLE IF EXISTS "+names.queueIdent())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("remove DDL capture for pipeline %s: %w", pipeline, err)
	}
	return found, nil
}

// ddlMessage is the JSON the capture function emits.
type ddlMessage struct {
	Pipeline   string        `json:"pipeline"`
	Tag        string        `json:"tag"`
	Statement  string        `json:"statement"`
	SearchPath string        `json:"search_path"`
	Tables     []tableJSON   `json:"tables"`
	Dropped    []droppedJSON `json:"dropped"`
	Error      *string       `json:"error"`
}

type tableJSON struct {
	OID        uint32       `json:"oid"`
	Schema     string       `json:"schema"`
	Name       string       `json:"name"`
	Columns    []columnJSON `json:"columns"`
	PrimaryKey []string     `json:"primary_key"`
	// The primary key's deferral; absent from messages of capture
	// functions installed before it was captured.
	PrimaryKeyDeferrable bool        `json:"primary_key_deferrable"`
	PrimaryKeyDeferred   bool        `json:"primary_key_deferred"`
	Uniques              []indexJSON `json:"uniques"`
	Indexes              []indexJSON `json:"indexes"`
}

type columnJSON struct {
	Attnum    int16  `json:"attnum"`
	Name      string `json:"name"`
	Type      uint32 `json:"type_oid"`
	TypeMod   int32  `json:"typmod"`
	SQLType   string `json:"sql_type"`
	NotNull   bool   `json:"not_null"`
	Default   string `json:"default"`
	Identity  string `json:"identity"`
	Generated string `json:"generated"`
}

type indexJSON struct {
	Name       string   `json:"name"`
	Columns    []string `json:"columns"`
	Expr       string   `json:"expr"`
	Deferrable bool     `json:"deferrable"` // unique constraints only
	Deferred   bool     `json:"deferred"`
}

type droppedJSON struct {
	OID    uint32 `json:"oid"`
	Schema string `json:"schema"`
	Name   string `json:"name"`
}

// ParseDDLMessage decodes the content of a "decant.ddl" message. A message
// reporting that the capture function failed gives a *CaptureError; content
// that is not such a message gives an error wrapping ErrMalformed. Column
// Info is left nil: the reader resolves user-defined types. The result
// does not alias content.
func ParseDDLMessage(content []byte) (*source.DDL, error) {
	var m ddlMessage
	if err := json.Unmarshal(content, &m); err != nil {
		return nil, fmt.Errorf("%w: DDL message: %v", ErrMalformed, err)
	}
	if m.Error != nil {
		return nil, &CaptureError{Pipeline: m.Pipeline, Tag: m.Tag, Message: *m.Error}
	}
	if m.Tag == "" {
		return nil, fmt.Errorf("%w: DDL message without a command tag", ErrMalformed)
	}
	ddl := &source.DDL{Tag: m.Tag, Statement: m.Statement, SearchPath: m.SearchPath, JSON: bytes.Clone(content)}
	for _, t := range m.Tables {
		def, err := t.def()
		if err != nil {
			return nil, fmt.Errorf("%w: DDL message for %q: %v", ErrMalformed, m.Tag, err)
		}
		ddl.Tables = append(ddl.Tables, def)
	}
	for _, d := range m.Dropped {
		if d.OID == 0 || d.Schema == "" || d.Name == "" {
			return nil, fmt.Errorf("%w: DDL message for %q: dropped table without OID or name", ErrMalformed, m.Tag)
		}
		ddl.Dropped = append(ddl.Dropped, source.DroppedTable{OID: d.OID, Name: source.TableName{Schema: d.Schema, Name: d.Name}})
	}
	return ddl, nil
}

// def converts a table description, checking what a target relies on.
func (t tableJSON) def() (*source.TableDef, error) {
	name := source.TableName{Schema: t.Schema, Name: t.Name}
	if t.OID == 0 || t.Schema == "" || t.Name == "" {
		return nil, fmt.Errorf("table %s without OID or name", name)
	}
	def := &source.TableDef{OID: t.OID, Name: name, Columns: make([]source.ColumnDef, len(t.Columns))}
	for i, c := range t.Columns {
		if c.Attnum <= 0 || c.Name == "" || c.Type == 0 {
			return nil, fmt.Errorf("table %s column %d (%q) without attnum, name or type", name, i, c.Name)
		}
		col := source.ColumnDef{Attnum: c.Attnum, Name: c.Name, Type: c.Type, TypeMod: c.TypeMod, SQLType: c.SQLType,
			NotNull: c.NotNull, Default: c.Default, Generated: c.Generated}
		switch c.Identity {
		case "":
		case "a", "d":
			col.Identity = c.Identity[0]
		default:
			return nil, fmt.Errorf("table %s column %q has identity %q", name, c.Name, c.Identity)
		}
		def.Columns[i] = col
	}
	if len(t.PrimaryKey) > 0 {
		def.PrimaryKey = t.PrimaryKey
		def.PrimaryKeyDeferral = deferral(t.PrimaryKeyDeferrable, t.PrimaryKeyDeferred)
	}
	var err error
	if def.Uniques, err = indexDefs(name, t.Uniques); err != nil {
		return nil, err
	}
	if def.Indexes, err = indexDefs(name, t.Indexes); err != nil {
		return nil, err
	}
	return def, nil
}

// indexDefs converts index descriptions: an expression index has Expr and
// no Columns, as DescribeTable gives it.
func indexDefs(table source.TableName, list []indexJSON) ([]source.IndexDef, error) {
	var out []source.IndexDef
	for _, ix := range list {
		if ix.Name == "" || (len(ix.Columns) == 0) == (ix.Expr == "") {
			return nil, fmt.Errorf("table %s index %q needs a name and either columns or an expression", table, ix.Name)
		}
		d := source.IndexDef{Name: ix.Name, Expr: ix.Expr}
		if len(ix.Columns) > 0 {
			d.Columns, d.Deferral = ix.Columns, deferral(ix.Deferrable, ix.Deferred)
		}
		out = append(out, d)
	}
	return out, nil
}

// queued turns a row change of a DDL queue table (schema decant, name
// ddl_events_...) into what it means: an insert into this pipeline's
// queue, whose relation is the one QueueOID vouched for, is a schema
// change; an insert into a queue of this pipeline's name that decant could
// not verify is an untrusted one; anything else (the capture's own delete,
// another pipeline's queue) is nothing.
func (d *Decoder) queued(c source.Change, xid uint64) (Event, error) {
	if c.Op != source.OpInsert || d.Pipeline == "" || c.Rel.Name != QueueTable(d.Pipeline) {
		return Event{}, nil
	}
	if d.Queue == 0 || c.Rel.ID != d.Queue {
		return untrusted("it is a row of a table named like the pipeline's DDL queue that decant could not verify at the session's start (owned by a superuser, writable by no one else)"), nil
	}
	i := slices.IndexFunc(c.Rel.Columns, func(col source.Column) bool { return col.Name == "event" })
	if i < 0 || c.New[i].Kind == source.ValueNull || c.New[i].Kind == source.ValueUnchanged {
		return Event{}, fmt.Errorf("%w: xid %d: a row of DDL queue table %s without its event column", ErrMalformed, xid, c.Rel.Table())
	}
	ddl, err := ParseDDLMessage(c.New[i].Data)
	var capture *CaptureError
	if errors.As(err, &capture) {
		return Event{}, err
	}
	if err != nil {
		return Event{}, fmt.Errorf("xid %d: %w", xid, err)
	}
	return Event{Kind: EventChange, Change: source.Change{Op: source.OpDDL, DDL: ddl}}, nil
}

// untrusted is the change a DDL event decant cannot prove its capture
// wrote becomes: a schema change that the pipeline refuses to apply,
// saying why, without stopping. Nothing of its content is kept.
func untrusted(why string) Event {
	return Event{Kind: EventChange, Change: source.Change{Op: source.OpDDL, DDL: &source.DDL{Untrusted: why}}}
}

// message decodes a logical decoding message. Only decant's own DDL
// messages matter, and only transactional ones, which pgoutput sends
// inside their transaction; anything else (other prefixes, other tools'
// messages outside transactions) is ignored.
//
// size is the length of the whole message: pglogrepl slices the content by
// the length the message states, which may run past its end into the
// buffer's spare capacity.
func (d *Decoder) message(m *pglogrepl.LogicalDecodingMessage, size int) (Event, error) {
	if want := 1 + 1 + 8 + len(m.Prefix) + 1 + 4 + len(m.Content); size != want {
		return Event{}, fmt.Errorf("%w: message type 'M' states %d bytes of content but has %d", ErrMalformed, len(m.Content), len(m.Content)+size-want)
	}
	if !m.Transactional || m.Prefix != DDLMessagePrefix {
		return Event{}, nil
	}
	if d.txn == nil {
		return Event{}, fmt.Errorf("%w: DDL message at %s outside a transaction", ErrMalformed, source.LSN(m.LSN))
	}
	if p := messagePipeline(m.Content); d.Pipeline != "" && p != "" && p != d.Pipeline {
		return Event{}, nil // another pipeline's: messages are not filtered by publication
	}
	return untrusted(untrustedMessage), nil
}

// messagePipeline reads the pipeline a DDL message claims to be for (""
// when it cannot tell, which counts as this pipeline's: a message that
// hides its pipeline is not ignored, but reported).
func messagePipeline(content []byte) string {
	var m struct {
		Pipeline string `json:"pipeline"`
	}
	if json.Unmarshal(content, &m) != nil {
		return ""
	}
	return m.Pipeline
}
