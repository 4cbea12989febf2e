package gauss_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/integration/gaussstub"
)

// testCA is a throwaway certificate authority made in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // PEM
}

func newTestCA(t *testing.T, dir, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue makes a leaf certificate for the names (IPs or DNS names) and
// writes it and its key as PEM files.
func (ca *testCA) issue(t *testing.T, dir, name string, client bool, names ...string) (tls.Certificate, string, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair, certFile, keyFile
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestConnectTLS: the SSLRequest handshake against a stand-in that
// requires TLS (hostssl) with a certificate made here, in every sslmode,
// with and without a client certificate.
func TestConnectTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := newTestCA(t, dir, "ca"), newTestCA(t, dir, "other-ca")
	right, _, _ := ca.issue(t, dir, "server", false, "127.0.0.1")
	wrongName, _, _ := ca.issue(t, dir, "server-elsewhere", false, "db.example")
	_, clientCert, clientKey := ca.issue(t, dir, "client", true, "repl")
	clients := x509.NewCertPool()
	clients.AddCert(ca.cert)

	start := func(cert tls.Certificate, clientAuth tls.ClientAuthType) *gaussstub.Server {
		srv, err := gaussstub.Start(gaussstub.Config{User: "repl", Password: testPassword, AuthMethod: "sha256", RequireTLS: true,
			TLS: &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: clientAuth, ClientCAs: clients}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		return srv
	}
	plain := start(right, tls.NoClientCert)
	misnamed := start(wrongName, tls.NoClientCert)
	mutual := start(right, tls.RequireAndVerifyClientCert)
	noTLS := startStub(t, "sha256")

	dsn := func(srv *gaussstub.Server, kv ...string) string {
		q := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return srv.DSN("postgres") + "?" + q.Encode()
	}
	for _, c := range []struct {
		name, dsn, wantErr string // "" = connects
	}{
		{"disable against hostssl", dsn(plain, "sslmode", "disable"), "SSL off"},
		{"prefer", dsn(plain), ""},
		{"require", dsn(plain, "sslmode", "require"), ""},
		{"verify-ca", dsn(plain, "sslmode", "verify-ca", "sslrootcert", ca.file), ""},
		{"verify-ca other CA", dsn(plain, "sslmode", "verify-ca", "sslrootcert", other.file), "certificate signed by unknown authority"},
		{"require with a root cert verifies", dsn(plain, "sslmode", "require", "sslrootcert", other.file), "unknown authority"},
		{"verify-full", dsn(plain, "sslmode", "verify-full", "sslrootcert", ca.file), ""},
		{"verify-ca ignores the name", dsn(misnamed, "sslmode", "verify-ca", "sslrootcert", ca.file), ""},
		{"verify-full checks the name", dsn(misnamed, "sslmode", "verify-full", "sslrootcert", ca.file), "127.0.0.1"},
		{"client cert missing", dsn(mutual, "sslmode", "verify-full", "sslrootcert", ca.file), "certificate required"},
		{"client cert", dsn(mutual, "sslmode", "verify-full", "sslrootcert", ca.file, "sslcert", clientCert, "sslkey", clientKey), ""},
		{"prefer without server TLS", dsn(noTLS, "sslmode", "prefer"), ""},
		{"require without server TLS", dsn(noTLS, "sslmode", "require"), "does not accept TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := connectDSN(t, c.dsn)
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("connect: %v", err)
			case c.wantErr == "":
				defer conn.Close(t.Context())
				if _, err := conn.Exec(t.Context(), "SELECT version()").ReadAll(); err != nil {
					t.Errorf("query over the connection: %v", err)
				}
			case err == nil || !strings.Contains(err.Error(), c.wantErr):
				t.Errorf("connect: %v, want an error with %q", err, c.wantErr)
			case strings.Contains(err.Error(), testPassword):
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}
