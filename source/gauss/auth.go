package gauss

// GaussDB / openGauss password authentication, client side.
//
// Sources read (2025 snapshots):
//   - opengauss-mirror/openGauss-server @ 7e1fc94a:
//     src/include/libpq/pqcomm.h (request codes, PG_PROTOCOL_GAUSS_BASE = 50),
//     src/include/libpq/sha2.h (lengths, ITERATION_COUNT = 10000, stored-method numbers),
//     src/common/backend/libpq/auth.cpp sendAuthRequest (what the server sends),
//     src/common/backend/libpq/crypt.cpp crypt_verify (how it checks the answer),
//     src/common/backend/libpq/sha2.cpp pg_sha256_encrypt, GsSm3Encrypt, pg_sha256_encrypt_for_md5,
//     src/common/interfaces/libpq/fe-connect.cpp, fe-auth.cpp pg_password_sendauth (gsql's client).
//   - opengauss-mirror/openGauss-connector-jdbc @ 6f4819bf:
//     core/v3/ConnectionFactoryImpl.java doAuthentication, util/MD5Digest.java.
//   - HuaweiCloudDeveloper/gaussdb-go @ a3f2b153: gaussdbconn/auth_scram_sha256.go, rfcdigest.go.
//
// The exchange is one AuthenticationRequest ('R', int32 code, payload) and
// one PasswordMessage ('p', NUL-terminated string). The startup packet
// announces protocol 3.51, as gsql and the JDBC driver do; the server shapes
// the SHA256/SM3 request by that minor version (< 50: adds a server
// signature, no iteration; 50: neither; 51: iteration, no signature).
//
// Code 10 AUTH_REQ_SHA256 (pg_hba method sha256), payload:
//
//	int32   password_stored_method  0 plain, 1 md5, 2 sha256
//	stored method 0 or 2:
//	  64 bytes random64code  the salt, 32 bytes as lower-case hex
//	   8 bytes token         the nonce, 4 bytes as lower-case hex
//	  int32   server_iteration  (protocol 3.51; older: 64-byte server signature, or nothing)
//	stored method 1:
//	   4 bytes md5 salt
//
// For stored method 0/2 the answer is an RFC 5802 style client proof:
//
//	K          = PBKDF2-HMAC-SHA1(password, salt bytes, iteration, 32 bytes)
//	ServerKey  = HMAC-SHA256(K, "Sever Key")      (sic: the server spells it so)
//	ClientKey  = HMAC-SHA256(K, "Client Key")
//	StoredKey  = SHA256(ClientKey)
//	proof      = hex(HMAC-SHA256(StoredKey, token bytes) XOR ClientKey)   64 lower-case hex chars
//
// The server stores "sha256" + hex(salt) + hex(ServerKey) + hex(StoredKey)
// (+ encoded iteration) and checks SHA256(proof XOR HMAC(StoredKey, token))
// == StoredKey. With a server signature (protocol < 3.50) the client may
// check it equals hex(HMAC-SHA256(ServerKey, token)); decant does when one
// arrives. Without an iteration field, 2048 is used (JDBC's value for 3.0
// and 3.50).
// For stored method 1 (only older servers send it; current ones switch to
// code 5) the answer is "sha256" + hex(SHA256(md5hex(password+user) + salt)).
//
// Code 11 AUTH_REQ_MD5_SHA256 (pg_hba md5, password stored as sha256),
// payload: 64-byte random64code, 4-byte md5 salt (auth.cpp sendAuthRequest:
// no iteration count). The server checks (crypt.cpp crypt_verify, uaMD5
// with isSHA256) pg_md5_encrypt(shadow_pass + "sha256", md5 salt), an MD5 of
// the whole stored string after its "sha256" prefix, which for a stored
// SHA256 password (sha2.h isSHA256: 198 + ITERATION_STRING_LEN characters)
// ends in the 11-character encoded iteration count (user.cpp
// encode_iteration):
//
//	"md5" + hex(MD5(hex(salt) + hex(ServerKey) + hex(StoredKey) + encode_iteration(n) + md5 salt))
//
// with the keys derived at that stored count n. The request does not carry
// n, so decant assumes the server's default auth_iteration_count, 10000
// (sha2.h ITERATION_COUNT), unless the DSN's auth_iteration_count says
// otherwise. JDBC's MD5_SHA256encode (2048 iterations, no suffix) and
// gsql's fe-auth.cpp (pg_sha256_encrypt's 198 characters, no suffix) hash
// less than the server does.
//
// Code 13 AUTH_REQ_SM3 (pg_hba sm3): like code 10 with stored method 3,
// StoredKey = SM3(ClientKey) and ServerKey labelled "Server Key"; HMACs stay
// HMAC-SHA256 and PBKDF2 stays HMAC-SHA1.
//
// Code 12 AUTH_REQ_SHA256_RFC exists only in openGauss "lite mode" builds:
// the code-10 exchange with the iteration fixed at 2048 (pg_sha256_encrypt_v1).
//
// Code 5 is PostgreSQL MD5 ("md5" + md5hex(md5hex(password+user) + salt)),
// code 3 cleartext. PostgreSQL's own code 10 (SASL, SCRAM) collides with
// AUTH_REQ_SHA256; its payload starts with a mechanism name instead of a
// small stored-method number, which is how the two are told apart.

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/bits"
)

