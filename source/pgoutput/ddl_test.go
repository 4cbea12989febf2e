package pgoutput

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// A message as the capture function emits it (testdata/ddl_items.json,
// which integration/pgsource sends through a real walsender), and what it
// decodes to.
var itemsMessage = readTestdata("ddl_items.json")

// readTestdata is the text of a file in testdata.
func readTestdata(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

var itemsDDL = &source.DDL{
	Tag: "ALTER TABLE", Statement: "ALTER TABLE app.items ADD note text", SearchPath: `"$user", public`,
	Tables: []*source.TableDef{{
		OID: 16390, Name: source.TableName{Schema: "app", Name: "items"},
		Columns: []source.ColumnDef{
			{Attnum: 1, Name: "id", Type: 23, TypeMod: -1, SQLType: "integer", NotNull: true, Identity: 'd'},
			{Attnum: 3, Name: "mood", Type: 16400, TypeMod: -1, SQLType: "app.mood", Default: "'ok'::app.mood"},
			{Attnum: 4, Name: "code", Type: 1043, TypeMod: 24, SQLType: "character varying(20)", Identity: 'a'},
			{Attnum: 5, Name: "total", Type: 1700, TypeMod: -1, SQLType: "numeric", Generated: "(id * 2)"},
		},
		PrimaryKey: []string{"id"},
		Uniques: []source.IndexDef{
			{Name: "items_code_key", Columns: []string{"code"}},
			{Name: "items_lower_idx", Expr: "CREATE UNIQUE INDEX items_lower_idx ON app.items USING btree (lower(code))"},
		},
	}},
	Dropped: []source.DroppedTable{{OID: 16500, Name: source.TableName{Schema: "app", Name: "old"}}},
	JSON:    []byte(itemsMessage),
}

func TestParseDDLMessage(t *testing.T) {
	valid := map[string]*source.DDL{
		"full": itemsDDL,
		"drop only": {Tag: "DROP TABLE", Dropped: []source.DroppedTable{{OID: 7, Name: source.TableName{Schema: "s", Name: "t"}}},
			JSON: []byte(`{"tag": "DROP TABLE", "tables": [], "dropped": [{"oid": 7, "schema": "s", "name": "t"}]}`)},
		"nulls": {Tag: "CREATE TABLE", Tables: []*source.TableDef{{OID: 8, Name: source.TableName{Schema: "s", Name: "e"}, Columns: []source.ColumnDef{}}},
			JSON: []byte(`{"tag": "CREATE TABLE", "tables": [{"oid": 8, "schema": "s", "name": "e", "columns": null, "primary_key": null}], "dropped": null, "error": null}`)},
	}
	for name, want := range valid {
		t.Run(name, func(t *testing.T) {
			got, err := ParseDDLMessage(want.JSON)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %s\nwant %s", renderDDL(got), renderDDL(want))
			}
		})
	}

	t.Run("capture error", func(t *testing.T) {
		_, err := ParseDDLMessage([]byte(`{"pipeline": "orders", "tag": "CREATE TABLE", "statement": "CREATE TABLE x ()", "search_path": "public", "error": "publication \"p\" does not exist"}`))
		var ce *CaptureError
		if !errors.As(err, &ce) || errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v: want a *CaptureError, not ErrMalformed", err)
		}
		if want := (CaptureError{Pipeline: "orders", Tag: "CREATE TABLE", Message: `publication "p" does not exist`}); *ce != want {
			t.Errorf("error %+v, want %+v", *ce, want)
		}
		if want := `DDL capture failed on the source for "CREATE TABLE": publication "p" does not exist`; err.Error() != want {
			t.Errorf("error text %q, want %q", err, want)
		}
	})

	malformed := map[string]string{
		"truncated":               itemsMessage[:200],
		"not an object":           `["ALTER TABLE"]`,
		"empty":                   ``,
		"no tag":                  `{"tables": [], "dropped": []}`,
		"oid as string":           `{"tag": "X", "tables": [{"oid": "16390", "schema": "a", "name": "b", "columns": []}]}`,
		"negative oid":            `{"tag": "X", "dropped": [{"oid": -1, "schema": "a", "name": "b"}]}`,
		"table without oid":       `{"tag": "X", "tables": [{"schema": "a", "name": "b", "columns": []}]}`,
		"table without name":      `{"tag": "X", "tables": [{"oid": 1, "schema": "a", "columns": []}]}`,
		"column without attnum":   `{"tag": "X", "tables": [{"oid": 1, "schema": "a", "name": "b", "columns": [{"name": "c", "type_oid": 23}]}]}`,
		"column without type":     `{"tag": "X", "tables": [{"oid": 1, "schema": "a", "name": "b", "columns": [{"attnum": 1, "name": "c"}]}]}`,
		"attnum out of range":     `{"tag": "X", "tables": [{"oid": 1, "schema": "a", "name": "b", "columns": [{"attnum": 40000, "name": "c", "type_oid": 23}]}]}`,
		"bad identity":            `{"tag": "X", "tables": [{"oid": 1, "schema": "a", "name": "b", "columns": [{"attnum": 1, "name": "c", "type_oid": 23, "identity": "x"}]}]}`,
		"index with both":         `{"tag": "X", "tables": [{"oid": 1, "schema": "a", "name": "b", "columns": [], "indexes": [{"name": "i", "columns": ["c"], "expr": "CREATE INDEX"}]}]}`,
		"index with neither":      `{"tag": "X", "tables": [{"oid": 1, "schema": "a", "name": "b", "columns": [], "uniques": [{"name": "i", "columns": []}]}]}`,
		"dropped without a name":  `{"tag": "X", "dropped": [{"oid": 5, "schema": "a"}]}`,
		"columns not a list":      `{"tag": "X", "tables": [{"oid": 1, "schema": "a", "name": "b", "columns": {}}]}`,
		"trailing garbage":        `{"tag": "X"} {"tag": "Y"}`,
		"error of the wrong type": `{"tag": "X", "error": 42}`,
	}
	for name, content := range malformed {
		t.Run(name, func(t *testing.T) {
			ddl, err := ParseDDLMessage([]byte(content))
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("ParseDDLMessage(%s) = %v, %v; want ErrMalformed", content, ddl, err)
			}
		})
	}
}

