package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

// SQLPlugin is the Temporal persistence plugin the server and the SQL tool
// use for PostgreSQL.
const SQLPlugin = "postgres12"

// Embedded schema names of the SQL tool for the two databases.
const (
	schemaName           = "postgresql/v12/temporal"
	visibilitySchemaName = "postgresql/v12/visibility"
)

// readinessProbe is the workflow id and task queue the readiness check asks
// about; neither is ever created.
const readinessProbe = "ralph-cluster-readiness-probe"

// Options configure StartServer. The zero value is usable.
type Options struct {
	// Namespace is registered at start when missing; default "default".
	Namespace string
	// SearchAttributes are added to Namespace at start when missing. SQL
	// visibility allows, per namespace, 10 Keyword and 3 each of Bool, Int,
	// Double, Datetime, KeywordList and Text.
	SearchAttributes map[string]enumspb.IndexedValueType
	// Retention is Namespace's workflow retention when it is registered;
	// default 24h (the server's minimum).
	Retention time.Duration
	// Database and VisibilityDatabase are the PostgreSQL databases, created
	// when missing; default "temporal" and "temporal_visibility". Two
	// servers on one Postgres need different names.
	Database           string
	VisibilityDatabase string
	// NumHistoryShards is fixed for the life of the databases; default 1
	// (cheapest; a real deployment has many).
	NumHistoryShards int32
	// LogLevel of the server log (debug, info, warn, error); default "info".
	LogLevel string
	// DynamicConfig is merged over DefaultDynamicConfig and written to the
	// server's dynamic config file. Values must marshal to JSON.
	DynamicConfig map[string]any
	// StartTimeout bounds schema setup plus start until ready; default 2m.
	StartTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Retention == 0 {
		o.Retention = 24 * time.Hour
	}
	if o.Database == "" {
		o.Database = "temporal"
	}
	if o.VisibilityDatabase == "" {
		o.VisibilityDatabase = "temporal_visibility"
	}
	if o.NumHistoryShards == 0 {
		o.NumHistoryShards = 1
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
	return o
}

// DefaultDynamicConfig is the dynamic configuration every server starts
// with: search attributes are read through the cache so that new ones are
// usable at once, and, as in internal/devserver, the history queues' poll
// rate limits are raised, which otherwise dominate activity latency on few
// shards.
func DefaultDynamicConfig() map[string]any {
	return map[string]any{
		"system.forceSearchAttributesCacheRefreshOnRead": true,
		"history.transferProcessorMaxPollRPS":            1000,
		"history.timerProcessorMaxPollRPS":               1000,
		"history.visibilityProcessorMaxPollRPS":          1000,
		"history.outboundProcessorMaxPollRPS":            1000,
		"frontend.namespaceRPS.visibility":               100,
	}
}

// Server is a Temporal server process on PostgreSQL, started by
// StartServer.
type Server struct {
	pg   *Postgres
	opts Options
	bins Binaries

	dir        string
	configPath string
	logPath    string
	ip         string
	ports      servicePorts

	mu   sync.Mutex
	proc *process // nil when stopped
}

type servicePorts struct {
	frontend, frontendHTTP, frontendMembership int
	history, historyMembership                 int
	matching, matchingMembership               int
	worker, workerMembership                   int
}

// process is one run of the server binary.
type process struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has been waited for
	waitErr error         // set before exited closes
}

