package pgoutput

import (
	"testing"

	"github.com/decant/decant/source"
)

func TestCreatePublicationSQL(t *testing.T) {
	tables := []source.TableName{{Schema: "public", Name: "pgbench_history"}, {Schema: "Audit", Name: "log"}}
	tests := []struct {
		name, publish string
		tables        []source.TableName
		want          string
	}{
		{"p", "", tables, `CREATE PUBLICATION "p" FOR TABLE "public"."pgbench_history", "Audit"."log" WITH (publish_via_partition_root = true)`},
		{"p_append_only", appendOnlyPublish, tables[:1], `CREATE PUBLICATION "p_append_only" FOR TABLE "public"."pgbench_history" WITH (publish_via_partition_root = true, publish = 'insert, truncate')`},
		// Every table may be append-only, or none: a publication of no table.
		{"p_append_only", appendOnlyPublish, nil, `CREATE PUBLICATION "p_append_only" WITH (publish_via_partition_root = true, publish = 'insert, truncate')`},
	}
	for _, tt := range tests {
		if got := createPublicationSQL(tt.name, tt.publish, tt.tables); got != tt.want {
			t.Errorf("createPublicationSQL(%s, %q, %v):\n got %s\nwant %s", tt.name, tt.publish, tt.tables, got, tt.want)
		}
	}
	if got := AppendOnlyPublication("decant"); got != "decant_append_only" {
		t.Errorf("AppendOnlyPublication(decant) = %s", got)
	}
}