// FuzzParseDDLMessage feeds arbitrary content to ParseDDLMessage: errors
// must be ErrMalformed or a *CaptureError, and a result must not alias the
// input.
func FuzzParseDDLMessage(f *testing.F) {
	f.Add([]byte(itemsMessage))
	f.Add([]byte(`{"tag": "DROP TABLE", "tables": [], "dropped": [{"oid": 7, "schema": "s", "name": "t"}]}`))
	f.Add([]byte(`{"tag": "CREATE TABLE", "error": "boom"}`))
	f.Add([]byte(`{"tag": "X", "tables": [{"oid": 1, "schema": "a", "name": "b", "columns": [{"attnum": 1, "name": "c", "type_oid": 23, "identity": "x"}]}]}`))
	f.Fuzz(func(t *testing.T, content []byte) {
		in := bytes.Clone(content)
		ddl, err := ParseDDLMessage(in)
		var ce *CaptureError
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.As(err, &ce) {
				t.Fatalf("error is neither ErrMalformed nor a CaptureError: %v", err)
			}
			return
		}
		if ddl.Tag == "" || !bytes.Equal(ddl.JSON, content) {
			t.Fatalf("tag %q, JSON %q", ddl.Tag, ddl.JSON)
		}
		before := renderDDL(ddl)
		for i := range in {
			in[i] ^= 0xFF
		}
		if after := renderDDL(ddl); after != before {
			t.Fatalf("the result aliases the input:\n%s\n%s", before, after)
		}
	})
}

// The pipeline the queue tests decode for, and its queue table.
const (
	queuePipeline = "orders"
	queueID       = 16900
)

// announceQueue announces a queue table of pipeline's name as relation id.
func announceQueue(id uint32, pipeline string) []byte {
	return relationMsg(id, "decant", QueueTable(pipeline), 'd', relCol{flags: 1, name: "id", oid: 20, typmod: -1}, relCol{name: "event", oid: 25, typmod: -1})
}

