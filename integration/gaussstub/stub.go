// Package gaussstub is a stand-in GaussDB/openGauss server for tests. It
// speaks the frontend/backend protocol over a real TCP socket,
// authenticates like the real server (trust, cleartext, md5, md5_sha256,
// sha256), answers the few SQL and replication commands decant sends, and
// streams a scripted sequence of transactions the way a walsender does in
// docs/gaussdb-decoding.md: START_REPLICATION with the serial/parallel
// split of §1.3, XLogData 'w' (§1.4), the 33-byte little-endian keepalive
// 'k' (§1.5), the 65-byte little-endian status update 'r' (§1.6) and the
// restart rules of §5.2. Payloads are encoded by source/gauss/gaussenc.
//
// It is written from the specification, not from decant's client code: the
// option rules, the authentication checks and the message layouts here are
// separate implementations, so a test against it checks decant rather than
// repeating it.
package gaussstub

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
)

// Config configures a Server.
type Config struct {
	User, Password string
	// AuthMethod is the pg_hba method the server applies: "trust" (the
	// default), "password" (cleartext), "md5", "md5_sha256" (md5 method
	// with a sha256-stored password), or "sha256". "gss" and "scram" make
	// the server ask for GSSAPI or for PostgreSQL SASL, which decant does
	// not speak, to test how it refuses.
	AuthMethod string
	SystemID   string // IDENTIFY_SYSTEM systemid; "7000000000000000001" when empty
	// KeepaliveInterval is how often a replication session sends 'k'
	// (and 'h' heartbeats when asked for); 1 s when zero.
	KeepaliveInterval time.Duration
	// Iterations is the PBKDF2 iteration count of the stored sha256
	// password; 10000 (the server's ITERATION_COUNT) when zero. sha256
	// sends it; md5_sha256 does not, and checks the answer against the
	// stored text, count included (crypt.cpp crypt_verify).
	Iterations int
	// StartLSN is the WAL end before any transaction is appended; slots
	// created on an empty script start there. 0/1000000 when zero.
	StartLSN source.LSN
	// Flavour is the server the stand-in plays: "gaussdb" (the default)
	// or "opengauss". They differ in version(), in pg_replication_slots'
	// columns, in CSN-ordered slots and in the decoding options their
	// parsers take (flavours.go).
	Flavour string
	// TLS, when set, makes the server answer SSLRequest with 'S' and a
	// handshake with this configuration; RequireTLS refuses sessions
	// without it, as a hostssl-only pg_hba.conf does.
	TLS        *tls.Config
	RequireTLS bool
}

// Txn is one scripted transaction. Records are BEGIN, the changes and
// COMMIT, as the decoder's Record type describes them; the stand-in
// encodes them with gaussenc.Transaction in the session's format.
type Txn struct {
	Xid                              uint64
	CSN                              uint64
	FirstLSN, CommitStart, CommitEnd source.LSN
	Records                          []gauss.Record
}

// item is one entry of the script: a transaction or a decode position.
type item struct {
	txn *Txn
	pos *position
}

type position struct{ csn, lsn uint64 }

type slot struct {
	plugin         string
	csn            bool
	confirmedFlush source.LSN
	confirmedCSN   uint64
	active         bool
}

// Server is a running stand-in. All methods are safe for concurrent use.
type Server struct {
	cfg     Config
	flavour *flavour
	keys    storedPassword
	ln      net.Listener
	wg      sync.WaitGroup // the accept loop and every session

	mu       sync.Mutex
	items    []item // append-only; an appended item is never modified
	end      source.LSN
	maxCSN   uint64
	changed  chan struct{} // closed and replaced on every append
	slots    map[string]*slot
	sessions map[*session]struct{}
	received [][]byte
	tables   []Table // what the catalog queries see
	nextPID  uint32
	closed   bool
}

// Start listens on 127.0.0.1 on a free port and serves until Close.
func Start(cfg Config) (*Server, error) {
	switch cfg.AuthMethod {
	case "":
		cfg.AuthMethod = "trust"
	case "trust", "password", "md5", "md5_sha256", "sha256", "gss", "scram":
	default:
		return nil, fmt.Errorf("gaussstub: unknown auth method %q", cfg.AuthMethod)
	}
	fl, ok := flavours[cfg.Flavour]
	if !ok {
		return nil, fmt.Errorf("gaussstub: unknown flavour %q: want gaussdb or opengauss", cfg.Flavour)
	}
	if cfg.SystemID == "" {
		cfg.SystemID = "7000000000000000001"
	}
	if cfg.KeepaliveInterval <= 0 {
		cfg.KeepaliveInterval = time.Second
	}
	if cfg.Iterations <= 0 {
		cfg.Iterations = 10000
	}
	if cfg.StartLSN == 0 {
		cfg.StartLSN = 0x1000000
	}
	keys, err := newStoredPassword(cfg.Password, cfg.Iterations)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gaussstub: listen: %w", err)
	}
	s := &Server{
		cfg: cfg, flavour: fl, keys: keys, ln: ln,
		end: cfg.StartLSN, changed: make(chan struct{}),
		slots: map[string]*slot{}, sessions: map[*session]struct{}{},
		nextPID: 1000,
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.acceptLoop()
	}()
	return s, nil
}

