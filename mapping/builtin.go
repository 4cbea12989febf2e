package mapping

import (
	"fmt"

	"github.com/decant/decant/source"
)

// OIDs of PostgreSQL's built-in types (pg_type.dat) that mapping treats
// specially. They are fixed across PostgreSQL versions.
const (
	oidBool        = 16
	oidBytea       = 17
	oidChar        = 18 // "char": one byte
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidOID         = 26
	oidTID         = 27
	oidXID         = 28
	oidCID         = 29
	oidJSON        = 114
	oidXML         = 142
	oidPoint       = 600
	oidLseg        = 601
	oidPath        = 602
	oidBox         = 603
	oidPolygon     = 604
	oidLine        = 628
	oidCIDR        = 650
	oidFloat4      = 700
	oidFloat8      = 701
	oidCircle      = 718
	oidMacaddr8    = 774
	oidMoney       = 790
	oidMacaddr     = 829
	oidInet        = 869
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidInterval    = 1186
	oidTimetz      = 1266
	oidBit         = 1560
	oidVarbit      = 1562
	oidNumeric     = 1700
	oidUUID        = 2950
	oidPgLSN       = 3220
	oidTSVector    = 3614
	oidTSQuery     = 3615
	oidJSONB       = 3802
	oidJSONPath    = 4072
	oidXID8        = 5069
)

// builtinScalar is a built-in base type and its array type.
type builtinScalar struct {
	oid, array uint32
	name       string
}

var builtinScalars = [...]builtinScalar{
	{oidBool, 1000, "bool"},
	{oidBytea, 1001, "bytea"},
	{oidChar, 1002, "char"},
	{oidName, 1003, "name"},
	{oidInt8, 1016, "int8"},
	{oidInt2, 1005, "int2"},
	{oidInt4, 1007, "int4"},
	{oidText, 1009, "text"},
	{oidOID, 1028, "oid"},
	{oidTID, 1010, "tid"},
	{oidXID, 1011, "xid"},
	{oidCID, 1012, "cid"},
	{oidJSON, 199, "json"},
	{oidXML, 143, "xml"},
	{oidPoint, 1017, "point"},
	{oidLseg, 1018, "lseg"},
	{oidPath, 1019, "path"},
	{oidBox, 1020, "box"},
	{oidPolygon, 1027, "polygon"},
	{oidLine, 629, "line"},
	{oidCIDR, 651, "cidr"},
	{oidFloat4, 1021, "float4"},
	{oidFloat8, 1022, "float8"},
	{oidCircle, 719, "circle"},
	{oidMacaddr8, 775, "macaddr8"},
	{oidMoney, 791, "money"},
	{oidMacaddr, 1040, "macaddr"},
	{oidInet, 1041, "inet"},
	{oidBpchar, 1014, "bpchar"},
	{oidVarchar, 1015, "varchar"},
	{oidDate, 1182, "date"},
	{oidTime, 1183, "time"},
	{oidTimestamp, 1115, "timestamp"},
	{oidTimestamptz, 1185, "timestamptz"},
	{oidInterval, 1187, "interval"},
	{oidTimetz, 1270, "timetz"},
	{oidBit, 1561, "bit"},
	{oidVarbit, 1563, "varbit"},
	{oidNumeric, 1231, "numeric"},
	{oidUUID, 2951, "uuid"},
	{oidPgLSN, 3221, "pg_lsn"},
	{oidTSVector, 3643, "tsvector"},
	{oidTSQuery, 3645, "tsquery"},
	{oidJSONB, 3807, "jsonb"},
	{oidJSONPath, 4073, "jsonpath"},
	{oidXID8, 271, "xid8"},
}

// builtinRange is a built-in range type, its multirange, and their arrays.
type builtinRange struct {
	oid, array, subtype uint32
	multi, multiArray   uint32
	name, multiName     string
}

var builtinRanges = [...]builtinRange{
	{3904, 3905, oidInt4, 4451, 6150, "int4range", "int4multirange"},
	{3926, 3927, oidInt8, 4536, 6157, "int8range", "int8multirange"},
	{3906, 3907, oidNumeric, 4532, 6151, "numrange", "nummultirange"},
	{3912, 3913, oidDate, 4535, 6155, "daterange", "datemultirange"},
	{3908, 3909, oidTimestamp, 4533, 6152, "tsrange", "tsmultirange"},
	{3910, 3911, oidTimestamptz, 4534, 6153, "tstzrange", "tstzmultirange"},
}

// BuiltinType returns the description of a built-in PostgreSQL type by OID
// (nil if unknown). It covers every base type family decant maps, the
// built-in range and multirange types, and the array type of each. Each
// call returns a new value; the caller may keep or change it.
func BuiltinType(oid uint32) *source.Type {
	for _, b := range builtinScalars {
		switch oid {
		case b.oid:
			return &source.Type{OID: b.oid, Name: b.name, Kind: source.KindBase}
		case b.array:
			return arrayOf(b.array, BuiltinType(b.oid))
		}
	}
	for _, r := range builtinRanges {
		switch oid {
		case r.oid:
			return &source.Type{OID: r.oid, Name: r.name, Kind: source.KindRange, Elem: BuiltinType(r.subtype)}
		case r.multi:
			return &source.Type{OID: r.multi, Name: r.multiName, Kind: source.KindMultirange, Elem: BuiltinType(r.subtype)}
		case r.array:
			return arrayOf(r.array, BuiltinType(r.oid))
		case r.multiArray:
			return arrayOf(r.multiArray, BuiltinType(r.multi))
		}
	}
	return nil
}

// arrayOf names an array type as pg_type does: "_" and the element's name.
func arrayOf(oid uint32, elem *source.Type) *source.Type {
	return &source.Type{OID: oid, Name: "_" + elem.Name, Kind: source.KindArray, Elem: elem}
}

// TypeOf returns info if set (a reader describes user-defined types), else
// the built-in type with that OID, else an error naming the OID.
func TypeOf(oid uint32, info *source.Type) (*source.Type, error) {
	if info != nil {
		return info, nil
	}
	if t := BuiltinType(oid); t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("unsupported source type OID %d (leave the column out with exclude: in the config file's columns section, or change its type on the source)", oid)
}

// maxTypeDepth bounds how deep domains, arrays, composites and ranges may
// nest inside one another, so a cyclic description cannot loop forever.
const maxTypeDepth = 32

// underlying resolves domains to their base type and the base's typmod.
// A domain column's own typmod is -1; the domain carries the base's.
func underlying(t *source.Type, typmod int32) (*source.Type, int32, error) {
	for i := 0; t != nil && t.Kind == source.KindDomain; i++ {
		if t.Base == nil || i == maxTypeDepth {
			return nil, 0, fmt.Errorf("domain %s has no usable base type", t.Name)
		}
		t, typmod = t.Base, t.BaseMod
	}
	return t, typmod, nil
}

// typeName is how messages name a source type: the element's name and
// "[]" for arrays, else the type's own name.
func typeName(t *source.Type) string {
	if t == nil {
		return "unknown type"
	}
	if t.Kind == source.KindArray && t.Elem != nil {
		return typeName(t.Elem) + "[]"
	}
	if t.Name == "" {
		return fmt.Sprintf("type OID %d", t.OID)
	}
	return t.Name
}
