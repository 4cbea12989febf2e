package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"time"
)

// TLSFiles are the PEM files of a server started with TLS: a CA, the
// server's certificate it signed (for 127.0.0.1 and localhost), a client
// certificate it signed (CN decant), and another CA that signed neither,
// for tests of a client that trusts the wrong one.
type TLSFiles struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	OtherCA               string
}

// MakeTLS writes TLSFiles into dir (which it creates), owned by the user
// the tests run as: for a server run in the test process (gaussstub).
func MakeTLS(dir string) (*TLSFiles, error) {
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	return makeTLS(dir, u.Username)
}

// makeTLS creates dir and writes the files into it; the server's key is
// owned by owner (the OS user the server runs as) with mode 600, as
// PostgreSQL demands.
func makeTLS(dir, owner string) (*TLSFiles, error) {
	if err := mkdirOwned(dir, 0o755, owner); err != nil {
		return nil, err
	}
	f := &TLSFiles{
		CA: filepath.Join(dir, "ca.pem"), OtherCA: filepath.Join(dir, "other-ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	ca, caKey, err := newCert("decant test CA", nil, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid = true, true
		c.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	})
	if err != nil {
		return nil, err
	}
	other, _, err := newCert("decant other CA", nil, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid = true, true
		c.KeyUsage = x509.KeyUsageCertSign
	})
	if err != nil {
		return nil, err
	}
	server, serverKey, err := newCert("localhost", ca, caKey, func(c *x509.Certificate) {
		c.DNSNames, c.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
		c.KeyUsage, c.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	})
	if err != nil {
		return nil, err
	}
	client, clientKey, err := newCert("decant", ca, caKey, func(c *x509.Certificate) {
		c.KeyUsage, c.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	})
	if err != nil {
		return nil, err
	}
	uid, gid, err := lookupUser(owner)
	if err != nil {
		return nil, err
	}
	for _, w := range []struct {
		path  string
		block *pem.Block
		mode  os.FileMode
	}{
		{f.CA, certPEM(ca), 0o644}, {f.OtherCA, certPEM(other), 0o644},
		{f.ServerCert, certPEM(server), 0o644}, {f.ServerKey, keyPEM(serverKey), 0o600},
		{f.ClientCert, certPEM(client), 0o644}, {f.ClientKey, keyPEM(clientKey), 0o600},
	} {
		if err := os.WriteFile(w.path, pem.EncodeToMemory(w.block), w.mode); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		if err := os.Chown(w.path, uid, gid); err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
	}
	return f, nil
}

// newCert makes a key and a certificate for it, signed by parent (self-
// signed when parent is nil), shaped by shape.
func newCert(cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, shape func(*x509.Certificate)) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("harness: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("harness: %w", err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	shape(tmpl)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("harness: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("harness: %w", err)
	}
	return cert, key, nil
}

func certPEM(c *x509.Certificate) *pem.Block {
	return &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}
}

func keyPEM(k *ecdsa.PrivateKey) *pem.Block {
	der, _ := x509.MarshalPKCS8PrivateKey(k) // cannot fail for a P-256 key
	return &pem.Block{Type: "PRIVATE KEY", Bytes: der}
}
