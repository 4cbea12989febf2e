package mapping

import (
	"errors"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// col is a source column of a built-in type.
func col(oid uint32, typmod int32) source.Column {
	return source.Column{Name: "c", Type: oid, TypeMod: typmod}
}

// infoCol is a source column of a user-defined type.
func infoCol(info *source.Type) source.Column {
	return source.Column{Name: "c", Type: info.OID, TypeMod: -1, Info: info}
}

// mycol describes a nullable target column from its COLUMN_TYPE the way
// information_schema.COLUMNS does.
func mycol(columnType string) MySQLColumn {
	ct := strings.ToLower(columnType)
	dt := ct
	if i := strings.IndexAny(ct, "( "); i >= 0 {
		dt = ct[:i]
	}
	c := MySQLColumn{Name: "c", DataType: dt, ColumnType: ct, Nullable: true}
	p := typeParams(ct)
	switch dt {
	case "char", "varchar", "binary", "varbinary":
		c.MaxLength = int64(p[0])
	case "decimal":
		c.Precision, c.Scale = p[0], p[1]
	case "datetime", "timestamp", "time":
		c.DatetimePrecision = param(p, 0, 0)
	case "bit":
		c.Precision = p[0]
	}
	return c
}

func notNull(c MySQLColumn) MySQLColumn {
	c.Nullable = false
	return c
}

// Fixture user-defined types.
var (
	moodType = &source.Type{OID: 16500, Name: "public.mood", Kind: source.KindEnum,
		Labels: []string{"sad", "ok", `it's "great"`}}
	innerType = &source.Type{OID: 16510, Name: "public.inner_t", Kind: source.KindComposite,
		Fields: []source.Field{{Name: "x", Type: BuiltinType(oidText), TypeMod: -1}, {Name: "y", Type: BuiltinType(oidInt4), TypeMod: -1}}}
	outerType = &source.Type{OID: 16520, Name: "public.outer_t", Kind: source.KindComposite,
		Fields: []source.Field{
			{Name: "n", Type: BuiltinType(oidInt4), TypeMod: -1},
			{Name: "tags", Type: BuiltinType(1009), TypeMod: -1},
			{Name: "inner_v", Type: innerType, TypeMod: -1},
			{Name: "span", Type: BuiltinType(3904), TypeMod: -1},
			{Name: "doc", Type: BuiltinType(oidJSONB), TypeMod: -1},
			{Name: "m", Type: moodType, TypeMod: -1},
		}}
	// price is a domain over numeric(5,2); its column typmod is -1.
	priceType = &source.Type{OID: 16530, Name: "public.price", Kind: source.KindDomain,
		Base: BuiltinType(oidNumeric), BaseMod: 5<<16 | 2 + 4}
)

func typeArray(elem *source.Type) *source.Type {
	return &source.Type{OID: elem.OID + 1, Name: "_" + elem.Name, Kind: source.KindArray, Elem: elem}
}

func TestParsePolicy(t *testing.T) {
	for _, p := range []Policy{PolicyError, PolicyNull, PolicyClamp} {
		got, err := ParsePolicy(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePolicy(%q) = %v, %v", p.String(), got, err)
		}
	}
	_, err := ParsePolicy("round")
	if err == nil || !strings.Contains(err.Error(), "error, null or clamp") {
		t.Errorf("ParsePolicy(round) error %v, want the choices listed", err)
	}
}

func TestUnrepresentableError(t *testing.T) {
	var err error = &Unrepresentable{Rule: "numeric NaN has no DECIMAL value"}
	if got := err.Error(); got != "unrepresentable value: numeric NaN has no DECIMAL value" {
		t.Errorf("Error() = %q", got)
	}
}

func TestBuiltinType(t *testing.T) {
	tests := []struct {
		oid  uint32
		name string
		kind source.TypeKind
		elem string
	}{
		{16, "bool", source.KindBase, ""},
		{1000, "_bool", source.KindArray, "bool"},
		{1700, "numeric", source.KindBase, ""},
		{1231, "_numeric", source.KindArray, "numeric"},
		{5069, "xid8", source.KindBase, ""},
		{271, "_xid8", source.KindArray, "xid8"},
		{3220, "pg_lsn", source.KindBase, ""},
		{3904, "int4range", source.KindRange, "int4"},
		{3905, "_int4range", source.KindArray, "int4range"},
		{4534, "tstzmultirange", source.KindMultirange, "timestamptz"},
		{6153, "_tstzmultirange", source.KindArray, "tstzmultirange"},
		{3615, "tsquery", source.KindBase, ""},
		{791, "_money", source.KindArray, "money"},
	}
	for _, tt := range tests {
		got := BuiltinType(tt.oid)
		if got == nil || got.OID != tt.oid || got.Name != tt.name || got.Kind != tt.kind {
			t.Errorf("BuiltinType(%d) = %+v, want %s kind %d", tt.oid, got, tt.name, tt.kind)
			continue
		}
		if (tt.elem == "") != (got.Elem == nil) || (got.Elem != nil && got.Elem.Name != tt.elem) {
			t.Errorf("BuiltinType(%d).Elem = %+v, want %q", tt.oid, got.Elem, tt.elem)
		}
	}
	for _, oid := range []uint32{0, 2205, 22, 1033, 16500} { // regclass, int2vector, aclitem, a user type
		if got := BuiltinType(oid); got != nil {
			t.Errorf("BuiltinType(%d) = %+v, want nil", oid, got)
		}
	}
	if BuiltinType(23) == BuiltinType(23) {
		t.Error("BuiltinType returns a shared value")
	}
}

func TestTypeOf(t *testing.T) {
	if got, err := TypeOf(16500, moodType); got != moodType || err != nil {
		t.Errorf("TypeOf with info = %v, %v", got, err)
	}
	if got, err := TypeOf(25, nil); err != nil || got.Name != "text" {
		t.Errorf("TypeOf(25) = %v, %v", got, err)
	}
	_, err := TypeOf(2205, nil)
	if err == nil || err.Error() != "unsupported source type OID 2205 (leave the column out with exclude: in the config file's columns section, or change its type on the source)" {
		t.Errorf("TypeOf(2205) error = %v", err)
	}
}

func TestMySQLType(t *testing.T) {
	tests := []struct {
		name   string
		oid    uint32
		typmod int32
		info   *source.Type
		want   string
	}{
		{"numeric(12,4)", oidNumeric, 12<<16 | 4 + 4, nil, "DECIMAL(12,4)"},
		{"numeric(65,30)", oidNumeric, 65<<16 | 30 + 4, nil, "DECIMAL(65,30)"},
		{"numeric(66,2) too precise", oidNumeric, 66<<16 | 2 + 4, nil, "DECIMAL(65,2)"},
		{"numeric(1000,0)", oidNumeric, 1000<<16 | 0 + 4, nil, "DECIMAL(65,0)"},
		{"numeric(40,35) too many fraction digits", oidNumeric, 40<<16 | 35 + 4, nil, "DECIMAL(35,30)"},
		{"numeric(1000,500)", oidNumeric, 1000<<16 | 500 + 4, nil, "DECIMAL(65,30)"},
		{"numeric(64,-5)", oidNumeric, 64<<16 | (-5 & 0x7ff) + 4, nil, "DECIMAL(65,0)"},
		{"numeric(3,-2) negative scale", oidNumeric, 3<<16 | (-2 & 0x7ff) + 4, nil, "DECIMAL(5,0)"},
		{"numeric(2,5) scale above precision", oidNumeric, 2<<16 | 5 + 4, nil, "DECIMAL(5,5)"},
		{"numeric", oidNumeric, -1, nil, "DECIMAL(65,30)"},
		{"varchar(16383)", oidVarchar, 16383 + 4, nil, "VARCHAR(16383)"},
		{"varchar(16384)", oidVarchar, 16384 + 4, nil, "MEDIUMTEXT"},
		{"varchar(10485760)", oidVarchar, 10485760 + 4, nil, "LONGTEXT"},
		{"varchar", oidVarchar, -1, nil, "LONGTEXT"},
		{"char(255)", oidBpchar, 255 + 4, nil, "CHAR(255)"},
		{"char(256)", oidBpchar, 256 + 4, nil, "TEXT"},
		{"char(20000)", oidBpchar, 20000 + 4, nil, "MEDIUMTEXT"},
		{"bpchar", oidBpchar, -1, nil, "LONGTEXT"},
		{"time(0)", oidTime, 0, nil, "TIME(0)"},
		{"timetz(3)", oidTimetz, 3, nil, "TIME(3)"},
		{"timestamptz", oidTimestamptz, -1, nil, "DATETIME(6)"},
		{"bit(64)", oidBit, 64, nil, "VARCHAR(64)"},
		{"varbit", oidVarbit, -1, nil, "LONGTEXT"},
		{"enum", moodType.OID, -1, moodType, `ENUM('sad','ok','it''s "great"')`},
		{"enum label with backslash", 1, -1, &source.Type{Kind: source.KindEnum, Labels: []string{`a\b`}}, `ENUM('a\\b')`},
		{"domain over numeric(5,2)", priceType.OID, -1, priceType, "DECIMAL(5,2)"},
		{"domain over a domain", 1, -1, &source.Type{Kind: source.KindDomain, Base: priceType, BaseMod: -1}, "DECIMAL(5,2)"},
		{"enum[]", 1, -1, typeArray(moodType), "JSON"},
		{"composite", outerType.OID, -1, outerType, "JSON"},
		{"extension base type", 17000, -1, &source.Type{OID: 17000, Name: "public.citext", Kind: source.KindBase}, "LONGTEXT"},
		{"user-described built-in", oidInt4, -1, &source.Type{OID: oidInt4, Name: "int4", Kind: source.KindBase}, "INT"},
	}
	for _, tt := range tests {
		got, err := MySQLType(tt.oid, tt.typmod, tt.info)
		if err != nil || got != tt.want {
			t.Errorf("%s: MySQLType = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestMySQLTypeErrors(t *testing.T) {
	tests := []struct {
		name string
		oid  uint32
		info *source.Type
		want string
	}{
		{"unknown OID", 2205, nil, "unsupported source type OID 2205 (leave the column out with exclude: in the config file's columns section, or change its type on the source)"},
		{"enum without labels", 1, &source.Type{Name: "public.none", Kind: source.KindEnum}, "enum public.none has no labels"},
		{"domain without base", 1, &source.Type{Name: "public.d", Kind: source.KindDomain}, "domain public.d has no usable base type"},
	}
	for _, tt := range tests {
		_, err := MySQLType(tt.oid, -1, tt.info)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
	cyclic := &source.Type{Name: "public.loop", Kind: source.KindDomain}
	cyclic.Base = cyclic
	if _, err := MySQLType(1, -1, cyclic); err == nil {
		t.Error("a domain over itself gave no error")
	}
}

func TestMySQLConverterPairErrors(t *testing.T) {
	tests := []struct {
		name string
		src  source.Column
		tgt  MySQLColumn
		want string
	}{
		{"bytea into INT", col(oidBytea, -1), mycol("int(11)"), "cannot write PostgreSQL bytea into MySQL int(11)"},
		{"date into INT", col(oidDate, -1), mycol("int(11)"), "cannot write PostgreSQL date into MySQL int(11)"},
		{"text into DATETIME", col(oidText, -1), mycol("datetime(6)"), "cannot write PostgreSQL text into MySQL datetime(6)"},
		{"jsonb into DECIMAL", col(oidJSONB, -1), mycol("decimal(10,2)"), "cannot write PostgreSQL jsonb into MySQL decimal(10,2)"},
		{"int4[] into INT", col(1007, -1), mycol("int(11)"), "cannot write PostgreSQL int4[] into MySQL int(11)"},
		{"timestamptz into TIME", col(oidTimestamptz, -1), mycol("time"), "cannot write PostgreSQL timestamptz into MySQL time"},
		{"text into BIT", col(oidText, -1), mycol("bit(8)"), "cannot write PostgreSQL text into MySQL bit(8)"},
		{"bool into YEAR", col(oidBool, -1), mycol("year(4)"), "cannot write PostgreSQL bool into MySQL year(4)"},
		{"int4 into ENUM", col(oidInt4, -1), mycol("enum('a')"), "cannot write PostgreSQL int4 into MySQL enum('a')"},
		{"unknown source OID", col(2205, -1), mycol("longtext"), "unsupported source type OID 2205 (leave the column out with exclude: in the config file's columns section, or change its type on the source)"},
		{"unknown target type", col(oidText, -1), mycol("geometry"), "unsupported MySQL type geometry"},
		{"generated target", col(oidText, -1), MySQLColumn{Name: "g", DataType: "text", Generated: true}, "target column g is generated"},
	}
	if _, err := MySQLConverter(col(oidText, -1), mycol("text"), Policy(9)); err == nil || err.Error() != "unknown policy policy(9)" {
		t.Errorf("an unknown policy gave %v", err)
	}
	for _, tt := range tests {
		c, err := MySQLConverter(tt.src, tt.tgt, PolicyError)
		if c != nil || err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: MySQLConverter error %v, want %q", tt.name, err, tt.want)
		}
		var u *Unrepresentable
		if errors.As(err, &u) {
			t.Errorf("%s: a pair error is not an Unrepresentable value", tt.name)
		}
	}
}

func TestParseLabels(t *testing.T) {
	got, err := parseLabels(`enum('a','b''c','d\\e','x y','')`)
	want := []string{"a", "b'c", `d\e`, "x y", ""}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("parseLabels = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"enum", "enum('a)", "enum(a)"} {
		if _, err := parseLabels(bad); err == nil {
			t.Errorf("parseLabels(%q) gave no error", bad)
		}
	}
}
