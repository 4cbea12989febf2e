package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

const pgBin = "/usr/lib/postgresql/15/bin/"

// Postgres is a throwaway PostgreSQL 15 cluster.
type Postgres struct {
	Dir  string // data directory
	Port int
	TLS  *TLSFiles // with PostgresOptions.TLS: the server's certificates, its CA and a client's

	root     string            // temp dir holding data/, sock/ and postgres.log
	settings map[string]string // the caller's postgresql.conf settings, which a standby keeps
	mu       sync.Mutex
	running  bool
}

// PostgresOptions configures StartPostgres.
type PostgresOptions struct {
	Settings map[string]string // extra postgresql.conf settings, e.g. "wal_level": "replica" to test a misconfigured source
	// Fresh runs initdb for this cluster instead of copying the cached
	// template. Copies share the template's system identifier; a fresh
	// cluster has its own, as two real servers do.
	Fresh bool
	// TLS makes a CA and certificates (TLSFiles) and turns ssl on with
	// them; clients may still connect without TLS.
	TLS bool
	// HBA are pg_hba.conf lines put before the cluster's own (which
	// trust every local and loopback connection), e.g. "host all pw
	// 127.0.0.1/32 password" for a role that must send its password.
	HBA []string
}

var reapPostgres sync.Once

// StartPostgres creates a cluster from the cached template and starts it.
func StartPostgres(ctx context.Context, opts PostgresOptions) (*Postgres, error) {
	tmpl, err := postgresTemplate()
	if err != nil {
		return nil, err
	}
	reapPostgres.Do(func() {
		reapOrphans("decant-pg-", func(root string) {
			pgCtl(context.Background(), root, filepath.Join(root, "data"), "-m", "immediate", "stop")
		})
	})
	root, err := newTempRoot("decant-pg-", "postgres")
	if err != nil {
		return nil, err
	}
	p := &Postgres{Dir: filepath.Join(root, "data"), root: root, settings: opts.Settings}
	if opts.Fresh {
		tmpl = ""
	}
	if err := p.setup(tmpl); err != nil {
		p.Remove()
		return nil, err
	}
	if err := p.prependHBA(opts.HBA); err != nil {
		p.Remove()
		return nil, err
	}
	if opts.TLS {
		if p.TLS, err = makeTLS(filepath.Join(root, "tls"), "postgres"); err != nil {
			p.Remove()
			return nil, err
		}
		settings := map[string]string{"ssl": "on", "ssl_cert_file": p.TLS.ServerCert, "ssl_key_file": p.TLS.ServerKey, "ssl_ca_file": p.TLS.CA}
		for k, v := range opts.Settings {
			settings[k] = v
		}
		opts.Settings = settings
	}
	if err := p.startOnFreePort(ctx, opts.Settings); err != nil {
		p.Remove()
		return nil, err
	}
	return p, nil
}

// prependHBA puts lines before the data directory's pg_hba.conf rules,
// which the server reads at start; the first rule that matches wins.
func (p *Postgres) prependHBA(lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	path := filepath.Join(p.Dir, "pg_hba.conf")
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"+string(old)), 0o600); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}

// startOnFreePort writes decant.conf for a free port and starts the
// server. FreePort's port may be taken before the server binds it; it
// retries then.
func (p *Postgres) startOnFreePort(ctx context.Context, settings map[string]string) error {
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err == nil {
			p.Port = port
			err = p.writeConf(settings)
		}
		if err == nil {
			err = p.Start(ctx)
		}
		if err == nil || attempt == 3 || !strings.Contains(p.LogTail(20), "Address already in use") {
			return err
		}
	}
}

// Standby makes a physical hot standby of p, which must run: a base
// backup taken over streaming replication (pg_basebackup -R, so that it
// follows p through primary_conninfo), in a temp dir of its own, started
// on a free port with p's settings. PostgreSQL 15 copies no logical slot
// to it: promoted, it has none. Remove it when done.
func (p *Postgres) Standby(ctx context.Context) (*Postgres, error) {
	root, err := newTempRoot("decant-pg-", "postgres")
	if err != nil {
		return nil, err
	}
	s := &Postgres{Dir: filepath.Join(root, "data"), root: root, settings: p.settings}
	if err := mkdirOwned(filepath.Join(root, "sock"), 0o755, "postgres"); err != nil {
		s.Remove()
		return nil, err
	}
	backup := asPostgres(ctx, pgBin+"pg_basebackup", "-D", s.Dir, "-R", "-X", "stream", "-c", "fast",
		"-h", "127.0.0.1", "-p", fmt.Sprint(p.Port), "-U", "postgres")
	backup.Dir = root
	if _, err := run("pg_basebackup", backup); err != nil {
		s.Remove()
		return nil, err
	}
	// The backup holds p's decant.conf (its port and socket directory):
	// the standby gets its own.
	if err := s.startOnFreePort(ctx, s.settings); err != nil {
		s.Remove()
		return nil, err
	}
	return s, nil
}

// Promote ends a standby's recovery and waits until it accepts writes.
func (p *Postgres) Promote(ctx context.Context) error {
	return p.ctl(ctx, "promote", "-w", "-t", "60")
}

