package source

import (
	"strings"
	"testing"
)

func TestParseLSN(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want LSN
		text string // String() of the result
	}{
		{"zero", "0/0", 0, "0/0"},
		{"typical", "16/B374D848", 0x16_B374D848, "16/B374D848"},
		{"low half only", "0/1", 1, "0/1"},
		{"high half only", "1/0", 1 << 32, "1/0"},
		{"lower case hex", "16/b374d848", 0x16_B374D848, "16/B374D848"},
		{"leading zeros", "00000016/0000D848", 0x16_0000D848, "16/D848"},
		{"maximum", "FFFFFFFF/FFFFFFFF", ^LSN(0), "FFFFFFFF/FFFFFFFF"},
		{"low half max", "0/FFFFFFFF", 0xFFFFFFFF, "0/FFFFFFFF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLSN(tt.in)
			if err != nil {
				t.Fatalf("ParseLSN(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseLSN(%q) = %#x, want %#x", tt.in, uint64(got), uint64(tt.want))
			}
			if s := got.String(); s != tt.text {
				t.Errorf("String() = %q, want %q", s, tt.text)
			}
		})
	}
}

func TestParseLSNInvalid(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"no slash", "16B374D848"},
		{"slash only", "/"},
		{"missing high", "/B374D848"},
		{"missing low", "16/"},
		{"two slashes", "1/2/3"},
		{"not hex high", "G/0"},
		{"not hex low", "0/XYZ"},
		{"high overflows 32 bits", "100000000/0"},
		{"low overflows 32 bits", "0/100000000"},
		{"negative", "-1/0"},
		{"plus sign", "+1/0"},
		{"hex prefix", "0x1/0"},
		{"leading space", " 1/0"},
		{"trailing space", "1/0 "},
		{"underscore", "1_0/0"},
		{"decimal point", "1.5/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLSN(tt.in)
			if err == nil {
				t.Fatalf("ParseLSN(%q) = %s, want an error", tt.in, got)
			}
			if got != 0 {
				t.Errorf("ParseLSN(%q) returned %s along with its error, want 0", tt.in, got)
			}
			if !strings.Contains(err.Error(), "invalid LSN") {
				t.Errorf("error %q does not say \"invalid LSN\"", err)
			}
		})
	}
}

func TestLSNStringRoundTrip(t *testing.T) {
	for _, l := range []LSN{0, 1, 0xFF, 0xFFFFFFFF, 1 << 32, 0x1_00000001, 0x16_B374D848, 0xDEADBEEF_00C0FFEE, ^LSN(0), ^LSN(0) - 1} {
		t.Run(l.String(), func(t *testing.T) {
			got, err := ParseLSN(l.String())
			if err != nil {
				t.Fatalf("ParseLSN(%q): %v", l.String(), err)
			}
			if got != l {
				t.Errorf("round trip of %#x gave %#x", uint64(l), uint64(got))
			}
			v, err := l.Value()
			if err != nil {
				t.Fatalf("Value: %v", err)
			}
			if v != l.String() {
				t.Errorf("Value() = %#v, want %q", v, l.String())
			}
			var scanned LSN
			if err := scanned.Scan(v); err != nil {
				t.Fatalf("Scan(%#v): %v", v, err)
			}
			if scanned != l {
				t.Errorf("Scan(Value()) = %#x, want %#x", uint64(scanned), uint64(l))
			}
		})
	}
}

func TestLSNScan(t *testing.T) {
	const junk = LSN(0xABCD) // what the target held before Scan
	tests := []struct {
		name    string
		src     any
		want    LSN
		wantErr bool
	}{
		{"string", "16/B374D848", 0x16_B374D848, false},
		{"bytes", []byte("1/2"), 1<<32 | 2, false},
		{"nil is zero", nil, 0, false},
		{"empty string", "", 0, true},
		{"bad string", "nope", 0, true},
		{"bad bytes", []byte("1/2/3"), 0, true},
		{"int", 42, junk, true},
		{"int64", int64(42), junk, true},
		{"uint64", uint64(42), junk, true},
		{"LSN itself", LSN(42), junk, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := junk
			err := l.Scan(tt.src)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Scan(%#v) error = %v, want error: %v", tt.src, err, tt.wantErr)
			}
			if l != tt.want {
				t.Errorf("Scan(%#v) left %#x, want %#x", tt.src, uint64(l), uint64(tt.want))
			}
		})
	}
}

func TestLSNOrder(t *testing.T) {
	// LSNs compare as integers: the high half dominates.
	a, err := ParseLSN("1/FFFFFFFF")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseLSN("2/0")
	if err != nil {
		t.Fatal(err)
	}
	if !(a < b) || b-a != 1 {
		t.Errorf("1/FFFFFFFF = %#x, 2/0 = %#x: want consecutive positions", uint64(a), uint64(b))
	}
}
