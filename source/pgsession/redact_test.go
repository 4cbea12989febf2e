package pgsession

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"host=h user=u password=hunter2 dbname=d":                  "host=h user=u password=xxxxx dbname=d",
		"host=h password = hunter2 dbname=d":                       "host=h password = xxxxx dbname=d",
		"host=h password= hunter2":                                 "host=h password= xxxxx",
		"host=h password ='hun ter\\'2' dbname=d":                  "host=h password =xxxxx dbname=d",
		`host=h password=hun\ ter2 dbname=d`:                       "host=h password=xxxxx dbname=d",
		"host=h sslpassword=hunter2 PGPASSWORD=hunter3":            "host=h sslpassword=xxxxx PGPASSWORD=xxxxx",
		"postgres://u:hunter2@h/db":                                "postgres://u:xxxxx@h/db",
		"postgres://u:hun@ter2@h/db":                               "postgres://u:xxxxx@h/db",
		"postgres://u:hun/ter2@h/db":                               "postgres://u:xxxxx@h/db",
		`parse "mysql://u:hun ter2@h/db": invalid userinfo`:        `parse "mysql://u:xxxxx@h/db": invalid userinfo`,
		"postgres://h:5432/db refused\nuser@example":               "postgres://h:5432/db refused\nuser@example",
		"postgres://me@corp:hunter2@h/db":                          "postgres://me@corp:xxxxx@h/db",
		`cannot parse "postgres://u:hunter2@h/db": bad`:            `cannot parse "postgres://u:xxxxx@h/db": bad`,
		"postgres://h:5432/db?sslmode=require":                     "postgres://h:5432/db?sslmode=require",
		"postgres://u@h/db?password=hunter2":                       "postgres://u@h/db?password=xxxxx",
		"from postgres://a:pw1@h1/d to mysql://b:pw2@h2/d":         "from postgres://a:xxxxx@h1/d to mysql://b:xxxxx@h2/d",
		"u:hun@ter2@tcp(h:3306)/db":                                "u:xxxxx@tcp(h:3306)/db",
		"open u:hunter2@unix(/s.sock)/db":                          "open u:xxxxx@unix(/s.sock)/db",
		"u:hunter2@/db":                                            "u:xxxxx@/db",
		"https://hooks.example/x?token=abc&b=1":                    "https://hooks.example/x?token=xxxxx",
		"no secret here: host=h port=5432":                         "no secret here: host=h port=5432",
		"lost the connection to the target: unexpected EOF (read)": "lost the connection to the target: unexpected EOF (read)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

func TestDSNError(t *testing.T) {
	dsn := "postgres://u:pa/ss@h/db"
	err := DSNError(dsn, errors.New(`parse "postgres://u:pa": unquoted "pa/ss" near "u:pa/ss"`))
	if strings.Contains(err.Error(), "pa/ss") {
		t.Errorf("DSNError = %q: the password is still there", err)
	}
	short := DSNError("host=h password=abc", errors.New("bad abc at password=abc"))
	if want := "bad abc at password=xxxxx"; short.Error() != want {
		t.Errorf("DSNError = %q, want %q (a password under 4 bytes is masked only where Redact finds it)", short, want)
	}
}

// TestParseDSNKeyValueWithURL is the DSN whose value holds "://": it is
// a key=value DSN, and its error names no scheme.
func TestParseDSNKeyValueWithURL(t *testing.T) {
	_, err := ParseDSN("host=h user=u password=hunter2 port=x application_name=a://b")
	if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "scheme") {
		t.Errorf("ParseDSN error = %v, want an invalid-port error without the password", err)
	}
}

// FuzzRedact checks that no DSN holding a password, in any form decant
// reads (libpq key=value, postgres:// and mysql:// URLs with the
// password raw or escaped, the MySQL driver's form), leaks it through
// Redact, through Redact of a message holding the DSN (Go-quoted, as
// *url.Error prints a URL, for the URL and driver forms), or through
// ParseDSN's error.
func FuzzRedact(f *testing.F) {
	f.Add(uint8(0), "u", "hunter2", "h", uint8(0))
	f.Add(uint8(0), "u", "hun ter'2\\", "h", uint8(5))
	f.Add(uint8(1), "u", "hun@ter2", "h", uint8(0))
	f.Add(uint8(1), "u@corp", "hun/ter?2#", "h:x", uint8(0))
	f.Add(uint8(2), "u", "p@ss w:rd", "h", uint8(0))
	f.Add(uint8(3), "u", "hunter2", "h", uint8(0))
	f.Add(uint8(4), "u", "hun@ter2", "h:3306", uint8(0))
	f.Fuzz(func(t *testing.T, form uint8, user, password, host string, style uint8) {
		if len(password) < 4 {
			t.Skip("a short password can occur by chance in the rest")
		}
		dsn, ok := buildDSN(form, user, password, host, style)
		if !ok {
			t.Skip("no DSN of this form can hold this password raw")
		}
		control, _ := buildDSN(form, user, strings.Repeat("Q", len(password)), host, style)
		for _, check := range []func(string) string{
			Redact,
			func(d string) string { return Redact(fmt.Sprintf("connect to %s: refused", d)) },
			func(d string) string {
				if form%5 == 0 {
					return "" // nothing Go-quotes a key=value DSN, whose escapes quoting doubles
				}
				return Redact(fmt.Sprintf("parse %q: bad", d)) // as *url.Error prints a URL
			},
			func(d string) string {
				if _, err := ParseDSN(d); err != nil {
					return err.Error()
				}
				return ""
			},
		} {
			if got := check(dsn); strings.Contains(got, password) && !strings.Contains(check(control), password) {
				t.Fatalf("DSN %q: %q holds the password %q", dsn, got, password)
			}
		}
	})
}

// buildDSN writes a DSN of one of five forms holding password; style
// picks the spacing and quoting. ok is false when the form cannot hold
// the password as it is: a raw URL password with a line break or a
// "://" (a second URL), a raw driver password with a space or quote.
func buildDSN(form uint8, user, password, host string, style uint8) (string, bool) {
	switch form % 5 {
	case 0: // libpq key=value
		sep := []string{"=", " =", "= ", " = "}[style%4]
		pw := "password" + sep + kvQuote(password)
		if style&4 != 0 {
			pw = "password" + sep + kvEscape(password)
		}
		pairs := []string{"host=" + kvQuote(host), "user=" + kvQuote(user), "dbname=db"}
		at := int(style>>3) % (len(pairs) + 1)
		pairs = append(pairs[:at], append([]string{pw}, pairs[at:]...)...)
		return strings.Join(pairs, " "), true
	case 1, 3: // URL, password raw
		if strings.ContainsAny(password, "\n\r") || strings.Contains(password, "://") {
			return "", false
		}
		scheme := map[uint8]string{1: "postgres", 3: "mysql"}[form%5]
		return scheme + "://" + url.PathEscape(user) + ":" + password + "@" + host + "/db", true
	case 2: // URL, password escaped
		return (&url.URL{Scheme: "postgres", User: url.UserPassword(user, password), Host: host, Path: "/db"}).String(), true
	default: // the MySQL driver's DSN
		if strings.ContainsAny(password, " \t\n\r\v\f\"'`") || strings.HasPrefix(password, "//") {
			return "", false
		}
		return url.PathEscape(user) + ":" + password + "@tcp(" + host + ")/db", true
	}
}

// kvQuote is v as a quoted libpq keyword value.
func kvQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// kvEscape is v as an unquoted libpq keyword value.
func kvEscape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if strings.IndexByte(" \t\n\r\v\f\\'", v[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
