package pgsession

import (
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Redacted replaces every password Redact finds.
const Redacted = "xxxxx"

// minSecret is the shortest password DSNError also masks wherever it
// occurs in an error's text: a shorter one would mask ordinary words.
const minSecret = 4

var (
	// urlScheme starts a URL: postgres://, mysql://, gaussdb://, https://.
	urlScheme = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://`)
	// driverPassword is the password of a Go MySQL driver DSN,
	// user:PASSWORD@tcp(host)/db, user:PASSWORD@unix(sock)/db or
	// user:PASSWORD@/db. The driver splits at the last "@" before the
	// network, so the password may hold an "@".
	driverPassword = regexp.MustCompile("([^ \t\n\r\v\f\"'`:@/]*):([^ \t\n\r\v\f\"'`]*)@(tcp\\(|unix\\(|/)")
	// keyPassword is a key=value secret: libpq keyword DSNs
	// (password=x, password = x, password='x y'), URL query parameters
	// (?sslpassword=x), and any key ending in password, passwd, pwd,
	// secret, token or api_key. A value is read as libpq reads one:
	// quoted with backslash escapes, or unquoted up to a space, a
	// backslash escaping the next byte.
	keyPassword = regexp.MustCompile(`(?i)((?:^|[^A-Za-z0-9_])[A-Za-z0-9_]*(?:password|passwd|pwd|secret|token|api_?key)[ \t\n\r\v\f]*=[ \t\n\r\v\f]*)` +
		`('(?:\\[\s\S]?|[^'\\])*'?|(?:\\[\s\S]?|[^ \t\n\r\v\f\\])*)`)
)

// Redact masks the passwords of every DSN in text: the password of a
// URL's userinfo (scheme://user:PASSWORD@host), of a Go MySQL driver DSN
// (user:PASSWORD@tcp(host)), and the value of a password=, sslpassword=,
// passwd=, pwd=, secret=, token= or api_key= pair. It is the one
// redaction of decant: errors, logs, /readyz, status and webhooks all go
// through it. Where a malformed DSN makes the password's end unclear, it
// masks too much rather than too little.
func Redact(text string) string {
	out, _ := redact(text)
	return out
}

// DSNError is err, the error of parsing dsn, as text without dsn's
// passwords: Redact's, and in addition every occurrence of a password
// Redact finds in dsn (raw, decoded or Go-quoted), since a parser may
// quote a DSN it could not split, or a piece of it. It does not wrap err,
// whose own text (pgconn.ParseConfigError.ConnString, *url.Error) holds
// the password.
func DSNError(dsn string, err error) error {
	msg := err.Error()
	_, secrets := redact(dsn)
	for _, s := range secrets {
		for _, form := range spellings(s) {
			if len(form) >= minSecret {
				msg = strings.ReplaceAll(msg, form, Redacted)
			}
		}
	}
	return errors.New(Redact(msg))
}

// redact is Redact, also returning the passwords it masked.
func redact(text string) (string, []string) {
	var secrets []string
	text = redactURLs(text, &secrets)
	text = driverPassword.ReplaceAllStringFunc(text, func(m string) string {
		sub := driverPassword.FindStringSubmatch(m)
		if strings.HasPrefix(sub[2], "//") {
			return m // a URL's scheme://, which redactURLs has seen to
		}
		secrets = append(secrets, sub[2])
		return sub[1] + ":" + Redacted + "@" + sub[3]
	})
	text = keyPassword.ReplaceAllStringFunc(text, func(m string) string {
		sub := keyPassword.FindStringSubmatch(m)
		secrets = append(secrets, sub[2])
		return sub[1] + Redacted
	})
	return text, secrets
}

// redactURLs masks the userinfo password of every URL in text. As
// net/url does, the userinfo runs to the last "@" of the authority, so
// a password may hold an unescaped "@"; unlike it, the authority here
// runs to a space rather than to the first "/", so that a password
// holding "/", "?", "#" or a quote (a URL net/url refuses, and quotes in
// its error) is masked too. When that space comes before any "@" but
// after a ":", the password may hold the space: it then runs to the
// last "@" of the next word holding one on the same line. The password
// is what follows the userinfo's first ":". A later "@" masks what lies
// between: too much rather than too little.
func redactURLs(text string, secrets *[]string) string {
	var b strings.Builder
	for {
		loc := urlScheme.FindStringIndex(text)
		if loc == nil {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:loc[1]])
		rest := text[loc[1]:]
		colon, at := userinfo(rest)
		if at < 0 || colon < 0 {
			text = rest
			continue
		}
		*secrets = append(*secrets, rest[colon+1:at])
		b.WriteString(rest[:colon+1] + Redacted)
		text = rest[at:]
	}
}

// userinfo finds, in rest (a URL after its scheme://), the ":" that
// ends the user name and the "@" that ends the password; -1 for none.
func userinfo(rest string) (colon, at int) {
	word := wordEnd(rest, 0)
	colon = strings.IndexByte(rest[:word], ':')
	at = strings.LastIndexByte(rest[:word], '@')
	if colon < 0 || at > colon {
		return colon, at
	}
	line := len(rest)
	if i := strings.IndexAny(rest, "\n\r"); i >= 0 {
		line = i
	}
	if i := strings.Index(rest[:line], "://"); i >= 0 {
		line = i
	}
	first := strings.IndexByte(rest[word:line], '@')
	if first < 0 {
		return colon, -1
	}
	end := wordEnd(rest[:line], word+first)
	return colon, strings.LastIndexByte(rest[:end], '@')
}

// wordEnd is the index of the first space in s at or after from, or
// len(s).
func wordEnd(s string, from int) int {
	if i := strings.IndexAny(s[from:], " \t\n\r\v\f"); i >= 0 {
		return from + i
	}
	return len(s)
}

// spellings are the ways an error may print secret s: as it is, up to
// where net/url ends an authority, decoded from a URL or from libpq's
// quoting, and inside a Go-quoted string.
func spellings(s string) []string {
	forms := []string{s, unquoteKeyword(s)}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		forms = append(forms, s[:i]) // net/url ends the authority there: "invalid port \":PASSWORD\""
	}
	if d, err := url.PathUnescape(s); err == nil {
		forms = append(forms, d)
	}
	for _, f := range forms[:len(forms):len(forms)] {
		q := strconv.Quote(f)
		forms = append(forms, q[1:len(q)-1])
	}
	return forms
}

// unquoteKeyword is a libpq keyword value as the server receives it:
// without its quotes and backslash escapes.
func unquoteKeyword(v string) string {
	v = strings.TrimPrefix(v, "'")
	v = strings.TrimSuffix(v, "'")
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