func (s *Server) acceptLoop() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // listener closed
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.nextPID++
		sess := newSession(s, c, s.nextPID)
		s.sessions[sess] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.sessions, sess)
				s.mu.Unlock()
				close(sess.done)
			}()
			sess.serve()
		}()
	}
}

// Addr is the listening address, host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// DSN is a gaussdb:// (or, for the openGauss flavour, opengauss://) URL
// for database db with the configured user.
func (s *Server) DSN(db string) string {
	u := url.URL{Scheme: s.flavour.scheme, Host: s.Addr(), Path: "/" + db}
	if s.cfg.Password != "" {
		u.User = url.UserPassword(s.cfg.User, s.cfg.Password)
	} else {
		u.User = url.User(s.cfg.User)
	}
	return u.String()
}

// CreateSlot creates a logical slot as pg_create_logical_replication_slot
// does: an LSN slot starts at the current end of the script; a CSN slot
// (csnOrder) at the highest CSN in it (at least 1, since confirmed_csn 0
// marks an LSN slot). It panics if the slot exists.
func (s *Server) CreateSlot(name, plugin string, csnOrder bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.createSlotLocked(name, plugin, csnOrder); err != nil {
		panic("gaussstub: " + err.Error())
	}
}

func (s *Server) createSlotLocked(name, plugin string, csnOrder bool) (*slot, error) {
	if _, ok := s.slots[name]; ok {
		return nil, fmt.Errorf("replication slot %q already exists", name)
	}
	sl := &slot{plugin: plugin, csn: csnOrder, confirmedFlush: s.end}
	if csnOrder {
		sl.confirmedCSN = max(s.maxCSN, 1)
	}
	s.slots[name] = sl
	return sl, nil
}

// Append adds transactions to the end of the script, in commit order (LSN
// order for LSN slots, CSN order for CSN slots). Running sessions send
// the ones they want at once.
func (s *Server) Append(txns ...Txn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range txns {
		t := txns[i]
		if t.CommitEnd < t.CommitStart {
			panic(fmt.Sprintf("gaussstub: txn %d: commit end %s before commit start %s", t.Xid, t.CommitEnd, t.CommitStart))
		}
		s.items = append(s.items, item{txn: &t})
		s.end = max(s.end, t.CommitEnd)
		s.maxCSN = max(s.maxCSN, t.CSN)
	}
	s.notifyLocked()
}

// AddWAL writes n bytes of WAL that no slot decodes into a transaction,
// as a real server does between commits whatever the clients do: its
// checkpoints, the bgwriter's running-xacts record (openGauss
// standby.cpp LogStandbySnapshot, every 15 s), a non-transactional
// logical message. The log end IDENTIFY_SYSTEM reports (walsender.cpp
// IdentifySystem, the flush position) and parallel keepalives move past
// the last commit; nothing is sent for it.
func (s *Server) AddWAL(n source.LSN) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.end += n
	s.notifyLocked()
}

// CommitUnlisted commits a transaction on a table outside every session's
// white-table-list: it takes the next CSN and some WAL, and no session
// sends it (the decoder filters it out, and skip-empty-xacts drops the
// rest). It returns the CSN it took.
func (s *Server) CommitUnlisted() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxCSN++
	s.end += 0x100
	s.notifyLocked()
	return s.maxCSN
}

// AddPosition appends a decode-position message ('L'), which sessions with
// enable-decode-position send in stream order; it is what
// gs_add_logical_decoding_position_xlog() makes the real server emit.
func (s *Server) AddPosition(csn, lsn uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addPositionLocked(csn, lsn)
}

func (s *Server) addPositionLocked(csn, lsn uint64) {
	s.items = append(s.items, item{pos: &position{csn: csn, lsn: lsn}})
	s.end = max(s.end, source.LSN(lsn))
	s.notifyLocked()
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Slot reports a slot's confirmed positions and whether a session is
// streaming from it; ok is false when it does not exist.
func (s *Server) Slot(name string) (confirmedFlush source.LSN, confirmedCSN uint64, active bool, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.slots[name]
	if !ok {
		return 0, 0, false, false
	}
	return sl.confirmedFlush, sl.confirmedCSN, sl.active, true
}

// Received returns every 'r' message the clients sent (whole CopyData
// payloads, 'r' byte included), in arrival order, rejected ones too.
func (s *Server) Received() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.received))
	for i, b := range s.received {
		out[i] = append([]byte(nil), b...)
	}
	return out
}

// DropConnections cuts every open connection at once, as a network
// failure or a server restart would, and waits until their sessions are
// gone (so their slots are no longer active). The server keeps listening.
func (s *Server) DropConnections() {
	s.mu.Lock()
	var dones []chan struct{}
	for sess := range s.sessions {
		sess.conn.Close()
		dones = append(dones, sess.done)
	}
	s.mu.Unlock()
	for _, d := range dones {
		<-d
	}
}

// Close stops listening, cuts every connection and waits for all the
// server's goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.ln.Close()
	s.DropConnections()
	s.wg.Wait()
}

func decimal(v uint64) string { return strconv.FormatUint(v, 10) }
