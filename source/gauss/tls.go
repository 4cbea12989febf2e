package gauss

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
)

// sslRequestCode is the SSLRequest's protocol number (1234.5679), the same
// on PostgreSQL, openGauss and GaussDB.
const sslRequestCode = 1234<<16 | 5679

func (t TLSConfig) validate() error {
	switch {
	case (t.Mode == "verify-ca" || t.Mode == "verify-full") && t.RootCert == "":
		return fmt.Errorf("invalid DSN: sslmode=%s needs sslrootcert, the CA file to verify the server with", t.Mode)
	case (t.Cert == "") != (t.Key == ""):
		return errors.New("invalid DSN: sslcert and sslkey go together: give both or neither")
	case t.Cert != "" && !t.asks():
		return fmt.Errorf("invalid DSN: sslcert is set but sslmode=%s uses no TLS", t.Mode)
	}
	return nil
}

// asks reports whether the mode sends an SSLRequest.
func (t TLSConfig) asks() bool { return t.Mode != "disable" && t.Mode != "allow" }

// startTLS asks the server for TLS as the mode says and returns the
// connection the startup packet goes over: nc itself, or TLS over it.
func startTLS(nc net.Conn, t TLSConfig, host string) (net.Conn, error) {
	if !t.asks() {
		return nc, nil
	}
	cfg, err := t.clientConfig(host)
	if err != nil {
		return nil, err
	}
	var req [8]byte
	binary.BigEndian.PutUint32(req[:], 8)
	binary.BigEndian.PutUint32(req[4:], sslRequestCode)
	if _, err := nc.Write(req[:]); err != nil {
		return nil, fmt.Errorf("send SSLRequest: %w", err)
	}
	var answer [1]byte
	if _, err := io.ReadFull(nc, answer[:]); err != nil {
		return nil, fmt.Errorf("read the answer to SSLRequest: %w", err)
	}
	switch answer[0] {
	case 'S':
	case 'N':
		if t.Mode == "prefer" || t.Mode == "" {
			return nc, nil
		}
		return nil, fmt.Errorf("the server does not accept TLS (sslmode=%s): set ssl = on on the server, or use sslmode=prefer", t.Mode)
	default:
		return nil, fmt.Errorf("the server answered SSLRequest with %q, not S or N", answer[0])
	}
	tc := tls.Client(nc, cfg)
	if err := tc.Handshake(); err != nil {
		return nil, fmt.Errorf("TLS handshake (sslmode=%s): %w", t.modeName(), err)
	}
	return tc, nil
}

func (t TLSConfig) modeName() string {
	if t.Mode == "" {
		return "prefer"
	}
	return t.Mode
}

// clientConfig is libpq's meaning of the modes: prefer and require check
// nothing, unless require has a root certificate, which makes it
// verify-ca; verify-ca checks the chain; verify-full the chain and the
// host name.
func (t TLSConfig) clientConfig(host string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	if t.Cert != "" {
		pair, err := tls.LoadX509KeyPair(t.Cert, t.Key)
		if err != nil {
			return nil, fmt.Errorf("load sslcert %s and sslkey %s: %w", t.Cert, t.Key, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	verify := t.Mode == "verify-ca" || t.Mode == "verify-full" || (t.Mode == "require" && t.RootCert != "")
	if !verify {
		cfg.InsecureSkipVerify = true // the mode asks for encryption only
		return cfg, nil
	}
	pem, err := os.ReadFile(t.RootCert)
	if err != nil {
		return nil, fmt.Errorf("read sslrootcert: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("sslrootcert %s holds no PEM certificate", t.RootCert)
	}
	if t.Mode == "verify-full" {
		cfg.RootCAs = roots
		return cfg, nil
	}
	// verify-ca: the chain, not the name. crypto/tls checks both or
	// neither, so the chain is checked here.
	cfg.InsecureSkipVerify = true
	cfg.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
		return verifyChain(raw, roots)
	}
	return cfg, nil
}

func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("the server sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return fmt.Errorf("parse the server's certificate: %w", err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
	return err
}
