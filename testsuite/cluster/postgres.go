package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/durable-ralph/ralph/internal/devserver"
)

// PostgresBinDir is where Debian's postgresql-15 package installs the
// server binaries (initdb, postgres, pg_isready, psql).
const PostgresBinDir = "/usr/lib/postgresql/15/bin"

// PostgresUser is the superuser role of every Postgres this package starts;
// it authenticates without a password (trust) over TCP on 127.0.0.1.
const PostgresUser = "postgres"

// Postgres is a private PostgreSQL server in a temporary directory, started
// by StartPostgres.
type Postgres struct {
	host    string
	port    int
	dir     string // root of everything: data/, sock/, postgres.log
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error         // cmd.Wait's result, set before exited closes

	stopOnce sync.Once
	stopErr  error
}

// PostgresAvailable reports why PostgreSQL 15 cannot be run here, or nil
// when its binaries are installed in PostgresBinDir (and, when running as
// root, the postgres system user exists to run them as).
func PostgresAvailable() error {
	for _, name := range []string{"initdb", "postgres", "pg_isready", "psql"} {
		p := filepath.Join(PostgresBinDir, name)
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s not found (Debian package postgresql-15): %w", p, err)
		}
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return fmt.Errorf("running as root and no postgres system user to run PostgreSQL as: %w", err)
		}
	}
	return nil
}

// StartPostgres starts a private PostgreSQL 15 server on a free port of
// 127.0.0.1, with trust authentication for local TCP connections, and
// returns once it accepts connections. t.Cleanup stops it (immediate
// shutdown) and removes its directory.
//
// When PostgreSQL is not installed, StartPostgres skips the test, or fails
// it when the environment variable CI is set. When the test runs as root,
// the server runs as the postgres system user (PostgreSQL refuses root).
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	if err := PostgresAvailable(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL 15 is required when CI is set (make deps installs postgresql-15): %v", err)
		}
		t.Skipf("PostgreSQL 15 is not installed, skipping (apt-get install postgresql-15 to run this test): %v", err)
	}
	p, err := startPostgres()
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop PostgreSQL: %v", err)
		}
	})
	return p
}

// Host is the address the server listens on, always 127.0.0.1.
func (p *Postgres) Host() string { return p.host }

// Port is the server's TCP port.
func (p *Postgres) Port() int { return p.port }

// User is the superuser role to connect as, without a password.
func (p *Postgres) User() string { return PostgresUser }

// Addr is Host:Port.
func (p *Postgres) Addr() string { return net.JoinHostPort(p.host, strconv.Itoa(p.port)) }

// LogPath is the server's log file.
func (p *Postgres) LogPath() string { return p.logPath }

// URL is a libpq connection URL for database.
func (p *Postgres) URL(database string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", PostgresUser, p.Addr(), database)
}

// Query runs sql with psql in database and returns its unaligned, tuples-only
// output (one row per line, columns separated by '|'), trimmed.
func (p *Postgres) Query(ctx context.Context, database, sql string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(PostgresBinDir, "psql"),
		"-h", p.host, "-p", strconv.Itoa(p.port), "-U", PostgresUser, "-d", database,
		"-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("psql %s: %q: %w: %s", database, sql, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Stop shuts the server down at once (immediate mode: no checkpoint, as
// after a crash) and removes its directory. It is idempotent.
func (p *Postgres) Stop() error {
	p.stopOnce.Do(func() {
		p.stopErr = p.kill()
		if err := os.RemoveAll(p.dir); err != nil && p.stopErr == nil {
			p.stopErr = fmt.Errorf("remove %s: %w", p.dir, err)
		}
	})
	return p.stopErr
}

func (p *Postgres) kill() error {
	if p.cmd == nil {
		return nil
	}
	select {
	case <-p.exited:
		return nil
	default:
	}
	// SIGQUIT is PostgreSQL's immediate shutdown.
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return fmt.Errorf("postgres did not stop within 10s of SIGQUIT; killed")
}

// startPostgres creates the cluster and starts the server, on a new free
// port up to three times when the port is taken in between.
func startPostgres() (*Postgres, error) {
	removeStaleDirs()
	// Not t.TempDir: its parent is private to root, and a long test name
	// would push the unix socket path past its 107-byte limit.
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create PostgreSQL directory: %w", err)
	}
	p := &Postgres{host: "127.0.0.1", dir: dir, logPath: filepath.Join(dir, "postgres.log")}
	cred, err := postgresCredential()
	if err == nil {
		err = p.initdb(cred)
	}
	for try := 1; err == nil; try++ {
		err = p.start(cred)
		if err == nil {
			return p, nil
		}
		if try == 3 || !strings.Contains(err.Error(), "could not bind") && !strings.Contains(err.Error(), "in use") {
			break
		}
		err = nil
	}
	_ = p.Stop()
	return nil, err
}

