package mapping

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// toJSONText converts text of the column's type for a JSON target.
func toJSONText(src source.Column, text string) (string, error) {
	conv, err := MySQLConverter(src, mycol("json"), PolicyError)
	if err != nil {
		return "", err
	}
	v, err := conv([]byte(text))
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// The inputs are PostgreSQL 15's own output for these values.
func TestStructuredToJSON(t *testing.T) {
	tests := []struct {
		name string
		src  source.Column
		in   string
		want string
	}{
		// arrays
		{"int4[]", col(1007, -1), "{1,2,3}", "[1,2,3]"},
		{"empty", col(1007, -1), "{}", "[]"},
		{"nested", col(1007, -1), "{{1,2},{3,4}}", "[[1,2],[3,4]]"},
		{"lower bound", col(1007, -1), "[0:1]={1,2}", "[1,2]"},
		{"bounds of two dimensions", col(1007, -1), "[1:2][3:4]={{1,2},{3,4}}", "[[1,2],[3,4]]"},
		{"NULLs", col(1007, -1), "{NULL,1,NULL}", "[null,1,null]"},
		{"text quoting and escapes", col(1009, -1), `{"a b","c\"d","e\\f",NULL,"NULL",""," x "}`, `["a b","c\"d","e\\f",null,"NULL",""," x "]`},
		{"quoted null-like strings", col(1009, -1), `{" NULL","null"}`, `[" NULL","null"]`},
		{"control characters and unicode", col(1009, -1), "{\"a\nb\",\"tab\there\",é😀,\"back\\\\slash\",\"{brace}\",semi;colon}",
			`["a\nb","tab\there","é😀","back\\slash","{brace}","semi;colon"]`},
		{"text of two dimensions", col(1009, -1), "{{a,b},{c,d}}", `[["a","b"],["c","d"]]`},
		{"numeric specials", col(1231, -1), "{1.5,NaN,Infinity,-Infinity}", `[1.5,"NaN","Infinity","-Infinity"]`},
		{"float8 specials", col(1022, -1), "{Infinity,-Infinity,NaN,-0,1e-320}", `["Infinity","-Infinity","NaN",-0,1e-320]`},
		{"bool", col(1000, -1), "{t,f,NULL}", "[true,false,null]"},
		{"jsonb embedded", col(3807, -1), `{"{\"a\": 1}","[1, 2]","null","\"x\""}`, `[{"a":1},[1,2],null,"x"]`},
		{"money as numbers", col(791, -1), `{"$1,234.56","-$0.50"}`, `[1234.56,-0.50]`},
		{"box delimiter", col(1020, -1), "{(1,1),(0,0);(2,2),(0,0)}", `["(1,1),(0,0)","(2,2),(0,0)"]`},
		{"point", col(1017, -1), `{"(1,2)",NULL}`, `["(1,2)",null]`},
		{"bytea", col(1001, -1), `{"\\x00ff"}`, `["\\x00ff"]`},
		{"timestamptz", col(1185, -1), `{"2024-01-01 00:00:00+00"}`, `["2024-01-01 00:00:00+00"]`},
		{"enum[]", infoCol(typeArray(moodType)), `{sad,"it's \"great\""}`, `["sad","it's \"great\""]`},
		{"range[]", col(3905, -1), `{"[1,3)",empty}`, `[{"lower":1,"upper":3,"lower_inc":true,"upper_inc":false},{"empty":true}]`},
		{"multirange[]", col(6150, -1), `{"{[1,3),[5,7)}","{}"}`,
			`[[{"lower":1,"upper":3,"lower_inc":true,"upper_inc":false},{"lower":5,"upper":7,"lower_inc":true,"upper_inc":false}],[]]`},
		{"domain element", infoCol(typeArray(priceType)), "{1.50,NULL}", "[1.50,null]"},
		{"array of composites", infoCol(typeArray(innerType)), `{"(a,1)","(,)",NULL}`, `[{"x":"a","y":1},{"x":null,"y":null},null]`},

		// composites
		{"composite with NULL and quoted fields", infoCol(&source.Type{Name: "public.r", Kind: source.KindComposite, Fields: fieldsOf(
			"a", oidInt4, "b", oidText, "c", oidText, "d", oidText, "e", oidText, "f", oidText, "g", oidText)}),
			`(1,"x y",,"","a""b","c\\d","(x)")`, `{"a":1,"b":"x y","c":null,"d":"","e":"a\"b","f":"c\\d","g":"(x)"}`},
		{"nested composite", infoCol(outerType),
			`(1,"{a,""b c"",NULL}","(""a,b"",)","[1,5)","{""k"": [1, 2]}","it's ""great""")`,
			`{"n":1,"tags":["a","b c",null],"inner_v":{"x":"a,b","y":null},"span":{"lower":1,"upper":5,"lower_inc":true,"upper_inc":false},"doc":{"k":[1,2]},"m":"it's \"great\""}`},
		{"nested composite with empty parts", infoCol(outerType), `(1,{x},,empty,,sad)`,
			`{"n":1,"tags":["x"],"inner_v":null,"span":{"empty":true},"doc":null,"m":"sad"}`},
		{"empty string and NULL", infoCol(innerType), `("",)`, `{"x":"","y":null}`},
		{"one NULL field", infoCol(&source.Type{Name: "public.one", Kind: source.KindComposite, Fields: fieldsOf("v", oidInt4)}), `()`, `{"v":null}`},
		{"no fields", infoCol(&source.Type{Name: "public.none", Kind: source.KindComposite}), `()`, `{}`},
		{"quotes inside an unquoted field", infoCol(innerType), `(a"b,c"d,1)`, `{"x":"ab,cd","y":1}`},

		// ranges
		{"int4range", col(3904, -1), "[1,5)", `{"lower":1,"upper":5,"lower_inc":true,"upper_inc":false}`},
		{"empty range", col(3904, -1), "empty", `{"empty":true}`},
		{"unbounded", col(3904, -1), "(,)", `{"lower":null,"upper":null,"lower_inc":false,"upper_inc":false}`},
		{"daterange upper unbounded", col(3912, -1), "[2024-01-01,)", `{"lower":"2024-01-01","upper":null,"lower_inc":true,"upper_inc":false}`},
		{"tsrange quoted bounds", col(3908, -1), `["2024-01-01 00:00:00","2024-01-02 00:00:00")`,
			`{"lower":"2024-01-01 00:00:00","upper":"2024-01-02 00:00:00","lower_inc":true,"upper_inc":false}`},
		{"tstzrange lower unbounded", col(3910, -1), `(,"2024-01-01 00:00:00+00")`,
			`{"lower":null,"upper":"2024-01-01 00:00:00+00","lower_inc":false,"upper_inc":false}`},
		{"numrange inclusive", col(3906, -1), "[1.5,2.5]", `{"lower":1.5,"upper":2.5,"lower_inc":true,"upper_inc":true}`},

		// multiranges
		{"int4multirange", col(4451, -1), "{[1,3),[5,7)}",
			`[{"lower":1,"upper":3,"lower_inc":true,"upper_inc":false},{"lower":5,"upper":7,"lower_inc":true,"upper_inc":false}]`},
		{"empty multirange", col(4451, -1), "{}", "[]"},
		{"datemultirange", col(4535, -1), "{[2024-01-01,2024-02-01), [2024-03-01,)}",
			`[{"lower":"2024-01-01","upper":"2024-02-01","lower_inc":true,"upper_inc":false},{"lower":"2024-03-01","upper":null,"lower_inc":true,"upper_inc":false}]`},
	}
	for _, tt := range tests {
		got, err := toJSONText(tt.src, tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%s: %q gave %s, %v; want %s", tt.name, tt.in, got, err, tt.want)
			continue
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("%s: %s is not valid JSON", tt.name, got)
		}
	}
}

// fieldsOf builds composite fields from name, OID pairs.
func fieldsOf(pairs ...any) []source.Field {
	var fs []source.Field
	for i := 0; i < len(pairs); i += 2 {
		fs = append(fs, source.Field{Name: pairs[i].(string), Type: BuiltinType(uint32(pairs[i+1].(int))), TypeMod: -1})
	}
	return fs
}

func TestStructuredToJSONMalformed(t *testing.T) {
	tests := []struct {
		src source.Column
		in  string
	}{
		{col(1007, -1), ""},
		{col(1007, -1), "{1,2"},
		{col(1007, -1), "{1,2}}"},
		{col(1007, -1), "{1,,2}"},
		{col(1007, -1), `{"a}`},
		{col(1007, -1), "[0:1{1,2}"},
		{col(1007, -1), "{{{{{{{1}}}}}}}"},
		{col(1000, -1), "{yes}"},
		{col(3807, -1), `{"{oops"}`},
		{infoCol(innerType), "(a,1,2)"},
		{infoCol(innerType), "(a"},
		{infoCol(innerType), "a,1"},
		{infoCol(innerType), "(a,1)x"},
		{col(3904, -1), "[1,5"},
		{col(3904, -1), "1,5"},
		{col(3904, -1), "[1,5)x"},
		{col(4451, -1), "{[1,3)[5,7)}"},
		{col(4451, -1), "{[1,3),}"},
		{col(4451, -1), "{[1,3)"},
	}
	for _, tt := range tests {
		got, err := toJSONText(tt.src, tt.in)
		if err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("type %d %q gave %s, %v; want a malformed-text error", tt.src.Type, tt.in, got, err)
		}
	}
}

