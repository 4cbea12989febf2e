package pgoutput

import "github.com/decant/decant/source"

// The SQL the DDL capture function is built from, exported only so that
// the integration tests (integration/pgsource) can run it on a server
// against its Go counterparts: what the capture sends must read as what
// DescribeTable reads, and it must select the tables TableFilter.Match
// selects. Nothing else in decant calls these.

// CaptureTableSQL is the query the capture describes a table with: table
// $1 (an OID) as one JSON object in the shape ParseDDLMessage reads.
func CaptureTableSQL() string { return tableJSONSQL }

// CaptureMatchSQL is the SQL condition the capture selects tables by: true
// where the SQL expressions schema and name name a table filter selects.
func CaptureMatchSQL(filter source.TableFilter, schema, name string) string {
	return matchSQL(filter, schema, name)
}
