package gaussstub

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"
)

// session is one client connection.
type session struct {
	srv  *Server
	conn net.Conn // the socket; closing it ends the session
	rw   net.Conn // what messages go through: conn, or TLS over it
	pid  uint32
	done chan struct{} // closed when serve has returned

	be  *pgproto3.Backend
	wmu sync.Mutex // guards be.Send and be.Flush (the streamer writes from two goroutines)

	minor       uint32 // protocol minor version from the startup packet
	user        string
	database    string
	replication bool
}

// errClosed ends a session without a further message.
var errClosed = errors.New("session closed")

func newSession(s *Server, c net.Conn, pid uint32) *session {
	return &session{srv: s, conn: c, rw: c, pid: pid, done: make(chan struct{})}
}

func (c *session) serve() {
	defer c.conn.Close()
	// The backend only buffers what Receive reads; startup reads the
	// startup packet from the connection directly.
	c.be = pgproto3.NewBackend(c.rw, c.rw)
	if err := c.startup(); err != nil {
		return
	}
	if c.srv.cfg.RequireTLS && c.rw == c.conn {
		c.fatal("28000", `no pg_hba.conf entry for host "127.0.0.1", user "`+c.user+`", SSL off`)
		return
	}
	if err := c.authenticate(); err != nil {
		return
	}
	c.queryLoop()
}

// send writes messages and flushes them.
func (c *session) send(msgs ...pgproto3.BackendMessage) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for _, m := range msgs {
		c.be.Send(m)
	}
	return c.be.Flush()
}

// fatal sends a FATAL ErrorResponse; the caller then closes the connection.
func (c *session) fatal(code, msg string) error {
	c.send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	return errClosed
}

// sqlError sends an ERROR and ReadyForQuery: the session goes on.
func (c *session) sqlError(code, msg string) error {
	return c.send(&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: code, Message: msg},
		&pgproto3.ReadyForQuery{TxStatus: 'I'})
}

const (
	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	cancelRequestCode = 80877102
)

