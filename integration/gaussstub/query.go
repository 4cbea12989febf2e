package gaussstub

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
)

// The queries the stand-in answers; anything else is an error. Matching is
// case-insensitive and tolerates whitespace and a trailing semicolon.
var (
	literal         = `'((?:[^']|'')*)'`
	reIdentify      = regexp.MustCompile(`(?is)^\s*IDENTIFY_SYSTEM\s*;?\s*$`)
	reCurrentXlog   = regexp.MustCompile(`(?is)^\s*SELECT\s+pg_current_xlog_location\s*\(\s*\)\s*;?\s*$`)
	reAddPosition   = regexp.MustCompile(`(?is)^\s*SELECT\s+gs_add_logical_decoding_position_xlog\s*\(\s*\)\s*;?\s*$`)
	reNextCSN       = regexp.MustCompile(`(?is)^\s*SELECT\s+next_csn::text\s+FROM\s+gs_get_next_xid_csn\s*\(\s*\)\s*;?\s*$`)
	reStartRepl     = regexp.MustCompile(`(?is)^\s*START_REPLICATION\b`)
	reVersion       = regexp.MustCompile(`(?is)^\s*SELECT\s+(?:pg_catalog\.)?version\s*\(\s*\)\s*;?\s*$`)
	reSlotQuery     = regexp.MustCompile(`(?is)^\s*SELECT\s+([a-z_]+(?:\s*,\s*[a-z_]+)*)\s+FROM\s+(?:pg_catalog\.)?pg_replication_slots\s+WHERE\s+slot_name\s*=\s*` + literal + `\s*;?\s*$`)
	reCreateSlot    = regexp.MustCompile(`(?is)^\s*SELECT\s+\*\s+FROM\s+pg_create_logical_replication_slot\s*\(\s*` + literal + `\s*,\s*` + literal + `\s*(?:,\s*(\d+)\s*)?\)\s*;?\s*$`)
	reDropSlot      = regexp.MustCompile(`(?is)^\s*SELECT\s+pg_drop_replication_slot\s*\(\s*` + literal + `\s*\)\s*;?\s*$`)
	knownSlotPlugin = map[string]bool{
		"mppdb_decoding": true, "sql_decoding": true, "test_decoding": true, "pgoutput": true,
		"parallel_binary_decoding": true, "parallel_json_decoding": true, "parallel_text_decoding": true,
	}
)

func unquote(s string) string { return strings.ReplaceAll(s, "''", "'") }

// queryLoop answers simple-protocol queries until the client leaves or a
// replication stream ends.
func (c *session) queryLoop() {
	for {
		msg, err := c.be.Receive()
		if err != nil {
			return
		}
		switch m := msg.(type) {
		case *pgproto3.Query:
			if err := c.query(m.String); err != nil {
				return
			}
		case *pgproto3.Terminate:
			return
		default:
			c.fatal("0A000", fmt.Sprintf("stand-in supports only the simple query protocol, got %T", msg))
			return
		}
	}
}

// query answers one query. A non-nil error ends the session.
func (c *session) query(q string) error {
	switch {
	case reIdentify.MatchString(q):
		if !c.replication {
			return c.sqlError("42601", `syntax error at or near "IDENTIFY_SYSTEM"`)
		}
		s := c.srv
		s.mu.Lock()
		end := s.end
		s.mu.Unlock()
		return c.rows("IDENTIFY_SYSTEM", []string{"systemid", "timeline", "xlogpos", "dbname"},
			[]string{s.cfg.SystemID, "1", end.String(), c.database})
	case reStartRepl.MatchString(q):
		if !c.replication {
			return c.sqlError("42601", `syntax error at or near "START_REPLICATION"`)
		}
		return c.startReplication(q)
	case reVersion.MatchString(q):
		return c.rows("", []string{"version"}, []string{c.srv.flavour.version})
	case reCurrentXlog.MatchString(q):
		c.srv.mu.Lock()
		end := c.srv.end
		c.srv.mu.Unlock()
		return c.rows("", []string{"pg_current_xlog_location"}, []string{end.String()})
	case reAddPosition.MatchString(q):
		// The record carries the CSN of the moment it is written: the next
		// CSN, as a snapshot's CSN is in openGauss (procarray.cpp
		// GetSnapshotData takes nextCommitSeqNo; a transaction is visible
		// when its CSN is below it), so every commit before it sorts before
		// it in CSN order.
		s := c.srv
		s.mu.Lock()
		lsn := s.end
		s.addPositionLocked(s.maxCSN+1, uint64(lsn))
		s.mu.Unlock()
		return c.rows("", []string{"gs_add_logical_decoding_position_xlog"}, []string{lsn.String()})
	case reNextCSN.MatchString(q):
		// gs_get_next_xid_csn(): per node, the next xid and the CSN the next
		// commit gets (GaussDB's 系统信息函数, 事务ID和快照); one node here.
		c.srv.mu.Lock()
		next := c.srv.maxCSN + 1
		c.srv.mu.Unlock()
		return c.rows("", []string{"next_csn"}, []string{decimal(next)})
	}
	if ok, err := c.catalogQuery(q); ok {
		return err
	}
	if m := reSlotQuery.FindStringSubmatch(q); m != nil {
		return c.slotQuery(strings.Split(m[1], ","), unquote(m[2]))
	}
	if m := reCreateSlot.FindStringSubmatch(q); m != nil {
		return c.createSlot(unquote(m[1]), unquote(m[2]), m[3])
	}
	if m := reDropSlot.FindStringSubmatch(q); m != nil {
		return c.dropSlot(unquote(m[1]))
	}
	return c.sqlError("0A000", "stand-in does not support: "+q)
}