// Authentication request codes (openGauss pqcomm.h).
const (
	authOK           = 0
	authKerberos5    = 2
	authCleartext    = 3
	authMD5          = 5
	authSCMCreds     = 6
	authGSS          = 7
	authGSSContinue  = 8
	authSSPI         = 9
	authSHA256       = 10 // also PostgreSQL's SASL
	authMD5SHA256    = 11 // also PostgreSQL's SASL continue
	authSHA256RFC    = 12 // openGauss lite mode; also PostgreSQL's SASL final
	authSM3          = 13
	authIAM          = 14
	defaultIteration = 2048 // what JDBC uses when the server sends none
	// storedIteration is the server's default auth_iteration_count (sha2.h
	// ITERATION_COUNT), the count a stored SHA256 password was made with
	// unless the DBA changed it.
	storedIteration = 10000
)

// Password stored methods (openGauss sha2.h).
const (
	storedPlain  = 0
	storedMD5    = 1
	storedSHA256 = 2
	storedSM3    = 3
	storedRFC    = 6 // SHA256_PASSWORD_RFC, lite mode
)

const (
	saltHexLen  = 64
	tokenHexLen = 8
	// maxIteration is the server's MAX_ITERATION_COUNT; a larger value is
	// a malformed request, and would stall the client for minutes.
	maxIteration = 10_000_000
)

var errNoPassword = errors.New("no password was given")

// unsupportedAuthError names an authentication method decant cannot speak.
type unsupportedAuthError struct{ method string }

func (e *unsupportedAuthError) Error() string {
	return fmt.Sprintf("server asks for %s authentication, which decant does not support: "+
		"use a sha256 or md5 entry for this user in pg_hba.conf", e.method)
}

// authAnswer computes the PasswordMessage text for one AuthenticationRequest
// body (the bytes after the message length, starting with the code). done
// reports AuthenticationOk, which needs no answer. iterations is the
// stored password's iteration count for code 11, which does not send it
// (0: the server's default).
func authAnswer(body []byte, user, password string, iterations int) (answer string, done bool, err error) {
	if len(body) < 4 {
		return "", false, errors.New("authentication request too short")
	}
	code := binary.BigEndian.Uint32(body)
	p := body[4:]
	switch code {
	case authOK:
		return "", true, nil
	case authCleartext:
		if password == "" {
			return "", false, fmt.Errorf("server asks for a cleartext password: %w", errNoPassword)
		}
		return password, false, nil
	case authMD5:
		if len(p) != 4 {
			return "", false, fmt.Errorf("md5 request: salt has %d bytes, want 4", len(p))
		}
		if password == "" {
			return "", false, fmt.Errorf("server asks for an md5 password: %w", errNoPassword)
		}
		return md5Answer(user, password, p), false, nil
	case authSHA256:
		if isSASL(p) {
			return "", false, &unsupportedAuthError{method: "SASL (" + saslMechanisms(p) + ")"}
		}
		return sha256Request(p, user, password, false, 0)
	case authSHA256RFC:
		return sha256Request(p, user, password, false, defaultIteration)
	case authSM3:
		return sha256Request(p, user, password, true, 0)
	case authMD5SHA256:
		return md5SHA256Request(p, password, iterations)
	case authKerberos5:
		return "", false, &unsupportedAuthError{method: "Kerberos V5"}
	case authSCMCreds:
		return "", false, &unsupportedAuthError{method: "SCM credentials"}
	case authGSS, authGSSContinue:
		return "", false, &unsupportedAuthError{method: "GSSAPI"}
	case authSSPI:
		return "", false, &unsupportedAuthError{method: "SSPI"}
	case authIAM:
		return "", false, &unsupportedAuthError{method: "IAM token"}
	}
	return "", false, &unsupportedAuthError{method: fmt.Sprintf("an unknown (code %d)", code)}
}

// isSASL tells PostgreSQL's SASL request (a list of NUL-terminated
// mechanism names) from openGauss's SHA256 request (int32 stored method).
func isSASL(p []byte) bool {
	return len(p) >= 4 && binary.BigEndian.Uint32(p) > 0xFF && bytes.IndexByte(p, 0) > 0
}

func saslMechanisms(p []byte) string {
	var names []string
	for _, n := range bytes.Split(bytes.TrimRight(p, "\x00"), []byte{0}) {
		names = append(names, string(n))
	}
	return fmt.Sprint(names)
}