// startup reads the startup packet by hand: pgproto3's backend only
// accepts protocol 3.0 and 3.2, and GaussDB clients announce 3.51.
func (c *session) startup() error {
	for {
		var hdr [8]byte
		if _, err := io.ReadFull(c.rw, hdr[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n < 8 || n > 10000 {
			return errClosed
		}
		body := make([]byte, n-8)
		if _, err := io.ReadFull(c.rw, body); err != nil {
			return err
		}
		switch code := binary.BigEndian.Uint32(hdr[4:]); code {
		case sslRequestCode:
			if err := c.answerSSLRequest(); err != nil {
				return err
			}
			continue
		case gssEncRequestCode:
			if _, err := c.rw.Write([]byte{'N'}); err != nil {
				return err
			}
			continue
		case cancelRequestCode:
			return errClosed
		default:
			if code>>16 != 3 {
				return c.fatal("0A000", fmt.Sprintf("unsupported frontend protocol %d.%d", code>>16, code&0xffff))
			}
			c.minor = code & 0xffff
			return c.startupParams(body)
		}
	}
}

// answerSSLRequest answers 'S' and runs the TLS handshake when the server
// has a certificate (Config.TLS), as postmaster.cpp ProcessStartupPacket
// does with ssl = on; 'N' otherwise. The startup packet then comes over
// TLS.
func (c *session) answerSSLRequest() error {
	cfg := c.srv.cfg.TLS
	if cfg == nil || c.rw != c.conn {
		_, err := c.rw.Write([]byte{'N'})
		return err
	}
	if _, err := c.conn.Write([]byte{'S'}); err != nil {
		return err
	}
	tc := tls.Server(c.conn, cfg)
	if err := tc.Handshake(); err != nil {
		return err
	}
	c.rw = tc
	c.be = pgproto3.NewBackend(tc, tc)
	return nil
}

func (c *session) startupParams(body []byte) error {
	// key\0value\0 ... \0
	for {
		k, rest, ok := bytes.Cut(body, []byte{0})
		if !ok {
			return c.fatal("08P01", "invalid startup packet layout: missing terminator")
		}
		if len(k) == 0 {
			break
		}
		v, rest, ok := bytes.Cut(rest, []byte{0})
		if !ok {
			return c.fatal("08P01", "invalid startup packet layout: missing terminator")
		}
		body = rest
		switch string(k) {
		case "user":
			c.user = string(v)
		case "database":
			c.database = string(v)
		case "replication":
			if string(v) != "database" {
				return c.fatal("42601", fmt.Sprintf("the stand-in accepts only replication=database, not %q", v))
			}
			c.replication = true
		}
	}
	if c.user == "" {
		return c.fatal("28000", "no user name specified in startup packet")
	}
	if c.database == "" {
		c.database = c.user
	}
	return nil
}

// storedPassword is what the server keeps for the configured password: the
// sha256 keys (salt, ServerKey, StoredKey at the configured iteration
// count), and the text pg_authid holds: "sha256", the three as hex, and the
// iteration count as user.cpp encode_iteration writes it.
type storedPassword struct {
	salt                 []byte
	serverKey, storedKey []byte
	iterations           int
	text                 string
}

func newStoredPassword(password string, iterations int) (storedPassword, error) {
	p := storedPassword{salt: make([]byte, 32), iterations: iterations}
	rand.Read(p.salt)
	var err error
	if p.serverKey, p.storedKey, err = sha256Keys(password, p.salt, iterations); err != nil {
		return p, err
	}
	p.text = "sha256" + hex.EncodeToString(p.salt) + hex.EncodeToString(p.serverKey) + hex.EncodeToString(p.storedKey) +
		iterationText(iterations)
	return p, nil
}

// iterationText is user.cpp encode_iteration: 11 characters, each a
// letter of "ecdfdcefade" moved up by one decimal digit of n, the least
// significant first.
func iterationText(n int) string {
	out := []byte("ecdfdcefade")
	for i := range out {
		out[i] += byte(n % 10)
		n /= 10
	}
	return string(out)
}

// sha256Keys derives what openGauss's pg_sha256_encrypt stores.
func sha256Keys(password string, salt []byte, iter int) (serverKey, storedKey []byte, err error) {
	k, err := pbkdf2.Key(sha1.New, password, salt, iter, 32)
	if err != nil {
		return nil, nil, fmt.Errorf("gaussstub: derive password keys: %w", err)
	}
	mac := func(label string) []byte {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(label))
		return m.Sum(nil)
	}
	stored := sha256.Sum256(mac("Client Key"))
	return mac("Sever Key"), stored[:], nil
}

func md5Hex(parts ...[]byte) string {
	h := md5.New()
	for _, p := range parts {
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// authRequest is an AuthenticationRequest with any code and payload
// (pgproto3 has no GaussDB codes).
type authRequest struct {
	code    uint32
	payload []byte
}

func (*authRequest) Backend()                {}
func (*authRequest) AuthenticationResponse() {}
func (*authRequest) Decode([]byte) error     { return errors.New("not decodable") }
func (m *authRequest) Encode(dst []byte) ([]byte, error) {
	dst = append(dst, 'R')
	dst = binary.BigEndian.AppendUint32(dst, uint32(8+len(m.payload)))
	dst = binary.BigEndian.AppendUint32(dst, m.code)
	return append(dst, m.payload...), nil
}

// authenticate runs the configured pg_hba method. Like the real server, a
// wrong user name goes through the same exchange and fails at the end.
func (c *session) authenticate() error {
	cfg := c.srv.cfg
	ok := c.user == cfg.User
	k := c.srv.keys
	switch cfg.AuthMethod {
	case "trust":
	case "password":
		answer, err := c.ask(&authRequest{code: 3})
		if err != nil {
			return err
		}
		ok = ok && answer == cfg.Password
	case "md5":
		salt := randomBytes(4)
		answer, err := c.ask(&authRequest{code: 5, payload: salt})
		if err != nil {
			return err
		}
		inner := md5Hex([]byte(cfg.Password + cfg.User))
		ok = ok && answer == "md5"+md5Hex([]byte(inner), salt)
	case "md5_sha256":
		salt := randomBytes(4)
		saltHex := hex.EncodeToString(k.salt)
		answer, err := c.ask(&authRequest{code: 11, payload: append([]byte(saltHex), salt...)})
		if err != nil {
			return err
		}
		// crypt.cpp crypt_verify, uaMD5 with an isSHA256 stored
		// password: pg_md5_encrypt(shadow_pass + SHA256_LENGTH, md5Salt),
		// the MD5 of everything after "sha256", iteration text included.
		ok = ok && answer == "md5"+md5Hex([]byte(k.text[len("sha256"):]), salt)
	case "sha256":
		answer, token, err := c.askSHA256()
		if err != nil {
			return err
		}
		ok = ok && verifySHA256(answer, token, k.storedKey)
	case "gss":
		return c.askUnsupported(&authRequest{code: 7})
	case "scram":
		return c.askUnsupported(&authRequest{code: 10, payload: []byte("SCRAM-SHA-256\x00\x00")})
	}
	if !ok {
		return c.fatal("28P01", "Invalid username/password,login denied.")
	}
	return c.send(&pgproto3.AuthenticationOk{},
		&pgproto3.ParameterStatus{Name: "server_version", Value: "9.2.4"},
		&pgproto3.ParameterStatus{Name: "server_encoding", Value: "UTF8"},
		&pgproto3.ParameterStatus{Name: "client_encoding", Value: "UTF8"},
		&pgproto3.ParameterStatus{Name: "DateStyle", Value: "ISO, MDY"},
		&pgproto3.ParameterStatus{Name: "integer_datetimes", Value: "on"},
		&pgproto3.ParameterStatus{Name: "standard_conforming_strings", Value: "on"},
		&pgproto3.ParameterStatus{Name: "TimeZone", Value: "UTC"},
		&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: binary.BigEndian.AppendUint32(nil, c.pid*7919)},
		&pgproto3.ReadyForQuery{TxStatus: 'I'})
}

// askSHA256 sends the sha256 request shaped by the client's protocol minor
// version, as openGauss's sendAuthRequest does, and returns the answer and
// the token.
func (c *session) askSHA256() (answer string, token []byte, err error) {
	k := c.srv.keys
	token = randomBytes(4)
	p := binary.BigEndian.AppendUint32(nil, 2) // SHA256_PASSWORD
	p = append(p, hex.EncodeToString(k.salt)...)
	p = append(p, hex.EncodeToString(token)...)
	switch {
	case c.minor < 50:
		m := hmac.New(sha256.New, k.serverKey)
		m.Write(token)
		p = append(p, hex.EncodeToString(m.Sum(nil))...)
	case c.minor > 50:
		p = binary.BigEndian.AppendUint32(p, uint32(k.iterations))
	}
	answer, err = c.ask(&authRequest{code: 10, payload: p})
	return answer, token, err
}

// verifySHA256 is crypt_verify's check: SHA256(proof XOR HMAC(StoredKey,
// token)) must be the StoredKey.
func verifySHA256(answer string, token, storedKey []byte) bool {
	proof, err := hex.DecodeString(answer)
	if err != nil || len(proof) != 32 {
		return false
	}
	m := hmac.New(sha256.New, storedKey)
	m.Write(token)
	clientKey := m.Sum(nil)
	for i := range clientKey {
		clientKey[i] ^= proof[i]
	}
	sum := sha256.Sum256(clientKey)
	return hmac.Equal(sum[:], storedKey)
}

// ask sends an authentication request and reads the PasswordMessage.
func (c *session) ask(req *authRequest) (string, error) {
	if err := c.send(req); err != nil {
		return "", err
	}
	msg, err := c.be.Receive()
	if err != nil {
		return "", err
	}
	pm, ok := msg.(*pgproto3.PasswordMessage)
	if !ok {
		return "", c.fatal("08P01", fmt.Sprintf("expected a password response, got %T", msg))
	}
	return pm.Password, nil
}

// askUnsupported sends a request no client here answers and waits for the
// client to hang up.
func (c *session) askUnsupported(req *authRequest) error {
	if err := c.send(req); err != nil {
		return err
	}
	io.Copy(io.Discard, c.rw)
	return errClosed
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}