// slotQuery answers a SELECT of some of pg_replication_slots' columns,
// with the columns the flavour's view has: openGauss's system_views.sql
// (CREATE VIEW pg_replication_slots) has no confirmed_csn, and a query
// naming it fails as the real server's would.
func (c *session) slotQuery(names []string, slotName string) error {
	cols := make([]string, len(names))
	for i, n := range names {
		cols[i] = strings.ToLower(strings.TrimSpace(n))
		if !c.srv.flavour.slotColumns[cols[i]] {
			return c.sqlError("42703", fmt.Sprintf(`column "%s" does not exist`, cols[i]))
		}
	}
	s := c.srv
	s.mu.Lock()
	sl, ok := s.slots[slotName]
	var row []string
	if ok {
		active := "f"
		if sl.active {
			active = "t"
		}
		values := map[string]string{"slot_name": slotName, "plugin": sl.plugin, "slot_type": "logical",
			"confirmed_flush": sl.confirmedFlush.String(), "confirmed_csn": decimal(sl.confirmedCSN), "active": active}
		for _, col := range cols {
			row = append(row, values[col])
		}
	}
	s.mu.Unlock()
	if !ok {
		return c.rows("", cols)
	}
	return c.rows("", cols, row)
}

func (c *session) createSlot(name, plugin, order string) error {
	csn := false
	if order != "" && !c.srv.flavour.csnSlots {
		// openGauss's pg_create_logical_replication_slot takes two
		// arguments, or four (with LSNs): builtin_funcs.ini.
		return c.sqlError("42883", "function pg_create_logical_replication_slot(unknown, unknown, integer) does not exist")
	}
	switch order {
	case "", "0":
	case "1":
		csn = true
	default:
		return c.sqlError("22023", fmt.Sprintf("output_order %s is invalid: want 0 or 1", order))
	}
	if !knownSlotPlugin[plugin] {
		return c.sqlError("58P01", fmt.Sprintf(`could not access file "%s": No such file or directory`, plugin))
	}
	s := c.srv
	s.mu.Lock()
	sl, err := s.createSlotLocked(name, plugin, csn)
	var pos string
	if err == nil {
		pos = sl.confirmedFlush.String()
		if csn {
			pos = decimal(sl.confirmedCSN)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return c.sqlError("42710", fmt.Sprintf(`replication slot "%s" already exists`, name))
	}
	return c.rows("", []string{"slotname", "xlog_position"}, []string{name, pos})
}

func (c *session) dropSlot(name string) error {
	s := c.srv
	s.mu.Lock()
	sl, ok := s.slots[name]
	active := ok && sl.active
	if ok && !active {
		delete(s.slots, name)
	}
	s.mu.Unlock()
	switch {
	case !ok:
		return c.sqlError("42704", fmt.Sprintf(`replication slot "%s" does not exist`, name))
	case active:
		return c.sqlError("55006", fmt.Sprintf(`replication slot "%s" is already active`, name))
	}
	return c.rows("", []string{"pg_drop_replication_slot"}, []string{""})
}

// rows sends a text result set and ReadyForQuery; an empty tag means
// "SELECT <number of rows>".
func (c *session) rows(tag string, cols []string, rows ...[]string) error {
	rd := &pgproto3.RowDescription{}
	for _, name := range cols {
		oid := uint32(25) // text
		if name == "timeline" {
			oid = 23
		}
		rd.Fields = append(rd.Fields, pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: oid, DataTypeSize: -1, TypeModifier: -1})
	}
	msgs := []pgproto3.BackendMessage{rd}
	for _, r := range rows {
		dr := &pgproto3.DataRow{}
		for _, v := range r {
			dr.Values = append(dr.Values, []byte(v))
		}
		msgs = append(msgs, dr)
	}
	if tag == "" {
		tag = "SELECT " + strconv.Itoa(len(rows))
	}
	return c.send(append(msgs, &pgproto3.CommandComplete{CommandTag: []byte(tag)}, &pgproto3.ReadyForQuery{TxStatus: 'I'})...)
}
