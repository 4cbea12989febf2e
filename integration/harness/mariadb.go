package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MariaDB is a throwaway MariaDB instance. Tests and decant connect over TCP
// as decant/decant; the harness itself uses the root account over the socket.
type MariaDB struct {
	Dir  string // data directory; also holds s.sock, pid and err.log
	Port int
	TLS  *TLSFiles // with MariaDBOptions.TLS: the server's certificates, its CA and a client's

	root string // temp dir holding data/
	bins map[string]string
	mu   sync.Mutex
	proc *os.Process   // the running mariadbd, nil when stopped
	done chan struct{} // closed when proc has exited and been reaped
}

var reapMariaDB sync.Once

// MariaDBOptions configures StartMariaDBWith.
type MariaDBOptions struct {
	// TLS makes a CA and certificates (TLSFiles) and starts the server
	// with --ssl-ca, --ssl-cert and --ssl-key.
	TLS bool
}

// StartMariaDB creates an instance from the cached template and starts it.
func StartMariaDB(ctx context.Context) (*MariaDB, error) {
	return StartMariaDBWith(ctx, MariaDBOptions{})
}

// StartMariaDBWith is StartMariaDB with options.
func StartMariaDBWith(ctx context.Context, opts MariaDBOptions) (*MariaDB, error) {
	bins, err := mariaDBBins()
	if err != nil {
		return nil, err
	}
	tmpl, err := mariaDBTemplate(bins)
	if err != nil {
		return nil, err
	}
	reapMariaDB.Do(func() { reapOrphans("decant-mariadb-", killOrphanMariaDB) })
	root, err := newTempRoot("decant-mariadb-", "mysql")
	if err != nil {
		return nil, err
	}
	m := &MariaDB{Dir: filepath.Join(root, "data"), root: root, bins: bins}
	if err := copyTree(tmpl, m.Dir); err != nil {
		m.Remove()
		return nil, err
	}
	// A temp dir of its own: with the default, /tmp, its internal temporary
	// tables share a directory with every other process on the machine (a CI
	// run once lost one: "Error on delete of '/tmp/#sql-temptable-...MAI'").
	if err := makeOwnedDir(m.tmpDir(), "mysql"); err != nil {
		m.Remove()
		return nil, err
	}
	if opts.TLS {
		if m.TLS, err = makeTLS(filepath.Join(root, "tls"), "mysql"); err != nil {
			m.Remove()
			return nil, err
		}
	}
	// FreePort's port may be taken before the server binds it; retry then.
	for attempt := 1; ; attempt++ {
		if m.Port, err = FreePort(); err == nil {
			err = m.Start(ctx)
		}
		if err == nil {
			break
		}
		if attempt == 3 || !strings.Contains(m.LogTail(20), "Address already in use") {
			m.Remove()
			return nil, err
		}
	}
	const createUser = "CREATE USER 'decant'@'127.0.0.1' IDENTIFIED BY 'decant';" +
		" GRANT ALL ON *.* TO 'decant'@'127.0.0.1' WITH GRANT OPTION;"
	if _, err := m.Exec(ctx, "", createUser); err != nil {
		m.Remove()
		return nil, err
	}
	return m, nil
}

func mariaDBBins() (map[string]string, error) {
	bins := map[string]string{}
	for _, name := range []string{"mariadb-install-db", "mariadbd", "mariadb", "mariadb-admin"} {
		path, err := findBin(name)
		if err != nil {
			return nil, err
		}
		bins[name] = path
	}
	return bins, checkHost("mysql")
}

// mariaDBTemplate returns the cached mariadb-install-db output.
func mariaDBTemplate(bins map[string]string) (string, error) {
	// The redo log size must match the server's, or every copy resizes it on
	// first start.
	args := []string{"--no-defaults", "--user=mysql", "--auth-root-authentication-method=socket",
		"--skip-test-db", "--innodb-log-file-size=48M"}
	key := binaryKey(bins["mariadbd"]) + " " + strings.Join(args, " ")
	return cachedTemplate("mariadb", key, func(dir string) error {
		if err := mkdirOwned(dir, 0o755, "mysql"); err != nil {
			return err
		}
		_, err := run("mariadb-install-db", exec.Command(bins["mariadb-install-db"], append(args, "--datadir="+dir)...))
		return err
	})
}

// DSN returns a URL for database db over TCP.
func (m *MariaDB) DSN(db string) string {
	return fmt.Sprintf("mysql://decant:decant@127.0.0.1:%d/%s", m.Port, db)
}