// postgresTemplate returns the cached initdb output, building it if needed.
func postgresTemplate() (string, error) {
	for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := exec.LookPath(pgBin + b); err != nil {
			return "", fmt.Errorf("harness: PostgreSQL 15 %s not found in %s (run make deps)", b, pgBin)
		}
	}
	if err := ensurePostgresUser(); err != nil {
		return "", err
	}
	if err := checkHost("postgres"); err != nil {
		return "", err
	}
	key := binaryKey(pgBin+"postgres") + " " + strings.Join(initdbArgs, " ")
	return cachedTemplate("pg15", key, initdb)
}

var initdbArgs = []string{"-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"}

// initdb creates a new cluster in dir.
func initdb(dir string) error {
	if err := mkdirOwned(dir, 0o700, "postgres"); err != nil {
		return err
	}
	cmd := asPostgres(context.Background(), pgBin+"initdb", append(initdbArgs, "-D", dir)...)
	cmd.Dir = filepath.Dir(dir)
	_, err := run("initdb", cmd)
	return err
}

// setup copies the template (or, without one, runs initdb) and makes
// postgresql.conf include decant.conf, which writeConf owns.
func (p *Postgres) setup(tmpl string) error {
	create := func() error { return copyTree(tmpl, p.Dir) }
	if tmpl == "" {
		create = func() error { return initdb(p.Dir) }
	}
	if err := create(); err != nil {
		return err
	}
	if err := mkdirOwned(filepath.Join(p.root, "sock"), 0o755, "postgres"); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(p.Dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	_, err = f.WriteString("\ninclude 'decant.conf'\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}

// writeConf writes the harness settings, then the caller's, into decant.conf.
func (p *Postgres) writeConf(extra map[string]string) error {
	settings := map[string]string{
		"listen_addresses":        "127.0.0.1",
		"port":                    fmt.Sprint(p.Port),
		"unix_socket_directories": filepath.Join(p.root, "sock"),
		"wal_level":               "logical",
		// Slots, and the replication states of the origins decant's
		// apply sessions take (one per pipeline a test leaves).
		"max_replication_slots":     "64",
		"max_wal_senders":           "20",
		"max_prepared_transactions": "10",
		"timezone":                  "UTC",
		"logging_collector":         "off",
	}
	for k, v := range extra {
		settings[k] = v
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		// Any postgresql.conf value may be single-quoted.
		fmt.Fprintf(&b, "%s = '%s'\n", k, strings.ReplaceAll(settings[k], "'", "''"))
	}
	if err := os.WriteFile(filepath.Join(p.Dir, "decant.conf"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}

// DSN returns a pgx URL for database db over TCP.
func (p *Postgres) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
}

// CreateDatabase creates database name.
func (p *Postgres) CreateDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("harness: create database %s: %w", name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("harness: create database %s: %w", name, err)
	}
	return nil
}

// Start starts the server again after Stop or Crash, on the same port.
func (p *Postgres) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return fmt.Errorf("harness: postgres %s is already running", p.Dir)
	}
	if err := p.ctl(ctx, "start", "-w", "-t", "60", "-l", p.logFile()); err != nil {
		// pg_ctl may give up (timeout, ctx) while the server still starts.
		p.ctl(context.Background(), "stop", "-m", "immediate")
		return err
	}
	p.running = true
	return nil
}

// Stop shuts the server down cleanly; stopping a stopped server does nothing.
func (p *Postgres) Stop() error { return p.stop("fast") }

// Crash stops the server without a checkpoint; Start then runs crash recovery.
func (p *Postgres) Crash() error { return p.stop("immediate") }

func (p *Postgres) stop(mode string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return nil
	}
	if err := p.ctl(context.Background(), "stop", "-m", mode, "-w"); err != nil {
		return err
	}
	p.running = false
	return nil
}

// Remove stops the server if it runs and deletes its temp dir.
func (p *Postgres) Remove() error {
	err := p.Stop()
	if rerr := os.RemoveAll(p.root); rerr != nil {
		err = errors.Join(err, fmt.Errorf("harness: %w", rerr))
	}
	return err
}

// LogTail returns the last n lines of the server log.
func (p *Postgres) LogTail(n int) string { return logTail(p.logFile(), n) }

func (p *Postgres) logFile() string { return filepath.Join(p.root, "postgres.log") }

// ctl runs pg_ctl on this cluster; errors carry the server log tail.
func (p *Postgres) ctl(ctx context.Context, action string, args ...string) error {
	if err := pgCtl(ctx, p.root, p.Dir, append([]string{action}, args...)...); err != nil {
		return fmt.Errorf("%v (postgres on port %d; log: %s)", err, p.Port, oneLine(p.LogTail(8)))
	}
	return nil
}

func pgCtl(ctx context.Context, root, dataDir string, args ...string) error {
	cmd := asPostgres(ctx, pgBin+"pg_ctl", append([]string{"-D", dataDir}, args...)...)
	cmd.Dir = root
	_, err := run("pg_ctl "+strings.Join(args, " "), cmd)
	return err
}

// asPostgres runs a PostgreSQL binary as the postgres OS user: postgres
// refuses to run as root.
func asPostgres(ctx context.Context, bin string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", bin}, args...)...)
}
