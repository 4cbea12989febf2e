package mysql

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/go-sql-driver/mysql"
)

// TLS parameters decant reads from a MySQL DSN's query, beside the
// driver's own tls=true|skip-verify|preferred|false:
//
//	tls-ca=FILE           PEM CA certificates to verify the server with,
//	                      instead of the system's roots
//	tls-cert=FILE         PEM client certificate, with tls-key, for
//	tls-key=FILE          servers that require X509 of the user
//	tls-server-name=NAME  the name the server's certificate must carry
//	                      (default: the host of the DSN)
//
// Any of them turns TLS on with verification; they cannot be combined
// with tls=false, skip-verify or preferred. The resulting *tls.Config is
// set on the driver's Config directly, not registered under a name: the
// driver's registry of TLS configs is global.
var tlsParams = []string{"tls-ca", "tls-cert", "tls-key", "tls-server-name"}

// applyTLS moves decant's TLS parameters out of cfg.Params (the driver
// takes unknown parameters for session variables) into cfg.TLS. host is
// the server's host name, the default name to verify.
func applyTLS(cfg *mysql.Config, host string) error {
	opts := map[string]string{}
	for _, k := range tlsParams {
		if v, ok := cfg.Params[k]; ok {
			opts[k] = v
			delete(cfg.Params, k)
		}
	}
	if len(opts) == 0 {
		return nil
	}
	switch cfg.TLSConfig {
	case "", "true":
	default:
		return fmt.Errorf("tls=%s cannot be combined with tls-ca, tls-cert, tls-key or tls-server-name, which verify the server: leave tls out or use tls=true", cfg.TLSConfig)
	}
	tc, err := tlsConfig(opts)
	if err != nil {
		return err
	}
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	cfg.TLSConfig, cfg.TLS = "true", tc
	return nil
}

// tlsConfig builds the client's TLS configuration from the parameters.
func tlsConfig(opts map[string]string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: opts["tls-server-name"]}
	if path := opts["tls-ca"]; path != "" {
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("tls-ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls-ca %s holds no PEM certificate", path)
		}
	}
	cert, key := opts["tls-cert"], opts["tls-key"]
	switch {
	case cert == "" && key == "":
	case cert == "" || key == "":
		return nil, errors.New("tls-cert and tls-key go together: give both, or neither")
	default:
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tls-cert %s, tls-key %s: %w", cert, key, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}