// queueInsert is the capture's insert of content into queue relation id.
func queueInsert(id uint32, content string) []byte { return insertMsg(id, text("1"), text(content)) }

// withQueue makes d decode for queuePipeline, whose queue table (queueID)
// was vouched for, and announces it.
func withQueue(t testing.TB, d *Decoder) *Decoder {
	t.Helper()
	d.Pipeline, d.Queue = queuePipeline, queueID
	mustDecode(t, d, announceQueue(queueID, queuePipeline))
	return d
}

func TestDecodeDDLQueue(t *testing.T) {
	t.Run("a row of the queue becomes a change", func(t *testing.T) {
		d := withQueue(t, inTxn(t))
		data := queueInsert(queueID, itemsMessage)
		ev := mustDecode(t, d, data)
		if ev.Kind != EventChange || ev.Change.Op != source.OpDDL || ev.Change.Rel != nil {
			t.Fatalf("event %+v, want an OpDDL change", ev)
		}
		if !reflect.DeepEqual(ev.Change.DDL, itemsDDL) {
			t.Errorf("got  %s\nwant %s", renderDDL(ev.Change.DDL), renderDDL(itemsDDL))
		}
		for i := range data {
			data[i] = 'x'
		}
		if string(ev.Change.DDL.JSON) != itemsMessage || ev.Change.DDL.Tables[0].Columns[0].Name != "id" {
			t.Error("the change aliases the message buffer")
		}
		if !d.InTxn() {
			t.Error("the transaction closed")
		}
	})
	t.Run("a row of a queue decant could not vouch for is untrusted", func(t *testing.T) {
		for name, d := range map[string]*Decoder{
			"no queue vouched for": func() *Decoder { d := withQueue(t, inTxn(t)); d.Queue = 0; return d }(),
			"another relation":     func() *Decoder { d := withQueue(t, inTxn(t)); d.Queue = queueID + 1; return d }(),
		} {
			ev := mustDecode(t, d, queueInsert(queueID, itemsMessage))
			if ev.Kind != EventChange || ev.Change.Op != source.OpDDL || ev.Change.DDL.Untrusted == "" || ev.Change.DDL.Tag != "" || ev.Change.DDL.Tables != nil {
				t.Errorf("%s: event %+v DDL %+v, want an untrusted OpDDL change with nothing else", name, ev, ev.Change.DDL)
			}
		}
	})
	t.Run("the capture's delete and other pipelines' queues are nothing", func(t *testing.T) {
		d := withQueue(t, inTxn(t))
		mustDecode(t, d, announceQueue(queueID+1, "billing"))
		for name, data := range map[string][]byte{
			"delete":           deleteMsg(queueID, 'K', text("1"), null),
			"update":           updateMsg(queueID, 0, nil, text("1"), text(itemsMessage)),
			"another's insert": queueInsert(queueID+1, itemsMessage),
			"another's delete": deleteMsg(queueID+1, 'K', text("1"), null),
		} {
			if ev := mustDecode(t, d, data); ev.Kind != EventNone {
				t.Errorf("%s: event kind %d, want EventNone", name, ev.Kind)
			}
		}
	})
	t.Run("malformed", func(t *testing.T) {
		_, err := withQueue(t, inTxn(t)).Decode(queueInsert(queueID, `{"tag": `))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), fmt.Sprint("xid ", xid1)) {
			t.Errorf("error %v, want ErrMalformed naming xid %d", err, xid1)
		}
		_, err = withQueue(t, inTxn(t)).Decode(insertMsg(queueID, text("1"), null))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("a row without its event: error %v, want ErrMalformed", err)
		}
	})
	t.Run("capture failed", func(t *testing.T) {
		_, err := withQueue(t, inTxn(t)).Decode(queueInsert(queueID, `{"tag": "ALTER TABLE", "statement": "ALTER TABLE t ADD c int", "error": "boom"}`))
		var ce *CaptureError
		if !errors.As(err, &ce) || errors.Is(err, ErrMalformed) {
			t.Fatalf("error %v, want a *CaptureError", err)
		}
		if want := `DDL capture failed on the source for "ALTER TABLE": boom`; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	})
}

