package source

import "testing"

func TestIsDecantOrigin(t *testing.T) {
	tests := []struct {
		origin string
		want   bool
	}{
		{"decant_orders", true},
		{"decant_orders.3", true},
		{"", false},
		{"pg_16385", false},
		{"decant", false},
		{"xdecant_orders", false},
	}
	for _, tt := range tests {
		if got := IsDecantOrigin(tt.origin); got != tt.want {
			t.Errorf("IsDecantOrigin(%q) = %v, want %v", tt.origin, got, tt.want)
		}
	}
}
