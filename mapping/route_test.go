package mapping

import (
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

func TestRouter(t *testing.T) {
	rules := func(specs ...string) []Rule {
		var out []Rule
		for _, s := range specs {
			r, err := ParseRule(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	tn := func(schema, name string) source.TableName { return source.TableName{Schema: schema, Name: name} }
	tests := []struct {
		name  string
		rules []Rule
		flat  bool
		in    source.TableName
		want  source.TableName
	}{
		{"postgres default keeps schema", nil, false, tn("sales", "orders"), tn("sales", "orders")},
		{"mysql default drops schema", nil, true, tn("sales", "orders"), tn("", "orders")},
		{"wildcard prefix", rules("sales.*=sales_*"), true, tn("sales", "orders"), tn("", "sales_orders")},
		{"wildcard does not match other schema", rules("sales.*=sales_*"), true, tn("public", "orders"), tn("", "orders")},
		{"explicit database", rules("public.orders=shop.orders"), true, tn("public", "orders"), tn("shop", "orders")},
		{"postgres rule without schema keeps source schema", rules("public.*=x_*"), false, tn("public", "a"), tn("public", "x_a")},
		{"schema capture", rules("*.audit=audit_*"), true, tn("billing", "audit"), tn("", "audit_billing")},
		{"two captures in order", rules("*.*=*_*"), true, tn("a", "b"), tn("", "a_b")},
		{"first matching rule wins", rules("public.orders=first", "public.*=second_*"), true, tn("public", "orders"), tn("", "first")},
		{"star matches empty", rules("s.t*=x*"), true, tn("s", "t"), tn("", "x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewRouter(tt.rules, tt.flat).Route(tt.in); got != tt.want {
				t.Errorf("Route(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseRuleErrors(t *testing.T) {
	for _, spec := range []string{"", "orders=x", "a.b", "a.b=", "a.b=c.d.e", "a.b=*", "=x"} {
		if _, err := ParseRule(spec); err == nil {
			t.Errorf("ParseRule(%q) accepted", spec)
		}
	}
}

func TestCollisions(t *testing.T) {
	tables := []source.TableName{{Schema: "public", Name: "orders"}, {Schema: "sales", Name: "orders"}, {Schema: "sales", Name: "items"}}
	err := NewRouter(nil, true).CheckCollisions(tables)
	if err == nil || !strings.Contains(err.Error(), "public.orders and sales.orders all map to orders") {
		t.Fatalf("collision not reported: %v", err)
	}
	r, _ := ParseRule("sales.*=sales_*")
	if err := NewRouter([]Rule{r}, true).CheckCollisions(tables); err != nil {
		t.Errorf("a --map rule should resolve it: %v", err)
	}
	if err := NewRouter(nil, false).CheckCollisions(tables); err != nil {
		t.Errorf("PostgreSQL keeps schemas apart: %v", err)
	}
}

func TestPlanColumnRules(t *testing.T) {
	rel := &source.Relation{Schema: "public", Name: "t", Identity: source.IdentityDefault, Columns: []source.Column{
		{Name: "id", Key: true}, {Name: "secret"}, {Name: "old"}, {Name: "v"},
	}}
	tgt := TargetTable{Name: source.TableName{Name: "t"}, Columns: []TargetColumn{{Name: "id"}, {Name: "new"}, {Name: "v"}}}
	p, err := NewPlan(rel, tgt, ColumnRules{Rename: map[string]string{"old": "new"}, Exclude: []string{"secret"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range p.Targets {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, ","); got != "id,,new,v" {
		t.Errorf("target names = %q", got)
	}
	if len(p.Cols) != 3 || p.Cols[1] != 2 || len(p.Key) != 1 || p.Key[0] != 0 {
		t.Errorf("Cols %v Key %v", p.Cols, p.Key)
	}
	_, err = NewPlan(rel, tgt, ColumnRules{Exclude: []string{"id", "secret", "old"}})
	if err == nil || !strings.Contains(err.Error(), "id identifies rows") {
		t.Errorf("excluding a key column: %v", err)
	}
}
