package gauss

// Type names in the text and JSON formats are format_type_be(typid)
// without a typmod, as openGauss prints them (format_type.cpp): SQL
// spellings for the types with special grammar ("integer", "character
// varying", "timestamp with time zone"), quote_identifier(typname) for the
// rest ("json", `"char"`), element name plus "[]" for arrays. The server
// rewrites "clob" to "text" before printing. OIDs are openGauss's
// (src/include/catalog/pg_type.h); they equal PostgreSQL's where both
// have the type.

type typeName struct {
	name string
	oid  uint32
}

// typeNames lists the built-in types decant can map; arrays follow their
// element types.
var typeNames = []typeName{
	{"boolean", 16}, {"bytea", 17}, {`"char"`, 18}, {"name", 19}, {"bigint", 20},
	{"smallint", 21}, {"integer", 23}, {"regproc", 24}, {"text", 25}, {"oid", 26},
	{"tid", 27}, {"xid", 28}, {"cid", 29}, {"int16", 34}, {"raw", 86}, {"blob", 88},
	{"json", 114}, {"xml", 142}, {"point", 600}, {"lseg", 601}, {"path", 602},
	{"box", 603}, {"polygon", 604}, {"line", 628}, {"cidr", 650}, {"real", 700},
	{"double precision", 701}, {"abstime", 702}, {"reltime", 703}, {"tinterval", 704},
	{"circle", 718}, {"money", 790}, {"macaddr", 829}, {"inet", 869},
	{"character", 1042}, {"character varying", 1043}, {"date", 1082},
	{"time without time zone", 1083}, {"timestamp without time zone", 1114},
	{"timestamp with time zone", 1184}, {"interval", 1186},
	{"time with time zone", 1266}, {"bit", 1560}, {"bit varying", 1562},
	{"numeric", 1700}, {"regclass", 2205}, {"regtype", 2206}, {"uuid", 2950},
	{"tsvector", 3614}, {"tsquery", 3615}, {"jsonb", 3802}, {"int4range", 3904},
	{"numrange", 3906}, {"tsrange", 3908}, {"tstzrange", 3910}, {"daterange", 3912},
	{"int8range", 3926}, {"nvarchar2", 3969}, {"tinyint", 5545}, {"smalldatetime", 9003},
	{"hll", 4301},

	{"boolean[]", 1000}, {"bytea[]", 1001}, {`"char"[]`, 1002}, {"name[]", 1003},
	{"smallint[]", 1005}, {"integer[]", 1007}, {"text[]", 1009}, {"tid[]", 1010},
	{"xid[]", 1011}, {"cid[]", 1012}, {"character[]", 1014},
	{"character varying[]", 1015}, {"bigint[]", 1016}, {"point[]", 1017},
	{"real[]", 1021}, {"double precision[]", 1022}, {"oid[]", 1028},
	{"macaddr[]", 1040}, {"inet[]", 1041}, {"cidr[]", 651}, {"money[]", 791},
	{"xml[]", 143}, {"json[]", 199}, {"timestamp without time zone[]", 1115},
	{"date[]", 1182}, {"time without time zone[]", 1183},
	{"timestamp with time zone[]", 1185}, {"interval[]", 1187}, {"numeric[]", 1231},
	{"int16[]", 1234}, {"time with time zone[]", 1270}, {"bit[]", 1561},
	{"bit varying[]", 1563}, {"uuid[]", 2951}, {"tsvector[]", 3643},
	{"tsquery[]", 3645}, {"jsonb[]", 3807}, {"nvarchar2[]", 3968},
	{"tinyint[]", 5546}, {"smalldatetime[]", 9005}, {"raw[]", 87}, {"blob[]", 3201},
}

var (
	oidByTypeName = func() map[string]uint32 {
		m := make(map[string]uint32, len(typeNames))
		for _, t := range typeNames {
			m[t.name] = t.oid
		}
		return m
	}()
	typeNameByOID = func() map[uint32]string {
		m := make(map[uint32]string, len(typeNames))
		for _, t := range typeNames {
			m[t.oid] = t.name
		}
		return m
	}()
)

// TypeOID is the OID of a built-in type named as the text and JSON formats
// print it ("integer", "character varying", "text[]"). User-defined types
// and types decant does not know report false.
func TypeOID(name string) (uint32, bool) {
	oid, ok := oidByTypeName[name]
	return oid, ok
}

// TypeName is the inverse of TypeOID: the name the text and JSON formats
// print for a built-in type OID.
func TypeName(oid uint32) (string, bool) {
	name, ok := typeNameByOID[oid]
	return name, ok
}
