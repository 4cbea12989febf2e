package source

// DDL is a schema change in the stream, in order with the rows around it.
//
// A PostgreSQL source describes the outcome: the definition of every table
// the command touched as it stands after the command (Tables, keyed by
// table OID so renames show), and the tables it dropped. A GaussDB source
// only gives the statement (text, or its JSON deparse tree). Targets turn
// the difference between the definition they last applied and the new one
// into their own DDL.
type DDL struct {
	Tag        string // command tag: "CREATE TABLE", "ALTER TABLE", "DROP TABLE", "CREATE INDEX"...
	Statement  string // the statement as the source ran it (or deparsed it); for logs and errors
	SearchPath string // the session's search_path when the statement ran
	// Tables holds the resulting definition of each table the command
	// created or changed (PostgreSQL sources).
	Tables []*TableDef
	// Dropped lists tables the command dropped (PostgreSQL sources).
	Dropped []DroppedTable
	// JSON is the source's structured description: decant's own
	// (PostgreSQL) or GaussDB's deparse tree (enable-ddl-json-format).
	JSON []byte
	// Unsupported says why the source could not describe the change
	// (a GaussDB statement decant cannot interpret); targets then follow
	// --on-unsupported-ddl. Empty for a described change.
	Unsupported string
	// Untrusted, when set, says why decant cannot prove that its own
	// capture on the source wrote this event (PostgreSQL sources: anything
	// but a row of the pipeline's DDL queue table). Such an event carries
	// nothing else and is never applied: the pipeline logs and counts it
	// and goes on.
	Untrusted string
}

// DroppedTable is a table a DDL command dropped.
type DroppedTable struct {
	OID  uint32
	Name TableName
}