// sha256Request answers codes 10, 12 and 13. fixedIter, when not zero,
// overrides the iteration the server sends (code 12).
func sha256Request(p []byte, user, password string, sm3 bool, fixedIter int) (string, bool, error) {
	name := "sha256"
	if sm3 {
		name = "sm3"
	}
	if len(p) < 4 {
		return "", false, fmt.Errorf("%s request too short", name)
	}
	if password == "" {
		return "", false, fmt.Errorf("server asks for a %s password: %w", name, errNoPassword)
	}
	stored := binary.BigEndian.Uint32(p)
	p = p[4:]
	switch {
	case !sm3 && stored == storedMD5:
		if len(p) != 4 {
			return "", false, fmt.Errorf("sha256 request for an md5-stored password: salt has %d bytes, want 4", len(p))
		}
		return sha256MD5Answer(user, password, p), false, nil
	case sm3 && stored == storedSM3,
		!sm3 && (stored == storedPlain || stored == storedSHA256 || stored == storedRFC):
	default:
		return "", false, fmt.Errorf("%s request: password stored method %d is not supported", name, stored)
	}
	if len(p) < saltHexLen+tokenHexLen {
		return "", false, fmt.Errorf("%s request too short: %d bytes after the stored method", name, len(p))
	}
	salt, token := string(p[:saltHexLen]), string(p[saltHexLen:saltHexLen+tokenHexLen])
	rest := p[saltHexLen+tokenHexLen:]
	iter, signature := defaultIteration, ""
	switch len(rest) {
	case 0: // protocol 3.50
	case 4: // protocol 3.51
		iter = int(int32(binary.BigEndian.Uint32(rest)))
	case 64: // protocol < 3.50: server signature
		signature = string(rest)
	default:
		return "", false, fmt.Errorf("%s request: %d unexpected trailing bytes", name, len(rest))
	}
	if fixedIter != 0 {
		iter = fixedIter
	}
	proof, err := rfc5802Proof(password, salt, token, signature, iter, sm3)
	return proof, false, err
}

// md5SHA256Request answers code 11.
func md5SHA256Request(p []byte, password string, iterations int) (string, bool, error) {
	if len(p) != saltHexLen+4 {
		return "", false, fmt.Errorf("md5_sha256 request: %d bytes, want %d", len(p), saltHexLen+4)
	}
	if password == "" {
		return "", false, fmt.Errorf("server asks for an md5_sha256 password: %w", errNoPassword)
	}
	if iterations == 0 {
		iterations = storedIteration
	}
	a, err := md5SHA256Answer(password, string(p[:saltHexLen]), p[saltHexLen:], iterations)
	return a, false, err
}

// rfc5802Keys derives ClientKey, ServerKey and StoredKey from a password,
// a hex salt and an iteration count.
func rfc5802Keys(password, saltHex string, iter int, sm3 bool) (client, server, stored []byte, err error) {
	salt, err := hex.DecodeString(saltHex)
	if err != nil || len(salt) != saltHexLen/2 {
		return nil, nil, nil, fmt.Errorf("salt %q is not %d hex digits", saltHex, saltHexLen)
	}
	if iter < 1 || iter > maxIteration {
		return nil, nil, nil, fmt.Errorf("iteration count %d out of range 1..%d", iter, maxIteration)
	}
	k, err := pbkdf2.Key(sha1.New, password, salt, iter, 32)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("derive key: %w", err)
	}
	serverLabel, sum := "Sever Key", sha256.Sum256
	if sm3 {
		serverLabel, sum = "Server Key", sm3Sum
	}
	client = hmacSHA256(k, []byte("Client Key"))
	server = hmacSHA256(k, []byte(serverLabel))
	s := sum(client)
	return client, server, s[:], nil
}

// rfc5802Proof is the client proof for codes 10, 12 and 13. A non-empty
// serverSignature is checked first.
func rfc5802Proof(password, saltHex, tokenHex, serverSignature string, iter int, sm3 bool) (string, error) {
	token, err := hex.DecodeString(tokenHex)
	if err != nil || len(token) != tokenHexLen/2 {
		return "", fmt.Errorf("token %q is not %d hex digits", tokenHex, tokenHexLen)
	}
	client, server, stored, err := rfc5802Keys(password, saltHex, iter, sm3)
	if err != nil {
		return "", err
	}
	if serverSignature != "" {
		want := hex.EncodeToString(hmacSHA256(server, token))
		if subtle.ConstantTimeCompare([]byte(want), []byte(serverSignature)) != 1 {
			return "", errors.New("server signature does not match the password: the server may not be who it claims")
		}
	}
	h := hmacSHA256(stored, token)
	for i := range h {
		h[i] ^= client[i]
	}
	return hex.EncodeToString(h), nil
}

