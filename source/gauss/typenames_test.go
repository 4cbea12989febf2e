package gauss

import "testing"

func TestTypeOID(t *testing.T) {
	for name, oid := range map[string]uint32{
		"integer": 23, "bigint": 20, "smallint": 21, "tinyint": 5545, "boolean": 16, "text": 25,
		"character varying": 1043, "character": 1042, "name": 19, "numeric": 1700, "real": 700,
		"double precision": 701, "money": 790, "bytea": 17, "date": 1082,
		"time without time zone": 1083, "time with time zone": 1266,
		"timestamp without time zone": 1114, "timestamp with time zone": 1184, "interval": 1186,
		"uuid": 2950, "json": 114, "jsonb": 3802, "xml": 142, "inet": 869, "cidr": 650,
		"macaddr": 829, "bit": 1560, "bit varying": 1562, "oid": 26, "tsvector": 3614, "tsquery": 3615,
		"integer[]": 1007, "text[]": 1009, "character varying[]": 1015, "bigint[]": 1016, `"char"`: 18,
	} {
		got, ok := TypeOID(name)
		if !ok || got != oid {
			t.Errorf("TypeOID(%q) = %d, %v; want %d", name, got, ok, oid)
		}
	}
	for _, unknown := range []string{"clob", "int4", "mood", "public.mood", "character varying(10)"} {
		if oid, ok := TypeOID(unknown); ok {
			t.Errorf("TypeOID(%q) = %d, want unknown", unknown, oid)
		}
	}
}

// TestTypeNameInverse: every listed name and OID appears once, so TypeName
// and TypeOID are inverse.
func TestTypeNameInverse(t *testing.T) {
	names, oids := map[string]bool{}, map[uint32]bool{}
	for _, tn := range typeNames {
		if names[tn.name] || oids[tn.oid] {
			t.Errorf("duplicate %q / %d", tn.name, tn.oid)
		}
		names[tn.name], oids[tn.oid] = true, true
		if name, ok := TypeName(tn.oid); !ok || name != tn.name {
			t.Errorf("TypeName(%d) = %q", tn.oid, name)
		}
	}
}
