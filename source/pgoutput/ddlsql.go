package pgoutput

import (
	"fmt"
	"strings"
	"text/template"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// tableJSONSQL describes table $1 as one JSON object in the shape
// ParseDDLMessage reads (tableJSON). It wraps columnsSQL and indexesSQL,
// the queries DescribeTable runs, and puts each column's default where
// columnDefault does, so that a definition captured on the source reads
// the same as one DescribeTable reads later.
const tableJSONSQL = `SELECT jsonb_build_object('oid', c.oid::bigint, 'schema', n.nspname::text, 'name', c.relname::text,
	'columns', coalesce((SELECT jsonb_agg(jsonb_build_object('attnum', col.attnum, 'name', col.name::text,
			'type_oid', col.type_oid::bigint, 'typmod', col.typmod, 'sql_type', col.sql_type, 'not_null', col.not_null,
			'default', CASE WHEN col.generated <> '' OR col.identity <> '' OR col.serial THEN '' ELSE col.expr END,
			'identity', CASE WHEN col.generated <> '' THEN '' WHEN col.identity <> '' THEN col.identity
				WHEN col.serial THEN 'd' ELSE '' END,
			'generated', CASE WHEN col.generated <> '' THEN col.expr ELSE '' END) ORDER BY col.attnum)
		FROM (` + columnsSQL + `) col(attnum, name, type_oid, typmod, sql_type, not_null, expr, identity, generated, serial)), '[]'),
	'primary_key', coalesce(ix.primary_key, '[]'),
	'primary_key_deferrable', coalesce(ix.primary_key_deferrable, false),
	'primary_key_deferred', coalesce(ix.primary_key_deferred, false),
	'uniques', coalesce(ix.uniques, '[]'),
	'indexes', coalesce(ix.indexes, '[]'))
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN LATERAL (SELECT (jsonb_agg(to_jsonb(i.columns)) FILTER (WHERE i.is_primary)) -> 0 AS primary_key,
		bool_or(i.is_deferrable) FILTER (WHERE i.is_primary) AS primary_key_deferrable,
		bool_or(i.is_deferred) FILTER (WHERE i.is_primary) AS primary_key_deferred,
		jsonb_agg(jsonb_build_object('name', i.name::text, 'columns', CASE WHEN i.is_expr THEN '{}' ELSE i.columns END,
			'expr', CASE WHEN i.is_expr THEN i.def ELSE '' END,
			'deferrable', i.is_deferrable AND NOT i.is_expr, 'deferred', i.is_deferred AND NOT i.is_expr) ORDER BY i.name)
			FILTER (WHERE i.is_unique AND NOT i.is_primary) AS uniques,
		jsonb_agg(jsonb_build_object('name', i.name::text, 'columns', CASE WHEN i.is_expr THEN '{}' ELSE i.columns END,
			'expr', CASE WHEN i.is_expr THEN i.def ELSE '' END) ORDER BY i.name) FILTER (WHERE NOT i.is_unique) AS indexes
	FROM (` + indexesSQL + `) i(name, is_primary, is_unique, is_expr, def, columns, is_deferrable, is_deferred)) ix ON true
WHERE c.oid = $1`

// fencePrefix is the prefix of the empty transactional message that
// followed each DDL message of the capture decant installed before the
// queue table (ddl.go). Such messages are ignored.
const fencePrefix = "decant.ddl.fence"

// Command tags whose table objects the ddl_command_end trigger describes
// (ALTER SCHEMA: every table in the schema, for RENAME). CREATE SCHEMA
// only fires it for the CREATE TABLE commands it may hold; DROP INDEX only
// to forget the index map of ddl_command_start.
const (
	describedTags = `'CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO', 'ALTER TABLE', 'CREATE INDEX', 'ALTER INDEX'`
	createdTags   = `'CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO'`
	endTags       = describedTags + `, 'ALTER SCHEMA', 'CREATE SCHEMA', 'DROP INDEX'`
)

// captureNames are the source objects of one pipeline's DDL capture.
type captureNames struct {
	pipeline string
	fn       string // decant.ddl_<pipeline>, unquoted: the event trigger function
	publish  string // decant.ddl_<pipeline>_publish: adds a new table to the publication
	onEnd    string // event trigger on ddl_command_end
	onDrop   string // event trigger on sql_drop
	onStart  string // event trigger on ddl_command_start, for DROP INDEX
	indexMap string // session setting holding index → table OIDs between ddl_command_start and sql_drop of a DROP INDEX
	queue    string // decant.ddl_events_<pipeline>, unquoted: the table the capture writes its descriptions into
}

// maxIdent is PostgreSQL's longest identifier (NAMEDATALEN - 1 bytes);
// longer names are silently truncated, which could make two pipelines
// share a trigger.
const maxIdent = 63

func newCaptureNames(pipeline string) (captureNames, error) {
	n := captureNames{
		pipeline: pipeline,
		fn:       "ddl_" + pipeline,
		publish:  "ddl_" + pipeline + "_publish",
		onEnd:    "decant_ddl_" + pipeline,
		onDrop:   "decant_drop_" + pipeline,
		onStart:  "decant_pre_" + pipeline,
		indexMap: "decant.drop_index_" + pipeline,
		queue:    QueueTable(pipeline),
	}
	if pipeline == "" || strings.TrimLeft(pipeline, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || len(n.onDrop) > maxIdent {
		return captureNames{}, fmt.Errorf("pipeline name %q cannot name DDL capture objects: use at most %d lowercase letters, digits and underscores",
			pipeline, maxIdent-len("decant_drop_"))
	}
	return n, nil
}

func (n captureNames) triggers() []string { return []string{n.onEnd, n.onDrop, n.onStart} }

// functions returns the signatures of the functions, as to_regprocedure
// and DROP FUNCTION take them.
func (n captureNames) functions() []string {
	return []string{n.funcIdent() + "()", n.publishIdent() + "(oid)"}
}

func (n captureNames) funcIdent() string {
	return pgsession.QuoteIdent("decant") + "." + pgsession.QuoteIdent(n.fn)
}

func (n captureNames) queueIdent() string {
	return pgsession.QuoteIdent("decant") + "." + pgsession.QuoteIdent(n.queue)
}

func (n captureNames) publishIdent() string {
	return pgsession.QuoteIdent("decant") + "." + pgsession.QuoteIdent(n.publish)
}

// createTriggerSQL returns the statements creating each event trigger, by name.
func (n captureNames) createTriggerSQL() map[string]string {
	fn := n.funcIdent()
	return map[string]string{
		n.onEnd:   fmt.Sprintf("CREATE EVENT TRIGGER %s ON ddl_command_end WHEN TAG IN (%s) EXECUTE FUNCTION %s()", pgsession.QuoteIdent(n.onEnd), endTags, fn),
		n.onDrop:  fmt.Sprintf("CREATE EVENT TRIGGER %s ON sql_drop EXECUTE FUNCTION %s()", pgsession.QuoteIdent(n.onDrop), fn),
		n.onStart: fmt.Sprintf("CREATE EVENT TRIGGER %s ON ddl_command_start WHEN TAG IN ('DROP INDEX') EXECUTE FUNCTION %s()", pgsession.QuoteIdent(n.onStart), fn),
	}
}

// matchSQL renders filter.Match as a SQL boolean expression over the
// schema and table name expressions: SystemSchema excluded, then any
// pattern matching, with '*' as LIKE's '%' and the literal parts escaped.
func matchSQL(filter source.TableFilter, schema, name string) string {
	system := fmt.Sprintf("%[1]s NOT IN ('pg_catalog', 'information_schema', 'decant') AND %[1]s NOT LIKE 'pg!_toast%%' ESCAPE '!' AND %[1]s NOT LIKE 'pg!_temp%%' ESCAPE '!'", schema)
	pats := filter.Patterns()
	if len(pats) == 0 {
		return "(" + system + ")"
	}
	ors := make([]string, len(pats))
	for i, p := range pats {
		ors[i] = fmt.Sprintf("%s LIKE %s ESCAPE '!' AND %s LIKE %s ESCAPE '!'", schema, likePattern(p[0]), name, likePattern(p[1]))
	}
	return "(" + system + " AND (" + strings.Join(ors, " OR ") + "))"
}

// likePattern turns a TableFilter pattern into a quoted LIKE pattern with
// escape character '!' (not backslash, whose meaning in a literal depends
// on standard_conforming_strings).
func likePattern(p string) string {
	var b strings.Builder
	for _, r := range p {
		switch r {
		case '*':
			b.WriteByte('%')
		case '%', '_', '!':
			b.WriteByte('!')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return quoteLiteral(b.String())
}

// captureFuncSQL renders the CREATE OR REPLACE FUNCTION statements of a
// pipeline's capture functions.
func captureFuncSQL(n captureNames, publication string, filter source.TableFilter) ([]string, error) {
	data := map[string]string{
		"Func":         n.funcIdent(),
		"Publish":      n.publishIdent(),
		"Pub":          quoteLiteral(publication),
		"Queue":        n.queueIdent(),
		"Pipeline":     quoteLiteral(n.pipeline),
		"IndexMap":     quoteLiteral(n.indexMap),
		"Describe":     quoteLiteral(tableJSONSQL),
		"Described":    describedTags,
		"Created":      createdTags,
		"MatchRel":     matchSQL(filter, "n.nspname", "c.relname"),
		"MatchDropped": matchSQL(filter, "o.schema_name", "o.object_name"),
	}
	var out []string
	for _, tmpl := range []*template.Template{publishFunc, captureFunc} {
		var b strings.Builder
		if err := tmpl.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("render DDL capture function: %w", err)
		}
		out = append(out, b.String())
	}
	return out, nil
}

// publishFunc adds a new selected table to the publication. Adding a table
// takes the publication's owner, which the users running DDL usually are
// not, so it runs with the rights of its owner (the superuser who installed
// the capture) and a search_path no user can write to. It refuses a table
// the pipeline does not select: callable by anyone, it can only do what
// decant init would do.
var publishFunc = template.Must(template.New("publish").Parse(`CREATE OR REPLACE FUNCTION {{.Publish}}(rel oid) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $decant$
DECLARE
	t record;
BEGIN
	SELECT n.nspname, c.relname INTO t
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = rel AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relpersistence = 'p' AND {{.MatchRel}};
	IF NOT FOUND THEN
		RAISE EXCEPTION 'decant pipeline %: relation % is not a table the pipeline replicates', {{.Pipeline}}, rel;
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_publication_tables p
			WHERE p.pubname = {{.Pub}} AND p.schemaname = t.nspname AND p.tablename = t.relname) THEN
		EXECUTE format('ALTER PUBLICATION %I ADD TABLE %I.%I', {{.Pub}}, t.nspname, t.relname);
	END IF;
END
$decant$`))

// captureFunc is the event trigger function. One function serves the
// three events:
//
//   - ddl_command_start (DROP INDEX only) remembers, in a session setting,
//     the table of every index on a selected table: by sql_drop the index
//     is gone from the catalog, and with it the name of its table.
//   - sql_drop reports the selected tables the command dropped (any
//     command: DROP TABLE, DROP SCHEMA ... CASCADE, DROP OWNED...), and for
//     DROP INDEX describes the tables that lost an index.
//   - ddl_command_end describes every selected table the command created
//     or changed (with its inheritance children, and for ALTER SCHEMA every
//     table in the schema), as it is after the command. A new table is
//     first given REPLICA IDENTITY FULL if it has no primary key and
//     identity DEFAULT, and added to the publication (by publishFunc), so
//     that its rows, later in the same transaction, are published.
//
// A table is selected when its name matches the pipeline's patterns, or
// when it is in the publication already (a table renamed out of the
// patterns is still replicated, so still described). Only permanent
// ordinary and partitioned tables count; partitions are replicated through
// their root.
//
// It writes at most one row into the pipeline's queue table per event,
// and none when no selected table is involved; the row is deleted again in
// the same transaction, so the table stays empty and the stream carries
// the insert (which decant reads) and the delete (which it ignores). The
// description runs with search_path set to public (then pg_temp, so that
// no temporary table of the session stands in for a catalog), whatever
// the session's, so that a table prints the same from any session (and as
// it does for DescribeTable on a connection with the default
// search_path).
//
// It is SECURITY DEFINER: it runs as the superuser who installed it, the
// only role besides other superusers that may write the queue table, so a
// row there was written by this function (or a superuser). PostgreSQL
// refuses to call an event trigger function other than as an event
// trigger, and only superusers create event triggers. Running as a
// superuser, it must not resolve a name through the session's
// search_path (a user's schema listed before pg_catalog would supply its
// functions): its own path is pg_catalog then pg_temp, and the session's
// path is neither read nor reported.
//
// Its own commands (REPLICA IDENTITY, ALTER PUBLICATION) fire the event
// triggers again; the decant.in_trigger setting makes those calls return at
// once. Any error is caught: the user's command goes on, and the message
// carries the error instead, on which decant stops.
var captureFunc = template.Must(template.New("capture").Parse(`CREATE OR REPLACE FUNCTION {{.Func}}() RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $decant$
DECLARE
	event_id bigint;
	rels oid[] := '{}';
	created oid[] := '{}';
	tables jsonb := '[]';
	dropped jsonb := '[]';
	def jsonb;
	t record;
BEGIN
	IF current_setting('decant.in_trigger', true) = 'on' THEN
		RETURN;
	END IF;
	BEGIN
		PERFORM set_config('search_path', 'public, pg_temp', true);
		IF TG_EVENT = 'ddl_command_start' THEN
			PERFORM set_config({{.IndexMap}}, coalesce((SELECT jsonb_object_agg(x.indexrelid::text, x.indrelid::bigint)
				FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
				WHERE {{.MatchRel}} OR EXISTS (SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
					WHERE p.pubname = {{.Pub}} AND r.prrelid = c.oid)), '{}')::text, false);
		ELSIF TG_EVENT = 'sql_drop' THEN
			SELECT coalesce(jsonb_agg(jsonb_build_object('oid', o.objid::bigint, 'schema', o.schema_name, 'name', o.object_name)
					ORDER BY o.objid), '[]')
				INTO dropped
				FROM pg_event_trigger_dropped_objects() o
				WHERE o.object_type = 'table' AND NOT o.is_temporary
					AND ({{.MatchDropped}} OR EXISTS (SELECT 1 FROM pg_event_trigger_dropped_objects() r
						WHERE r.object_type = 'publication relation' AND r.address_args = ARRAY[{{.Pub}}]
							AND r.address_names = ARRAY[o.schema_name, o.object_name]));
			IF TG_TAG = 'DROP INDEX' THEN
				SELECT coalesce(array_agg((m.tables ->> o.objid::text)::oid), '{}')
					INTO rels
					FROM pg_event_trigger_dropped_objects() o,
						(SELECT nullif(current_setting({{.IndexMap}}, true), '')::jsonb AS tables) m
					WHERE o.object_type = 'index' AND m.tables ? o.objid::text;
			END IF;
		ELSE
			IF TG_TAG = 'DROP INDEX' THEN
				PERFORM set_config({{.IndexMap}}, '', false);
			END IF;
			SELECT coalesce(array_agg(d.rel), '{}'), coalesce(array_agg(d.rel) FILTER (WHERE d.created), '{}')
				INTO rels, created
				FROM (SELECT CASE e.classid
						WHEN 'pg_class'::regclass THEN coalesce((SELECT x.indrelid FROM pg_index x WHERE x.indexrelid = e.objid), e.objid)
						WHEN 'pg_constraint'::regclass THEN (SELECT k.conrelid FROM pg_constraint k WHERE k.oid = e.objid)
					END AS rel,
					e.command_tag IN ({{.Created}}) AND e.object_type = 'table' AS created
					FROM pg_event_trigger_ddl_commands() e
					WHERE e.command_tag IN ({{.Described}})
					UNION ALL
					SELECT c.oid, false
					FROM pg_event_trigger_ddl_commands() e JOIN pg_class c ON c.relnamespace = e.objid
					WHERE e.command_tag = 'ALTER SCHEMA' AND e.classid = 'pg_namespace'::regclass) d;
			-- Inheritance children change with their parent (partitions are
			-- left out below, replicated through their root).
			rels := ARRAY(WITH RECURSIVE k(rel) AS (SELECT unnest(rels)
					UNION SELECT i.inhrelid FROM pg_inherits i JOIN k ON i.inhparent = k.rel)
				SELECT rel FROM k);
		END IF;
		FOR t IN SELECT c.oid, n.nspname, c.relname, c.relreplident,
				c.oid = ANY (created) AND {{.MatchRel}} AS is_new,
				EXISTS (SELECT 1 FROM pg_index x WHERE x.indrelid = c.oid AND x.indisprimary) AS has_pk
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.oid = ANY (rels) AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relpersistence = 'p'
				AND ({{.MatchRel}} OR EXISTS (SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
					WHERE p.pubname = {{.Pub}} AND r.prrelid = c.oid))
			ORDER BY c.oid
		LOOP
			IF t.is_new THEN
				PERFORM set_config('decant.in_trigger', 'on', true);
				IF NOT t.has_pk AND t.relreplident = 'd' THEN
					EXECUTE format('ALTER TABLE %I.%I REPLICA IDENTITY FULL', t.nspname, t.relname);
				END IF;
				PERFORM {{.Publish}}(t.oid);
				PERFORM set_config('decant.in_trigger', '', true);
			END IF;
			EXECUTE {{.Describe}} INTO def USING t.oid;
			tables := tables || jsonb_build_array(def);
		END LOOP;
		IF tables <> '[]' OR dropped <> '[]' THEN
			INSERT INTO {{.Queue}} (event) VALUES (jsonb_build_object('pipeline', {{.Pipeline}}, 'tag', TG_TAG,
				'statement', current_query(), 'tables', tables, 'dropped', dropped)::text)
				RETURNING id INTO event_id;
			DELETE FROM {{.Queue}} WHERE id = event_id;
		END IF;
	EXCEPTION WHEN OTHERS THEN
		BEGIN
			INSERT INTO {{.Queue}} (event) VALUES (jsonb_build_object('pipeline', {{.Pipeline}}, 'tag', TG_TAG,
				'statement', current_query(), 'error', SQLERRM)::text)
				RETURNING id INTO event_id;
			DELETE FROM {{.Queue}} WHERE id = event_id;
		EXCEPTION WHEN OTHERS THEN
			RAISE WARNING 'decant pipeline %: DDL capture failed for %: %', {{.Pipeline}}, TG_TAG, SQLERRM;
		END;
	END;
END
$decant$`))