// md5SHA256Answer is the code-11 answer for a password stored as SHA256
// with iter iterations: MD5 over what the server stores after "sha256",
// then the md5 salt.
func md5SHA256Answer(password, saltHex string, md5Salt []byte, iter int) (string, error) {
	_, server, stored, err := rfc5802Keys(password, saltHex, iter, false)
	if err != nil {
		return "", err
	}
	m := md5.New()
	m.Write([]byte(saltHex + hex.EncodeToString(server) + hex.EncodeToString(stored) + encodeIteration(iter)))
	m.Write(md5Salt)
	return "md5" + hex.EncodeToString(m.Sum(nil)), nil
}

// encodeIteration is how the server writes an iteration count at the end
// of a stored password: 11 characters, the i-th being "ecdfdcefade"[i]
// plus the i-th decimal digit counted from the least significant.
func encodeIteration(n int) string {
	const base = "ecdfdcefade"
	b := []byte(base)
	for i := range b {
		b[i] += byte(n % 10)
		n /= 10
	}
	return string(b)
}

// md5Answer is PostgreSQL's md5 answer.
func md5Answer(user, password string, salt []byte) string {
	inner := md5.Sum([]byte(password + user))
	m := md5.New()
	m.Write([]byte(hex.EncodeToString(inner[:])))
	m.Write(salt)
	return "md5" + hex.EncodeToString(m.Sum(nil))
}

// sha256MD5Answer answers a code-10 request for an md5-stored password.
func sha256MD5Answer(user, password string, salt []byte) string {
	inner := md5.Sum([]byte(password + user))
	s := sha256.New()
	s.Write([]byte(hex.EncodeToString(inner[:])))
	s.Write(salt)
	return "sha256" + hex.EncodeToString(s.Sum(nil))
}

func hmacSHA256(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

// sm3Sum is the SM3 hash (GB/T 32905-2016, also ISO/IEC 10118-3:2018),
// needed only for the StoredKey of sm3 authentication. The standard library
// has no SM3; this is a direct transcription of the standard's definition.
func sm3Sum(msg []byte) [32]byte {
	v := [8]uint32{0x7380166f, 0x4914b2b9, 0x172442d7, 0xda8a0600,
		0xa96f30bc, 0x163138aa, 0xe38dee4d, 0xb0fb0e4e}
	// Padding: 0x80, zeros to 56 mod 64, then the bit length big-endian.
	n := len(msg)
	padded := make([]byte, 0, n+72)
	padded = append(padded, msg...)
	padded = append(padded, 0x80)
	for len(padded)%64 != 56 {
		padded = append(padded, 0)
	}
	padded = binary.BigEndian.AppendUint64(padded, uint64(n)*8)
	for blk := padded; len(blk) > 0; blk = blk[64:] {
		sm3Compress(&v, blk[:64])
	}
	var out [32]byte
	for i, x := range v {
		binary.BigEndian.PutUint32(out[4*i:], x)
	}
	return out
}

func sm3Compress(v *[8]uint32, blk []byte) {
	var w [68]uint32
	for j := range 16 {
		w[j] = binary.BigEndian.Uint32(blk[4*j:])
	}
	p1 := func(x uint32) uint32 { return x ^ bits.RotateLeft32(x, 15) ^ bits.RotateLeft32(x, 23) }
	for j := 16; j < 68; j++ {
		w[j] = p1(w[j-16]^w[j-9]^bits.RotateLeft32(w[j-3], 15)) ^ bits.RotateLeft32(w[j-13], 7) ^ w[j-6]
	}
	a, b, c, d, e, f, g, h := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	for j := range 64 {
		t := uint32(0x79cc4519)
		if j >= 16 {
			t = 0x7a879d8a
		}
		ss1 := bits.RotateLeft32(bits.RotateLeft32(a, 12)+e+bits.RotateLeft32(t, j%32), 7)
		ss2 := ss1 ^ bits.RotateLeft32(a, 12)
		var ff, gg uint32
		if j < 16 {
			ff, gg = a^b^c, e^f^g
		} else {
			ff, gg = (a&b)|(a&c)|(b&c), (e&f)|(^e&g)
		}
		tt1 := ff + d + ss2 + (w[j] ^ w[j+4])
		tt2 := gg + h + ss1 + w[j]
		d, c, b, a = c, bits.RotateLeft32(b, 9), a, tt1
		h, g, f, e = g, bits.RotateLeft32(f, 19), e, tt2^bits.RotateLeft32(tt2, 9)^bits.RotateLeft32(tt2, 17)
	}
	v[0] ^= a
	v[1] ^= b
	v[2] ^= c
	v[3] ^= d
	v[4] ^= e
	v[5] ^= f
	v[6] ^= g
	v[7] ^= h
}
