package mysql

import (
	"strings"
	"testing"
)

func TestWithPassword(t *testing.T) {
	for _, dsn := range []string{
		"mysql://apply@db.example:3306/shop?timeout=5s",
		"apply@tcp(db.example:3306)/shop?timeout=5s",
	} {
		for _, pw := range []string{"secret", "p@ss:w/rd?#%&=", "ünï cödé"} {
			withPw, err := WithPassword(dsn, pw)
			if err != nil {
				t.Fatalf("%s: %v", dsn, err)
			}
			cfg, err := ParseDSN(withPw)
			if err != nil {
				t.Fatalf("%s with %q: %v", dsn, pw, err)
			}
			if cfg.Passwd != pw || cfg.User != "apply" || cfg.Addr != "db.example:3306" || cfg.DBName != "shop" || cfg.Timeout.Seconds() != 5 {
				t.Errorf("%s with %q: parsed back as user %q password %q addr %s db %s", dsn, pw, cfg.User, cfg.Passwd, cfg.Addr, cfg.DBName)
			}
		}
	}
	for _, dsn := range []string{"mysql://apply:old@h/db", "apply:old@tcp(h)/db", "mysql://h/db", "tcp(h)/db"} {
		_, err := WithPassword(dsn, "new")
		if err == nil {
			t.Errorf("%s: accepted", dsn)
		} else if strings.Contains(err.Error(), "old") || strings.Contains(err.Error(), "new") {
			t.Errorf("%s: the error quotes a password: %v", dsn, err)
		}
	}
}