// StartServer builds (or takes from the cache) the Temporal binaries, sets
// up the schema of both databases on pg with the SQL tool (idempotent),
// starts temporal-server on free ports of 127.0.0.1 with its log in the
// test's temp dir, and returns once the frontend, history and matching
// services answer, the namespace exists and its search attributes can be
// queried. t.Cleanup stops the server gracefully and, when the test failed,
// logs the tail of the server log.
func StartServer(t testing.TB, pg *Postgres, opts Options) *Server {
	t.Helper()
	opts = opts.withDefaults()
	bins, err := Build()
	if err != nil {
		t.Fatalf("build Temporal server: %v", err)
	}
	if bins.BuildTime > 0 {
		t.Logf("built Temporal %s server and SQL tool into %s in %v", bins.Version, bins.Dir, bins.BuildTime.Round(time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	if err := SetupSchema(ctx, pg, opts); err != nil {
		t.Fatalf("Temporal schema: %v", err)
	}

	dir := t.TempDir()
	s := &Server{
		pg:         pg,
		opts:       opts,
		bins:       bins,
		dir:        dir,
		configPath: filepath.Join(dir, "temporal.yaml"),
		logPath:    filepath.Join(dir, "temporal.log"),
		ip:         "127.0.0.1",
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop Temporal server: %v", err)
		}
		if t.Failed() {
			t.Logf("Temporal server log %s (tail):\n%s", s.logPath, tailFile(s.logPath, 60))
		}
	})
	if err := s.writeDynamicConfig(); err != nil {
		t.Fatal(err)
	}
	// The services bind ports found free a moment earlier; another process
	// can take one in between, which is worth a new set, a few times.
	for try := 1; ; try++ {
		if err = s.pickPorts(); err == nil {
			if err = s.writeConfig(); err == nil {
				err = s.start(ctx)
			}
		}
		if err == nil || try == 3 || !strings.Contains(err.Error(), "address already in use") {
			break
		}
		t.Logf("Temporal server start, attempt %d: port taken, retrying on new ports", try)
	}
	if err != nil {
		t.Fatalf("start Temporal server: %v", err)
	}
	return s
}

// SetupSchema creates opts.Database and opts.VisibilityDatabase on pg when
// missing and brings both to the newest schema embedded in the SQL tool
// (create-database, setup-schema -v 0.0, update-schema --schema-name). It is
// idempotent: on databases already set up it changes nothing. StartServer
// calls it.
func SetupSchema(ctx context.Context, pg *Postgres, opts Options) error {
	opts = opts.withDefaults()
	bins, err := Build()
	if err != nil {
		return err
	}
	for _, db := range []struct{ name, schema string }{
		{opts.Database, schemaName},
		{opts.VisibilityDatabase, visibilitySchemaName},
	} {
		common := []string{
			"--endpoint", pg.Host(), "--port", strconv.Itoa(pg.Port()),
			"--user", pg.User(), "--plugin", SQLPlugin, "--database", db.name,
		}
		for _, step := range [][]string{
			{"create-database", "--defaultdb", "postgres"},
			{"setup-schema", "--version", "0.0"},
			{"update-schema", "--schema-name", db.schema},
		} {
			args := append(slices.Clone(common), step...)
			out, err := exec.CommandContext(ctx, bins.SQLTool, args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%s %s on database %s: %w\n%s", sqlToolName, step[0], db.name, err, tail(out, 30))
			}
		}
	}
	return nil
}

// HostPort is the frontend's gRPC address, for client.Options.HostPort.
func (s *Server) HostPort() string { return net.JoinHostPort(s.ip, strconv.Itoa(s.ports.frontend)) }

// HTTPHostPort is the frontend's HTTP API address.
func (s *Server) HTTPHostPort() string {
	return net.JoinHostPort(s.ip, strconv.Itoa(s.ports.frontendHTTP))
}

// Namespace is the namespace registered at start.
func (s *Server) Namespace() string { return s.opts.Namespace }

// LogPath is the server's log file (its stdout and stderr, across restarts).
func (s *Server) LogPath() string { return s.logPath }

// ConfigPath is the server's config file.
func (s *Server) ConfigPath() string { return s.configPath }

// Postgres is the database server this server persists to.
func (s *Server) Postgres() *Postgres { return s.pg }

// Dial connects a Go SDK client to the server's namespace; t.Cleanup closes
// it.
func (s *Server) Dial(t testing.TB) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: s.HostPort(), Namespace: s.Namespace(), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("dial Temporal server %s: %v", s.HostPort(), err)
	}
	t.Cleanup(c.Close)
	return c
}

// Stop stops the server gracefully (SIGTERM, as an operator would), and
// kills it when it is not gone within a minute. Stopping a stopped server
// does nothing.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked(syscall.SIGTERM, time.Minute)
}

// Kill kills the server at once (SIGKILL), as a crash would. Killing a
// stopped server does nothing.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked(syscall.SIGKILL, 10*time.Second)
}

// Restart stops the server gracefully if it is running, starts it again
// with the same configuration, ports and databases, and returns once it is
// ready, as StartServer does (about 1.5s). After Kill it is a restart after
// a crash.
//
// Restart, not a second StartServer, is the way to restart a server: the
// cluster membership kept in the database lists the old process's
// addresses for 20s after it stops, and a new server on other ports waits
// for them to be given up (about 50s here); on the same ports it finds
// itself at once.
func (s *Server) Restart() error {
	if err := s.Stop(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StartTimeout)
	defer cancel()
	return s.start(ctx)
}

func (s *Server) stopLocked(sig syscall.Signal, grace time.Duration) error {
	p := s.proc
	if p == nil {
		return nil
	}
	s.proc = nil
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	return fmt.Errorf("temporal-server did not stop within %v of %v; killed; %s:\n%s", grace, sig, s.logPath, tailFile(s.logPath, 30))
}

// start runs the server process and waits until it is ready.
func (s *Server) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("temporal-server is already running")
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "----- %s: starting %s on %s -----\n", time.Now().Format(time.RFC3339Nano), serverBinaryName, s.HostPort())
	cmd := exec.Command(s.bins.Server, "--config-file", s.configPath, "--allow-no-auth", "start")
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// Pdeathsig: a test binary killed by its timeout leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bins.Server, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	s.proc = p
	if err := s.waitReady(ctx, p); err != nil {
		_ = s.stopLocked(syscall.SIGKILL, 10*time.Second)
		return fmt.Errorf("%w; %s:\n%s", err, s.logPath, tailFile(s.logPath, 40))
	}
	return nil
}

// quietLogger drops the SDK's own log lines (retries while the server
// starts are expected).
func quietLogger() sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
}
