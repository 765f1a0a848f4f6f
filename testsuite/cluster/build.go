package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	serverModule     = "go.temporal.io/server"
	serverPackage    = serverModule + "/cmd/server"
	sqlToolPackage   = serverModule + "/cmd/tools/sql"
	serverBinaryName = "temporal-server"
	sqlToolName      = "temporal-sql-tool"
)

// Binaries are the Temporal server and SQL schema tool, built by Build.
type Binaries struct {
	// Dir is the cache directory holding both, <repo>/.cache/temporal-<version>.
	Dir string
	// Server is the temporal-server binary (go.temporal.io/server/cmd/server).
	Server string
	// SQLTool is the temporal-sql-tool binary (go.temporal.io/server/cmd/tools/sql).
	SQLTool string
	// Version is the go.temporal.io/server version our go.mod selects.
	Version string
	// BuildTime is how long this process spent building them; zero when
	// they were already in the cache.
	BuildTime time.Duration
}

var buildOnce = sync.OnceValues(build)

// Build returns the Temporal server and SQL tool binaries of the
// go.temporal.io/server version this repository's go.mod selects, building
// them with `go build` from the repository root the first time and reusing
// them from <repo>/.cache/temporal-<version>/ afterwards. It builds at most
// once per process, and a file lock keeps concurrent test processes from
// building twice. The go command must be on PATH.
func Build() (Binaries, error) {
	return buildOnce()
}

func build() (Binaries, error) {
	root, err := repoRoot()
	if err != nil {
		return Binaries{}, err
	}
	version, err := goOutput(root, "list", "-m", "-f", "{{.Version}}", serverModule)
	if err != nil {
		return Binaries{}, fmt.Errorf("find the %s version in %s/go.mod: %w", serverModule, root, err)
	}
	b := Binaries{
		Dir:     filepath.Join(root, ".cache", "temporal-"+version),
		Version: version,
	}
	b.Server = filepath.Join(b.Dir, serverBinaryName)
	b.SQLTool = filepath.Join(b.Dir, sqlToolName)
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return Binaries{}, fmt.Errorf("create build cache: %w", err)
	}

	unlock, err := lockFile(filepath.Join(b.Dir, ".lock"))
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()
	if isExecutable(b.Server) && isExecutable(b.SQLTool) {
		return b, nil
	}

	// Build into a scratch directory and rename, so that an interrupted
	// build never leaves a half-written binary in the cache.
	tmp, err := os.MkdirTemp(b.Dir, "build-")
	if err != nil {
		return Binaries{}, fmt.Errorf("create build directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	if _, err := goOutput(root, "build", "-o", tmp+string(filepath.Separator), serverPackage, sqlToolPackage); err != nil {
		return Binaries{}, fmt.Errorf("build Temporal %s binaries (if go.sum lacks entries: go get -tool %s@%s %s@%s): %w",
			version, serverPackage, version, sqlToolPackage, version, err)
	}
	b.BuildTime = time.Since(start)
	// go build names each binary after the last element of its package path.
	for from, to := range map[string]string{"server": b.Server, "sql": b.SQLTool} {
		if err := os.Rename(filepath.Join(tmp, from), to); err != nil {
			return Binaries{}, fmt.Errorf("move built binary into the cache: %w", err)
		}
	}
	return b, nil
}

// repoRoot is the directory of the go.mod above the working directory (a
// test runs in its package's directory).
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
		dir = parent
	}
}

// goOutput runs the go command in dir and returns its trimmed stdout.
func goOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail(stderr.Bytes(), 30))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// lockFile takes an exclusive flock on path, waiting for it.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
