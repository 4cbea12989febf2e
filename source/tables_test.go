package source

import (
	"strings"
	"testing"
)

func TestParseTableFilterString(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // String() of the parsed filter
	}{
		{"empty", "", ""},
		{"blank", "   ", ""},
		{"only commas", ", ,,", ""},
		{"one", "public.orders", "public.orders"},
		{"list", "public.*,sales.orders,*.audit", "public.*,sales.orders,*.audit"},
		{"spaces trimmed", "  public.* ,\tsales.orders\n, *.audit ", "public.*,sales.orders,*.audit"},
		{"empty items skipped", ",public.*,,sales.orders,", "public.*,sales.orders"},
		{"stars everywhere", "*.*,a*b.*c*", "*.*,a*b.*c*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseTableFilter(tt.in)
			if err != nil {
				t.Fatalf("ParseTableFilter(%q): %v", tt.in, err)
			}
			if got := f.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseTableFilterInvalid(t *testing.T) {
	tests := []struct {
		name string
		in   string
		bad  string // the item the error must quote
	}{
		{"no dot", "orders", "orders"},
		{"bare star", "*", "*"},
		{"empty schema", ".orders", ".orders"},
		{"empty name", "public.", "public."},
		{"dot only", ".", "."},
		{"three parts", "db.public.orders", "db.public.orders"},
		{"three parts with stars", "*.*.*", "*.*.*"},
		{"bad item after good ones", "public.*, sales , *.audit", "sales"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseTableFilter(tt.in)
			if err == nil {
				t.Fatalf("ParseTableFilter(%q) = %q, want an error", tt.in, f.String())
			}
			if want := `invalid table pattern "` + tt.bad + `"`; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
			if f.String() != "" {
				t.Errorf("filter returned with the error is %q, want the empty filter", f.String())
			}
		})
	}
}

func TestTableFilterMatch(t *testing.T) {
	type probe struct {
		schema, name string
		want         bool
	}
	tests := []struct {
		name   string
		filter string
		probes []probe
	}{
		{"empty filter selects every user table", "", []probe{
			{"public", "orders", true},
			{"sales", "x", true},
			{"", "", true},
			{"pg_catalog", "pg_class", false},
			{"information_schema", "tables", false},
			{"pg_toast", "pg_toast_1234", false},
			{"pg_toast_temp_3", "pg_toast_1234", false},
			{"pg_temp_3", "t", false},
			{"decant", "checkpoint", false},
		}},
		{"documented list", "public.*,sales.orders,*.audit", []probe{
			{"public", "orders", true},
			{"public", "", true},
			{"sales", "orders", true},
			{"sales", "orders2", false},
			{"sales", "order", false},
			{"sales", "customers", false},
			{"hr", "audit", true},
			{"sales", "audit", true},
			{"hr", "audit_log", false},
			{"hr", "xaudit", false},
			{"publicx", "orders", false},
			{"Public", "orders", false}, // names are case sensitive
			{"pg_catalog", "audit", false},
			{"decant", "audit", false},
		}},
		{"star in the middle", "sales.order*_2024", []probe{
			{"sales", "order_2024", true},
			{"sales", "orders_2024", true},
			{"sales", "orders_eu_2024", true},
			{"sales", "orders_2023", false},
			{"sales", "orders_2024_old", false},
			{"sales", "xorders_2024", false},
			{"sales", "order2024", false},
		}},
		{"several stars", "s*.a*b*c", []probe{
			{"s", "abc", true},
			{"sales", "a1b2c", true},
			{"sales", "aXXbYYc", true},
			{"sales", "abcbc", true},
			{"sales", "acb", false},
			{"sales", "abcd", false},
			{"sales", "bc", false},
			{"x", "abc", false},
		}},
		{"adjacent stars", "a**.x**y", []probe{
			{"a", "xy", true},
			{"abc", "x-y", true},
			{"abc", "x-y-", false},
		}},
		{"star matches across repeats", "*.*_log_*", []probe{
			{"app", "a_log_b", true},
			{"app", "_log_", true},
			{"app", "x_log_log_y", true},
			{"app", "x_lo_g_y", false},
		}},
		{"exact only", "public.t", []probe{
			{"public", "t", true},
			{"public", "tt", false},
			{"public", "", false},
			{"", "t", false},
		}},
		{"match all", "*.*", []probe{
			{"public", "orders", true},
			{"a", "b", true},
			{"pg_catalog", "pg_class", false},
			{"information_schema", "columns", false},
			{"pg_toast", "pg_toast_16384", false},
			{"decant", "checkpoint", false},
		}},
		{"system schemas never match even when named", "pg_catalog.*,information_schema.tables,pg_toast*.*,decant.checkpoint,pg_*.*", []probe{
			{"pg_catalog", "pg_class", false},
			{"information_schema", "tables", false},
			{"pg_toast", "pg_toast_16384", false},
			{"pg_toast_temp_1", "x", false},
			{"decant", "checkpoint", false},
			{"pg_user_data", "t", true}, // not a system schema, and pg_* names it
		}},
		{"decant-like schemas are ordinary", "*.*", []probe{
			{"decant2", "t", true},
			{"xdecant", "t", true},
			{"catalog", "t", true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseTableFilter(tt.filter)
			if err != nil {
				t.Fatalf("ParseTableFilter(%q): %v", tt.filter, err)
			}
			for _, p := range tt.probes {
				if got := f.Match(p.schema, p.name); got != p.want {
					t.Errorf("filter %q: Match(%q, %q) = %v, want %v", tt.filter, p.schema, p.name, got, p.want)
				}
			}
		})
	}
}

func TestSystemSchema(t *testing.T) {
	tests := []struct {
		schema string
		want   bool
	}{
		{"pg_catalog", true},
		{"information_schema", true},
		{"pg_toast", true},
		{"pg_toast_temp_7", true},
		{"pg_temp_7", true},
		{"decant", true},
		{"public", false},
		{"Decant", false},
		{"decant_archive", false},
		{"pg_cron", false},
		{"", false},
	}
	for _, tt := range tests {
		t.Run(tt.schema, func(t *testing.T) {
			if got := SystemSchema(tt.schema); got != tt.want {
				t.Errorf("SystemSchema(%q) = %v, want %v", tt.schema, got, tt.want)
			}
		})
	}
}

func TestTableNameString(t *testing.T) {
	if got := (TableName{Schema: "sales", Name: "orders"}).String(); got != "sales.orders" {
		t.Errorf("String() = %q", got)
	}
}

func TestTableFilterUnmatched(t *testing.T) {
	names := []TableName{{"public", "pgbench_history"}, {"public", "orders"}, {"decant", "checkpoint"}, {"audit", "log_2024"}}
	tests := []struct {
		list  string
		empty bool
		want  string // Unmatched, comma-joined
	}{
		{"", true, ""},
		{"public.pgbench_history", false, ""},
		{"public.pgbench_hist", false, "public.pgbench_hist"},
		{"public.*,audit.log_*", false, ""},
		{"audit.log_*,sales.*,public.order", false, "sales.*,public.order"},
		// A system schema is never selected, so a pattern for one matches nothing.
		{"decant.*", false, "decant.*"},
	}
	for _, tt := range tests {
		f, err := ParseTableFilter(tt.list)
		if err != nil {
			t.Fatal(err)
		}
		if f.Empty() != tt.empty {
			t.Errorf("%q: Empty() = %v", tt.list, f.Empty())
		}
		if got := strings.Join(f.Unmatched(names), ","); got != tt.want {
			t.Errorf("%q: Unmatched = %q, want %q", tt.list, got, tt.want)
		}
	}
}