// TestDecodeDDLMessage checks that a "decant.ddl" message, which any role
// can write, is never read for what it says: it becomes an untrusted
// change, whatever it holds.
func TestDecodeDDLMessage(t *testing.T) {
	for name, content := range map[string]string{
		"a description":     itemsMessage,
		"a capture error":   `{"tag": "ALTER TABLE", "error": "boom"}`,
		"malformed":         `{"tag": `,
		"no pipeline named": `{"tag": "DROP TABLE", "dropped": [{"oid": 16390, "schema": "app", "name": "items"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			d := withQueue(t, inTxn(t))
			ev := mustDecode(t, d, logicalMsg(true, 0x100, DDLMessagePrefix, content))
			if ev.Kind != EventChange || ev.Change.Op != source.OpDDL || ev.Change.DDL.Untrusted != untrustedMessage {
				t.Fatalf("event %+v, want an untrusted OpDDL change", ev)
			}
			if got := *ev.Change.DDL; !reflect.DeepEqual(got, source.DDL{Untrusted: untrustedMessage}) {
				t.Errorf("DDL %+v carries more than why it is untrusted", got)
			}
		})
	}

	ignored := []struct {
		name          string
		inTxn         bool
		transactional bool
		prefix        string
		content       string
	}{
		{"non-transactional", true, false, DDLMessagePrefix, "not json"},
		{"non-transactional between transactions", false, false, DDLMessagePrefix, "not json"},
		{"another prefix", true, true, "decant.ddl.v2", "not json"},
		{"the old capture's fence", true, true, fencePrefix, ""},
		{"another pipeline's", true, true, DDLMessagePrefix, `{"pipeline": "billing", "tag": "DROP TABLE"}`},
	}
	for _, tt := range ignored {
		t.Run(tt.name, func(t *testing.T) {
			d := withQueue(t, idle(t))
			if tt.inTxn {
				mustDecode(t, d, beginTxn())
			}
			if ev := mustDecode(t, d, logicalMsg(tt.transactional, 0x100, tt.prefix, tt.content)); ev.Kind != EventNone {
				t.Errorf("event kind %d, want EventNone", ev.Kind)
			}
		})
	}

	t.Run("outside a transaction", func(t *testing.T) {
		_, err := idle(t).Decode(logicalMsg(true, 0x100, DDLMessagePrefix, itemsMessage))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("error %v, want ErrMalformed", err)
		}
	})
	t.Run("truncated content", func(t *testing.T) {
		data := logicalMsg(true, 0x100, DDLMessagePrefix, itemsMessage)
		if _, err := inTxn(t).Decode(data[:len(data)-10]); !errors.Is(err, ErrMalformed) {
			t.Errorf("error %v, want ErrMalformed", err)
		}
	})
}

func TestLikePattern(t *testing.T) {
	for in, want := range map[string]string{
		"public":   "'public'",
		"*":        "'%'",
		"order_*":  "'order!_%'",
		"100%_!x*": "'100!%!_!!x%'",
		"it's":     "'it''s'",
		"a*b*":     "'a%b%'",
	} {
		if got := likePattern(in); got != want {
			t.Errorf("likePattern(%q) = %s, want %s", in, got, want)
		}
	}
}

func renderDDL(d *source.DDL) string {
	if d == nil {
		return "<nil>"
	}
	return fmt.Sprintf("tag %q statement %q search_path %q tables %s dropped %+v json %d bytes",
		d.Tag, d.Statement, d.SearchPath, renderDefs(d.Tables), d.Dropped, len(d.JSON))
}

func renderDefs(defs []*source.TableDef) string {
	parts := make([]string, len(defs))
	for i, d := range defs {
		parts[i] = renderDef(d)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func renderDef(d *source.TableDef) string {
	if d == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s (", d.OID, d.Name)
	for i, c := range d.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%+v", c)
	}
	fmt.Fprintf(&b, ") pk %q uniques %+v indexes %+v", d.PrimaryKey, d.Uniques, d.Indexes)
	return b.String()
}
