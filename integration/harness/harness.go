// Package harness starts and stops throwaway PostgreSQL 15 and MariaDB 10.11
// servers for decant's integration tests, demo and benchmarks.
//
// Every server lives in its own temp directory (os.TempDir()/decant-*), listens
// on 127.0.0.1 on a free port and is stopped through its own data directory or
// pid, never by process name. The system servers on 5432 and 3306 are never
// touched. Freshly initialised data directories are built once per machine
// into os.TempDir()/decant-cache and copied for each server.
//
// The harness must run as root: it runs the servers as the OS users postgres
// and mysql.
package harness

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// FreePort asks the kernel for a free loopback port. The port is released
// before returning, so another process may take it; the Start functions retry
// with a new port when that happens.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("harness: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PostgresT starts a Postgres for a test and removes it when the test ends.
func PostgresT(t testing.TB, opts PostgresOptions) *Postgres {
	t.Helper()
	p, err := StartPostgres(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("postgres log tail (%s):\n%s", p.Dir, p.LogTail(30))
		}
		if err := p.Remove(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// StandbyT makes a hot standby of p for a test (Postgres.Standby) and
// removes it when the test ends.
func StandbyT(t testing.TB, p *Postgres) *Postgres {
	t.Helper()
	s, err := p.Standby(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("standby log tail (%s):\n%s", s.Dir, s.LogTail(30))
		}
		if err := s.Remove(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// MariaDBT starts a MariaDB for a test and removes it when the test ends.
func MariaDBT(t testing.TB, opts ...MariaDBOptions) *MariaDB {
	t.Helper()
	var o MariaDBOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	m, err := StartMariaDBWith(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("mariadb log tail (%s):\n%s", m.Dir, m.LogTail(30))
		}
		if err := m.Remove(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// findBin returns the path of a server binary, or an error asking for make deps.
func findBin(name string) (string, error) {
	if path, err := exec.LookPath(name); err == nil {
		return path, nil
	}
	// /usr/sbin (mariadbd) is not always on a test's PATH.
	if path, err := exec.LookPath(filepath.Join("/usr/sbin", name)); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("harness: %s not found (run make deps)", name)
}

// checkHost verifies what every server needs: root, the OS user the server
// runs as, and a temp dir that user can reach.
func checkHost(osUser string) error {
	if os.Geteuid() != 0 {
		return errors.New("harness: must run as root (servers run as the postgres and mysql OS users)")
	}
	if _, _, err := lookupUser(osUser); err != nil {
		return err
	}
	// The servers run as another user, so every parent of the temp dir must
	// be searchable by others.
	for dir := os.TempDir(); ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("harness: temp dir %s is not reachable by user %s (%s not searchable); set TMPDIR=/tmp", os.TempDir(), osUser, dir)
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

// ensurePostgresUser creates the postgres OS user if it is missing.
func ensurePostgresUser() error {
	var unknown user.UnknownUserError
	if _, err := user.Lookup("postgres"); !errors.As(err, &unknown) {
		return nil
	}
	_, err := run("useradd postgres", exec.Command("useradd", "--system", "--home", "/var/lib/postgresql", "--shell", "/bin/bash", "postgres"))
	return err
}

func lookupUser(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("harness: OS user %s: %v (run make deps)", name, err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// mkdirOwned creates dir (mode perm) owned by the OS user owner.
func mkdirOwned(dir string, perm os.FileMode, owner string) error {
	uid, gid, err := lookupUser(owner)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dir, perm); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	// Chmod as well: Mkdir's mode is filtered by the umask.
	if err := os.Chmod(dir, perm); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}

// newTempRoot creates a server's temp dir, owned by owner and readable by all
// (MkdirTemp makes it 0700 root), tagged with this process as its owner.
func newTempRoot(prefix, owner string) (string, error) {
	root, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", fmt.Errorf("harness: %w", err)
	}
	if err := os.WriteFile(filepath.Join(root, ownerFile), []byte(procID(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(root)
		return "", fmt.Errorf("harness: %w", err)
	}
	if err := giveTo(root, 0o755, owner); err != nil {
		os.RemoveAll(root)
		return "", err
	}
	return root, nil
}

// makeOwnedDir creates dir (mode 0700) owned by the OS user owner.
func makeOwnedDir(dir, owner string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return giveTo(dir, 0o700, owner)
}

// giveTo sets dir's mode and makes the OS user owner its owner.
func giveTo(dir string, mode os.FileMode, owner string) error {
	uid, gid, err := lookupUser(owner)
	if err == nil {
		err = os.Chmod(dir, mode)
	}
	if err == nil {
		err = os.Chown(dir, uid, gid)
	}
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	return nil
}

// cachedTemplate returns os.TempDir()/decant-cache/NAME-HASH, building it with
// build on first use. HASH covers key, so a new server binary or new init
// arguments get a new template. A file lock serialises builders across test
// binaries running in parallel; a finished template is never modified.
func cachedTemplate(name, key string, build func(dir string) error) (string, error) {
	cache := filepath.Join(os.TempDir(), "decant-cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("harness: template cache: %w", err)
	}
	if err := os.Chmod(cache, 0o755); err != nil { // the server users must traverse it
		return "", fmt.Errorf("harness: template cache: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cache, name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("harness: template cache: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("harness: lock template cache: %w", err)
	}
	dir := filepath.Join(cache, fmt.Sprintf("%s-%x", name, sha256.Sum256([]byte(key)))[:len(name)+13])
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	// Build under a temporary name and rename, so an interrupted build never
	// looks finished.
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := build(tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("harness: template cache: %w", err)
	}
	return dir, nil
}

// binaryKey identifies a binary's version cheaply (path, size, mtime).
func binaryKey(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return path
	}
	return fmt.Sprintf("%s %d %d", path, fi.Size(), fi.ModTime().UnixNano())
}

// copyTree copies src to the new directory dst; cp -a keeps owners and modes.
func copyTree(src, dst string) error {
	_, err := run("copy template", exec.Command("cp", "-a", src, dst))
	return err
}

// run runs cmd and returns its stdout; the error names what failed and carries
// the command's output on one line.
func run(what string, cmd *exec.Cmd) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("harness: %s: %v: %s", what, err, oneLine(stderr.String()+"\n"+stdout.String()))
	}
	return stdout.String(), nil
}

// logTail returns the last n lines of a log file.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// oneLine joins the non-empty lines of s with " | " so errors stay on one line.
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " | ")
}