// CreateDatabase creates database name with the utf8mb4_bin collation.
func (m *MariaDB) CreateDatabase(ctx context.Context, name string) error {
	quoted := "`" + strings.ReplaceAll(name, "`", "``") + "`"
	_, err := m.Exec(ctx, "", "CREATE DATABASE "+quoted+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")
	return err
}

// Exec runs sql (one or more statements) in database db ("" for none) with
// the mariadb client as root and returns its tab-separated output, without
// column names.
func (m *MariaDB) Exec(ctx context.Context, db, sql string) (string, error) {
	args := []string{"--no-defaults", "-S", m.socket(), "-uroot", "--default-character-set=utf8mb4",
		"--batch", "--raw", "--skip-column-names"}
	if db != "" {
		args = append(args, "--database="+db)
	}
	cmd := exec.CommandContext(ctx, m.bins["mariadb"], args...)
	cmd.Stdin = strings.NewReader(sql) // no argv length limit
	return run("mariadb exec", cmd)
}

// Start starts the server again after Stop or Crash, on the same port, and
// waits until it answers (60s at most).
func (m *MariaDB) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		return fmt.Errorf("harness: mariadb %s is already running", m.Dir)
	}
	cmd := exec.Command(m.bins["mariadbd"], "--no-defaults", "--user=mysql", "--datadir="+m.Dir,
		"--port="+strconv.Itoa(m.Port), "--bind-address=127.0.0.1", "--socket="+m.socket(),
		"--pid-file="+filepath.Join(m.Dir, "pid"), "--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_bin", "--local-infile=1", "--skip-log-bin",
		"--innodb-buffer-pool-size=128M", "--innodb-log-file-size=48M", "--max-connections=200",
		"--tmpdir="+m.tmpDir(), "--log-error="+m.logFile())
	if m.TLS != nil {
		cmd.Args = append(cmd.Args, "--ssl-ca="+m.TLS.CA, "--ssl-cert="+m.TLS.ServerCert, "--ssl-key="+m.TLS.ServerKey)
	}
	cmd.Dir = m.root
	// Own process group: ^C in the terminal does not reach the server, and a
	// hung server can be killed with its helpers.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("harness: start mariadbd: %w", err)
	}
	m.proc, m.done = cmd.Process, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(m.done)
	if err := m.waitReady(ctx); err != nil {
		m.kill()
		return err
	}
	return nil
}

// waitReady polls mariadb-admin ping until the server answers.
func (m *MariaDB) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		ping := exec.CommandContext(ctx, m.bins["mariadb-admin"], "--no-defaults", "-S", m.socket(), "-uroot", "ping")
		if ping.Run() == nil {
			return nil
		}
		select {
		case <-m.done:
			return m.errorf("mariadbd exited during startup")
		case <-ctx.Done():
			return m.errorf("mariadbd not ready: %v", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop shuts the server down cleanly (SIGTERM, SIGKILL after 60s); stopping
// a stopped server does nothing.
func (m *MariaDB) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	// m.proc is the pid in the pid file: mariadbd does not fork. Signalling
	// our child rather than reading the file cannot hit a stale pid.
	m.proc.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
		m.proc = nil
		return nil
	case <-time.After(60 * time.Second):
		m.kill()
		return m.errorf("mariadbd did not stop within 60s after SIGTERM; killed it")
	}
}

// Crash kills the server with SIGKILL; Start then runs crash recovery.
func (m *MariaDB) Crash() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		m.kill()
	}
	return nil
}

// kill SIGKILLs the server's process group and waits until it is reaped.
func (m *MariaDB) kill() {
	syscall.Kill(-m.proc.Pid, syscall.SIGKILL)
	<-m.done
	m.proc = nil
}

// Remove stops the server if it runs and deletes its temp dir.
func (m *MariaDB) Remove() error {
	err := m.Stop()
	if rerr := os.RemoveAll(m.root); rerr != nil {
		err = errors.Join(err, fmt.Errorf("harness: %w", rerr))
	}
	return err
}

// LogTail returns the last n lines of the error log.
func (m *MariaDB) LogTail(n int) string { return logTail(m.logFile(), n) }

func (m *MariaDB) logFile() string { return filepath.Join(m.Dir, "err.log") }
func (m *MariaDB) socket() string  { return filepath.Join(m.Dir, "s.sock") }
func (m *MariaDB) tmpDir() string  { return filepath.Join(m.root, "tmp") }

func (m *MariaDB) errorf(format string, args ...any) error {
	return fmt.Errorf("harness: "+format+" (mariadb on port %d; log: %s)", append(args, m.Port, oneLine(m.LogTail(8)))...)
}

// killOrphanMariaDB kills the server of a dead harness process, found by the
// pid file and checked against its command line so a reused pid is spared.
func killOrphanMariaDB(root string) {
	dataDir := filepath.Join(root, "data")
	b, err := os.ReadFile(filepath.Join(dataDir, "pid"))
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), "--datadir="+dataDir+"\x00") {
		return
	}
	syscall.Kill(pid, syscall.SIGKILL)
	// init reaps it; wait so its files are closed before the dir goes.
	for i := 0; i < 100 && procID(pid) != ""; i++ {
		time.Sleep(50 * time.Millisecond)
	}
}