// FuzzArrayToJSON feeds arbitrary text as arrays of several element types:
// it must never panic, and what it accepts must be valid JSON.
func FuzzArrayToJSON(f *testing.F) {
	for _, s := range []string{"{1,2,3}", "{{1,2},{3,4}}", "[0:1]={1,2}", `{"a b","c\"d",NULL,""}`, "{}",
		`{"{\"a\": 1}",null}`, "{(1,1),(0,0);(2,2),(0,0)}", `{"[1,3)",empty}`, `{"(a,1)","(,)"}`} {
		f.Add(s)
	}
	srcs := []source.Column{col(1007, -1), col(1009, -1), col(1231, -1), col(3807, -1), col(1020, -1), col(3905, -1), col(6150, -1), infoCol(typeArray(innerType))}
	f.Fuzz(func(t *testing.T, text string) {
		for _, src := range srcs {
			checkFuzzJSON(t, src, text)
		}
	})
}

// FuzzCompositeToJSON does the same for composite text, with fields of
// nested composite, array, range and json types.
func FuzzCompositeToJSON(f *testing.F) {
	for _, s := range []string{`(1,"x y",)`, `(1,"{a,""b c"",NULL}","(""a,b"",)","[1,5)","{""k"": [1, 2]}",sad)`,
		`(1,{x},,empty,,sad)`, `()`, `("",)`, `(a"b,c"d,1)`} {
		f.Add(s)
	}
	srcs := []source.Column{infoCol(outerType), infoCol(innerType), col(3904, -1), col(4535, -1)}
	f.Fuzz(func(t *testing.T, text string) {
		for _, src := range srcs {
			checkFuzzJSON(t, src, text)
		}
	})
}

func checkFuzzJSON(t *testing.T, src source.Column, text string) {
	got, err := toJSONText(src, text)
	if err != nil {
		if !strings.Contains(err.Error(), "malformed") {
			t.Fatalf("type %d: error %v is not about malformed text", src.Type, err)
		}
		return
	}
	if !json.Valid([]byte(got)) {
		t.Fatalf("type %d: %q gave invalid JSON %s", src.Type, text, got)
	}
}
