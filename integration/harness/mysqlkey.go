package harness

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// KeyServer stands in for a MySQL 8 server whose user authenticates with
// caching_sha2_password and is not in the server's cache, so that the
// client must send the whole password: over TLS in clear, over plain TCP
// encrypted to the server's RSA public key, which the client may ask the
// server for. MariaDB, the server the harness runs, has no
// caching_sha2_password; this speaks that exchange (MySQL's "Connection
// Phase", protocol 4.1) over a real loopback socket, and refuses every
// login after it with ERR 1045.
type KeyServer struct {
	Addr string // 127.0.0.1:port

	ln            net.Listener
	key           *rsa.PrivateKey
	keyRequests   atomic.Int64 // clients that asked for the key
	passwordsSent atomic.Int64 // clients that sent a password encrypted to it
	wg            sync.WaitGroup
}

// StartKeyServer listens on a free loopback port. Close stops it.
func StartKeyServer() (*KeyServer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	s := &KeyServer{Addr: ln.Addr().String(), ln: ln, key: key}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// KeyRequests is how many clients asked for the public key.
func (s *KeyServer) KeyRequests() int64 { return s.keyRequests.Load() }

// PasswordsSent is how many clients sent a password encrypted to it.
func (s *KeyServer) PasswordsSent() int64 { return s.passwordsSent.Load() }

// Close stops listening and waits for the sessions to end.
func (s *KeyServer) Close() {
	s.ln.Close()
	s.wg.Wait()
}

func (s *KeyServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.session(c)
		}()
	}
}

// Capability flags the greeting offers: long password, connect with db,
// protocol 4.1, transactions, secure connection, multi statements and
// results, plugin auth, length-encoded auth data. No CLIENT_SSL.
const keyServerCaps = 0x1 | 0x8 | 0x200 | 0x2000 | 0x8000 | 0x10000 | 0x20000 | 0x80000 | 0x200000

// session runs one connection phase: greeting, handshake response,
// "perform full authentication", then, if asked, the key, and whatever
// the client sends after it counted as the encrypted password.
func (s *KeyServer) session(c net.Conn) {
	if writePacket(c, 0, greeting()) != nil {
		return
	}
	if _, _, err := readPacket(c); err != nil { // handshake response
		return
	}
	if writePacket(c, 2, []byte{0x01, 0x04}) != nil { // AuthMoreData: perform full authentication
		return
	}
	seq, p, err := readPacket(c)
	if err != nil || len(p) != 1 || p[0] != 0x02 { // not a public key request
		return
	}
	s.keyRequests.Add(1)
	der, _ := x509.MarshalPKIXPublicKey(&s.key.PublicKey) // cannot fail for an RSA key
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	if writePacket(c, seq+1, append([]byte{0x01}, keyPEM...)) != nil {
		return
	}
	seq, p, err = readPacket(c)
	if err != nil {
		return
	}
	if len(p) == s.key.Size() {
		s.passwordsSent.Add(1)
	}
	errPkt := append([]byte{0xFF, 0x15, 0x04, '#'}, "28000Access denied (decant key stand-in)"...) // 1045
	writePacket(c, seq+1, errPkt)
}

// greeting is a HandshakeV10 offering caching_sha2_password.
func greeting() []byte {
	g := []byte{0x0a}
	g = append(g, "8.0.36-decant-stand-in\x00"...)
	g = binary.LittleEndian.AppendUint32(g, 1)                    // connection id
	g = append(g, "abcdefgh"...)                                  // auth data, part 1
	g = append(g, 0)                                              // filler
	g = binary.LittleEndian.AppendUint16(g, keyServerCaps&0xFFFF) // capabilities, low
	g = append(g, 45)                                             // utf8mb4_general_ci
	g = binary.LittleEndian.AppendUint16(g, 2)                    // status: autocommit
	g = binary.LittleEndian.AppendUint16(g, keyServerCaps>>16)    // capabilities, high
	g = append(g, 21)                                             // auth data length
	g = append(g, make([]byte, 10)...)                            // reserved
	g = append(g, "ijklmnopqrst\x00"...)                          // auth data, part 2
	return append(g, "caching_sha2_password\x00"...)
}

func writePacket(w io.Writer, seq byte, p []byte) error {
	h := []byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), seq}
	_, err := w.Write(append(h, p...))
	return err
}

func readPacket(r io.Reader) (seq byte, p []byte, err error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	p = make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
	_, err = io.ReadFull(r, p)
	return h[3], p, err
}