// dirPrefix starts the name of every Postgres directory in os.TempDir.
const dirPrefix = "ralph-pg-"

// removeStaleDirs removes the directories of Postgres servers whose test
// binary died without cleaning up (a test timeout kills the server through
// Pdeathsig, but runs no t.Cleanup): those whose postmaster.pid names a
// process that no longer exists, or that have none and are over an hour
// old. Errors are ignored; this only saves disk space.
func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		pidFile, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
		if err != nil {
			st, err := os.Stat(dir)
			if err == nil && time.Since(st.ModTime()) > time.Hour {
				_ = os.RemoveAll(dir)
			}
			continue
		}
		first, _, _ := strings.Cut(string(pidFile), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

// postgresCredential is the user PostgreSQL runs as: nil (ourselves) unless
// we are root, then the postgres system user.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("look up the postgres user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (p *Postgres) command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(PostgresBinDir, name), args...)
	// The test's working directory may be closed to the postgres user.
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	// Pdeathsig: a test binary killed by its timeout leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func (p *Postgres) initdb(cred *syscall.Credential) error {
	if cred != nil {
		if err := os.Chown(p.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("chown %s to postgres: %w", p.dir, err)
		}
	}
	for _, sub := range []string{"sock"} {
		d := filepath.Join(p.dir, sub)
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return fmt.Errorf("chown %s to postgres: %w", d, err)
			}
		}
	}
	cmd := p.command(cred, "initdb",
		"-D", filepath.Join(p.dir, "data"),
		"-U", PostgresUser, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb in %s: %w\n%s", p.dir, err, tail(out, 30))
	}
	return nil
}

func (p *Postgres) start(cred *syscall.Credential) error {
	port, err := devserver.FreePort(p.host)
	if err != nil {
		return err
	}
	p.port = port
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open PostgreSQL log: %w", err)
	}
	defer logf.Close()
	cmd := p.command(cred, "postgres",
		"-D", filepath.Join(p.dir, "data"),
		"-c", "listen_addresses="+p.host,
		"-c", "port="+strconv.Itoa(port),
		"-c", "unix_socket_directories="+filepath.Join(p.dir, "sock"),
		"-c", "max_connections=200",
		// A test database need not survive a machine crash, only a
		// process crash, which these keep safe.
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	p.cmd = cmd
	p.exited = make(chan struct{})
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()

	deadline := time.Now().Add(60 * time.Second)
	for {
		ready := exec.Command(filepath.Join(PostgresBinDir, "pg_isready"),
			"-h", p.host, "-p", strconv.Itoa(port), "-U", PostgresUser, "-d", "postgres", "-t", "2")
		if ready.Run() == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("postgres exited before accepting connections (%v); %s:\n%s",
				p.waitErr, p.logPath, tailFile(p.logPath, 30))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			err := p.kill()
			return errors.Join(fmt.Errorf("postgres on %s did not accept connections within 60s; %s:\n%s",
				p.Addr(), p.logPath, tailFile(p.logPath, 30)), err)
		}
	}
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// tailFile is the last n lines of the file at path, reading at most its
// last 64 KiB.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxRead {
		_, _ = f.Seek(st.Size()-maxRead, 0)
	}
	buf := make([]byte, maxRead)
	k, _ := f.Read(buf)
	return tail(buf[:k], n)
}
