package mapping

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// docTypes are the user types the mapping document's examples name.
var docTypes = map[string]*source.Type{
	"mood":   {OID: 16600, Name: "public.mood", Kind: source.KindEnum, Labels: []string{"sad", "ok", "happy"}},
	"posint": {OID: 16601, Name: "public.posint", Kind: source.KindDomain, Base: BuiltinType(oidInt4), BaseMod: -1},
	"price":  {OID: 16602, Name: "public.price", Kind: source.KindDomain, Base: BuiltinType(oidNumeric), BaseMod: 5<<16 | 2 + 4},
	"pair": {OID: 16603, Name: "public.pair", Kind: source.KindComposite,
		Fields: fieldsOf("a", oidInt4, "b", oidText)},
}

// sqlNames maps SQL spellings to pg_type names where they differ.
var sqlNames = map[string]string{
	"boolean": "bool", "smallint": "int2", "integer": "int4", "bigint": "int8",
	"real": "float4", "double precision": "float8", "char": "bpchar", `"char"`: "char",
}

// docRow is one row of the document's type table.
type docRow struct {
	line       int
	pg, mysql  string
	oid        uint32
	typmod     int32
	info       *source.Type
	conversion string
}

// TestTypeMappingDoc checks that docs/type-mapping.md's table is what
// MySQLType does, and that it has a row for every built-in type family.
func TestTypeMappingDoc(t *testing.T) {
	rows := readDocTable(t, "../docs/type-mapping.md")
	if len(rows) < 50 {
		t.Fatalf("found %d rows in the type table, want one per type family", len(rows))
	}
	covered := map[uint32]bool{}
	for _, r := range rows {
		got, err := MySQLType(r.oid, r.typmod, r.info)
		if err != nil || got != r.mysql {
			t.Errorf("line %d: MySQLType(%s) = %q, %v; the document says %q", r.line, r.pg, got, err, r.mysql)
		}
		if r.conversion == "" {
			t.Errorf("line %d: %s has no value conversion", r.line, r.pg)
		}
		covered[r.oid] = true
	}
	for _, b := range builtinScalars {
		if !covered[b.oid] {
			t.Errorf("the document has no row for %s", b.name)
		}
	}
	for _, r := range builtinRanges {
		if !covered[r.oid] || !covered[r.multi] {
			t.Errorf("the document lacks %s or %s", r.name, r.multiName)
		}
	}
}

// readDocTable parses the first table whose header starts with
// PostgreSQL | MySQL/MariaDB; the first two cells of each row hold a code
// span each.
func readDocTable(t *testing.T, path string) []docRow {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []docRow
	inTable := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		cells := strings.Split(strings.Trim(line, "|"), "|")
		switch {
		case !inTable:
			inTable = len(cells) >= 2 && strings.TrimSpace(cells[0]) == "PostgreSQL" && strings.TrimSpace(cells[1]) == "MySQL/MariaDB"
		case strings.HasPrefix(line, "|---"):
		case !strings.HasPrefix(line, "|"):
			return rows
		default:
			rows = append(rows, docRowOf(t, n, cells))
		}
	}
	if !inTable {
		t.Fatalf("%s has no PostgreSQL | MySQL/MariaDB table", path)
	}
	return rows
}

func docRowOf(t *testing.T, line int, cells []string) docRow {
	r := docRow{line: line, pg: codeSpan(cells[0]), mysql: codeSpan(cells[1])}
	if len(cells) > 2 {
		r.conversion = strings.TrimSpace(cells[2])
	}
	var ok bool
	if r.oid, r.typmod, r.info, ok = parseSpelling(r.pg); !ok {
		t.Errorf("line %d: cannot read PostgreSQL type %q", line, r.pg)
	}
	return r
}

func codeSpan(cell string) string {
	cell = strings.TrimSpace(cell)
	if len(cell) < 2 || cell[0] != '`' || cell[len(cell)-1] != '`' {
		return "(not a code span: " + cell + ")"
	}
	return cell[1 : len(cell)-1]
}

// parseSpelling reads "name", "name(n)", "name(p,s)" or any of these with
// "[]" into an OID, typmod and, for the document's user types, Info.
func parseSpelling(s string) (oid uint32, typmod int32, info *source.Type, ok bool) {
	if elem, isArray := strings.CutSuffix(s, "[]"); isArray {
		eoid, _, einfo, ok := parseSpelling(elem)
		switch {
		case !ok:
			return 0, 0, nil, false
		case einfo != nil:
			arr := typeArray(einfo)
			return arr.OID, -1, arr, true
		}
		for _, b := range builtinScalars {
			if b.oid == eoid {
				return b.array, -1, nil, true
			}
		}
		return 0, 0, nil, false
	}
	if ut, found := docTypes[s]; found {
		return ut.OID, -1, ut, true
	}
	name, args, _ := strings.Cut(strings.TrimSuffix(s, ")"), "(")
	if n, found := sqlNames[name]; found {
		name = n
	}
	oid, found := oidByName(name)
	if !found {
		return 0, 0, nil, false
	}
	typmod, ok = typmodOf(oid, args)
	return oid, typmod, nil, ok
}

func oidByName(name string) (uint32, bool) {
	for _, b := range builtinScalars {
		if b.name == name {
			return b.oid, true
		}
	}
	for _, r := range builtinRanges {
		switch name {
		case r.name:
			return r.oid, true
		case r.multiName:
			return r.multi, true
		}
	}
	return 0, false
}

// typmodOf encodes type arguments as PostgreSQL's atttypmod does.
func typmodOf(oid uint32, args string) (int32, bool) {
	if args == "" {
		return -1, true
	}
	var nums []int32
	for _, a := range strings.Split(args, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(a))
		if err != nil {
			return 0, false
		}
		nums = append(nums, int32(n))
	}
	switch oid {
	case oidVarchar, oidBpchar:
		return nums[0] + 4, len(nums) == 1
	case oidNumeric:
		if len(nums) == 1 {
			nums = append(nums, 0)
		}
		return (nums[0]<<16 | nums[1]&0x7ff) + 4, len(nums) == 2
	case oidTime, oidTimetz, oidTimestamp, oidTimestamptz, oidBit, oidVarbit:
		return nums[0], len(nums) == 1
	}
	return 0, false
}
