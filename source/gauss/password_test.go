package gauss

import (
	"strings"
	"testing"
)

func TestWithPassword(t *testing.T) {
	for _, pw := range []string{"secret", "p@ss:w/rd?#%&=", "ünï cödé"} {
		dsn, err := WithPassword("gaussdb://repl@db.example:8000/shop?connect_timeout=3", pw)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseDSN(dsn)
		if err != nil {
			t.Fatalf("%q: %v", pw, err)
		}
		if cfg.Password != pw || cfg.User != "repl" || cfg.Host != "db.example" || cfg.Database != "shop" || cfg.ConnectTimeout.Seconds() != 3 {
			t.Errorf("%q: parsed back as %+v", pw, cfg)
		}
	}
	for _, dsn := range []string{"gaussdb://repl:old@h/db", "gaussdb://h/db", "gaussdb://repl@h:x/db%zz"} {
		_, err := WithPassword(dsn, "new")
		if err == nil {
			t.Errorf("%s: accepted", dsn)
		} else if strings.Contains(err.Error(), "old") || strings.Contains(err.Error(), "new") {
			t.Errorf("%s: the error quotes a password: %v", dsn, err)
		}
	}
}
