package mysql

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log"
	"log/slog"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// writeCert writes a self-signed certificate and its key as PEM files.
func writeCert(t *testing.T, dir, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	return certFile, keyFile
}

func TestParseDSNTLS(t *testing.T) {
	dir := t.TempDir()
	ca, _ := writeCert(t, dir, "ca")
	cert, key := writeCert(t, dir, "client")

	cfg, err := ParseDSN("mysql://u:p@db.example:3307/shop?tls-ca=" + ca + "&tls-cert=" + cert + "&tls-key=" + key)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || cfg.TLS.RootCAs == nil || len(cfg.TLS.Certificates) != 1 || cfg.TLS.ServerName != "db.example" || cfg.TLS.InsecureSkipVerify {
		t.Errorf("URL form: TLS %+v", cfg.TLS)
	}
	for _, k := range tlsParams {
		if _, ok := cfg.Params[k]; ok {
			t.Errorf("%s left in the session variables", k)
		}
	}

	// The driver's form wants the slashes of a path escaped.
	cfg, err = ParseDSN("u:p@tcp(10.0.0.5:3306)/shop?tls-ca=" + url.QueryEscape(ca) + "&tls-server-name=db.internal")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS == nil || cfg.TLS.RootCAs == nil || cfg.TLS.ServerName != "db.internal" || len(cfg.TLS.Certificates) != 0 {
		t.Errorf("driver form: TLS %+v", cfg.TLS)
	}

	// tls=true in a URL verifies the URL's host, not the driver's default.
	cfg, err = ParseDSN("mysql://u:p@db.example:3306/shop?tls=true")
	if err != nil || cfg.TLS == nil || cfg.TLS.ServerName != "db.example" {
		t.Errorf("tls=true: %v %+v", err, cfg)
	}

	for dsn, want := range map[string]string{
		"mysql://u@h/db?tls=skip-verify&tls-ca=" + ca:        "tls=skip-verify cannot be combined",
		"mysql://u@h/db?tls=false&tls-ca=" + ca:              "tls=false cannot be combined",
		"mysql://u@h/db?tls-cert=" + cert:                    "tls-cert and tls-key go together",
		"mysql://u@h/db?tls-ca=" + dir + "/none.pem":         "tls-ca: open",
		"mysql://u@h/db?tls-ca=" + key:                       "holds no PEM certificate",
		"mysql://u@h/db?tls-cert=" + cert + "&tls-key=" + ca: "tls-cert " + cert,
	} {
		if _, err := ParseDSN(dsn); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", dsn, err, want)
		}
	}
}

func TestDescribeTLS(t *testing.T) {
	err := describe(&mysql.MySQLError{Number: 1045, Message: "Access denied"})
	if strings.Contains(err.Error(), "tls-ca") {
		t.Errorf("unrelated error mentions TLS: %v", err)
	}
	err = describe(errors.Join(errors.New("tls: failed to verify certificate"), x509.UnknownAuthorityError{}))
	if !strings.Contains(err.Error(), "tls-ca=FILE") {
		t.Errorf("unknown authority: %v", err)
	}
}

// recorder is a slog handler that keeps its records.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

func TestRouteDriverLog(t *testing.T) {
	rec := &recorder{}
	RouteDriverLog(slog.New(rec))
	t.Cleanup(func() { mysql.SetLogger(log.New(os.Stderr, "[mysql] ", log.Ldate|log.Ltime)) })

	// A config made afterwards carries the adapter, as the driver's
	// connections do.
	cfg, err := ParseDSN("mysql://u@h/db")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Logger.Print("closing bad idle connection: ", errors.New("unexpected EOF"))
	if len(rec.recs) != 1 {
		t.Fatalf("%d records, want 1", len(rec.recs))
	}
	r := rec.recs[0]
	if r.Level != slog.LevelWarn || r.Message != "closing bad idle connection: unexpected EOF" {
		t.Errorf("record: level %s message %q", r.Level, r.Message)
	}
	var component string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "component" {
			component = a.Value.String()
		}
		return true
	})
	if component != "mysql-driver" {
		t.Errorf("component = %q", component)
	}

	// The driver's own connections log with the file and line first.
	driverLog{slog.New(rec)}.Print("packets.go:58 ", errors.New("unexpected EOF"))
	r = rec.recs[1]
	var at string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "at" {
			at = a.Value.String()
		}
		return true
	})
	if r.Message != "unexpected EOF" || at != "packets.go:58" {
		t.Errorf("record: message %q at %q", r.Message, at)
	}
}
