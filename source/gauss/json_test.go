package gauss

import (
	"encoding/json"
	"testing"

	"github.com/decant/decant/source"
)

func TestMarshalJSON(t *testing.T) {
	for _, tc := range []struct {
		rec  Record
		want string
	}{
		{Record{Kind: KindBegin, LSN: 0xCFE5C80, CSN: 2357, FirstLSN: 0xCFE5C80, Xid: 78108, HasXid: true, Time: "2025-11-22 16:09:34+08", User: "alice"},
			`{"kind":"begin","lsn":"0/CFE5C80","csn":2357,"xid":78108,"first_lsn":"0/CFE5C80","time":"2025-11-22 16:09:34+08","user":"alice"}`},
		{Record{Kind: KindCommit, LSN: 0xCFE5E68, CSN: 7},
			`{"kind":"commit","lsn":"0/CFE5E68","csn":7}`},
		{Record{Kind: KindUpdate, Schema: "public", Table: "t<1>", New: []Column{
			{Name: "id", Type: 23, TypeName: "integer", Value: []byte("3")},
			{Name: "n", Type: 25, Null: true},
			{Name: "big", Type: 25, Unchanged: true},
			{Name: "rowno", Type: 20, Rowno: true, RowNo: 42},
			{Name: "bad", Type: 25, Value: []byte("a\"\n\xff")},
		}, Old: []Column{}},
			`{"kind":"update","schema":"public","table":"t<1>","new":[{"name":"id","type":23,"type_name":"integer","value":"3"},{"name":"n","type":25,"value":null},{"name":"big","type":25,"value":null,"unchanged":true},{"name":"rowno","type":20,"value":null,"rowno":42},{"name":"bad","type":25,"value":"a\"\n\ufffd"}],"old":[]}`},
		{Record{Kind: KindTruncate, Truncated: []source.TableName{{Schema: "s", Name: "a"}, {Schema: "s", Name: "b"}}, Cascade: true},
			`{"kind":"truncate","truncated":["s.a","s.b"],"cascade":true}`},
		{Record{Kind: KindDDL, DDL: "DROP TABLE t", DDLJSON: []byte(`{"fmt":"DROP TABLE t"}`)},
			`{"kind":"ddl","ddl":"DROP TABLE t","ddl_json":{"fmt":"DROP TABLE t"}}`},
		{Record{Kind: KindHeartbeat, HeartbeatRead: 1, HeartbeatFlush: 2, HeartbeatTime: -3},
			`{"kind":"heartbeat","heartbeat":{"read":1,"flush":2,"time":-3}}`},
		{Record{Kind: KindPosition, PositionCSN: 1, PositionLSN: 2, PositionTime: 3},
			`{"kind":"position","position":{"csn":1,"lsn":2,"time":3}}`},
	} {
		got, err := tc.rec.MarshalJSON()
		if err != nil || string(got) != tc.want || !json.Valid(got) {
			t.Errorf("got  %s (%v)\nwant %s", got, err, tc.want)
		}
	}
}
