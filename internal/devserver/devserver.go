// Package devserver runs a complete Temporal server and its Web UI inside
// the calling process, persisted to one SQLite file, so that a single machine
// needs nothing but our binaries to run durable sessions.
//
// The server binds the frontend to Options.IP:Options.Port and the UI to
// Options.IP:Options.UIPort. History, matching and worker services bind to
// free ports on the same IP and find each other through static hosts, so a
// restart on the same database file is ready at once instead of waiting for
// stale membership records to expire.
//
// A server with a state directory holds a lock there for its lifetime
// (LockFile), so that two servers never share one database, and records
// its address there once it answers (RecordFile), so that other processes
// find it (Find).
package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
)

const clusterName = "active"

// Options configure an embedded server.
type Options struct {
	// StateDir holds the SQLite database (temporal.db), the server log
	// (temporal.log), the lock and the record. Empty means an in-memory
	// database that dies with the process.
	StateDir string
	// IP is the address every service binds to; default 127.0.0.1.
	IP string
	// Port is the frontend gRPC port; 0 picks a free one.
	Port int
	// UIPort is the Web UI port; 0 disables the UI.
	UIPort int
	// Namespace is registered at start; default "default".
	Namespace string
	// SearchAttributes are registered in Namespace at start.
	SearchAttributes map[string]enumspb.IndexedValueType
	// LogLevel of the server's own log; default "warn".
	LogLevel string
	// DynamicConfig overrides server dynamic configuration keys.
	DynamicConfig map[string]any
	// CodecEndpoint is a codec server the Web UI asks to decode payloads
	// (see package codec); empty for none.
	CodecEndpoint string
}

// Server is a running embedded Temporal server.
type Server struct {
	opts   Options
	server temporal.Server
	ui     *uiserver.Server
	lock   *lock
	record Record
}

// DefaultDynamicConfig is the dynamic configuration the embedded server runs
// with. The server's defaults are tuned for clusters with many shards; on one
// shard the transfer queue's poll rate limit (20/s) dominates the latency of
// every activity, so it is raised.
func DefaultDynamicConfig() map[string]any {
	return map[string]any{
		dynamicconfig.TransferProcessorMaxPollRPS.Key().String():                  1000,
		dynamicconfig.TimerProcessorMaxPollRPS.Key().String():                     1000,
		dynamicconfig.VisibilityProcessorMaxPollRPS.Key().String():                1000,
		dynamicconfig.OutboundProcessorMaxPollRPS.Key().String():                  1000,
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key().String(): 100,
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key().String():                 8192,
	}
}

// Start starts the server and, when UIPort is set, the UI. It returns once
// the frontend answers and the namespace and search attributes exist, and
// the server has recorded itself in its state directory. A state directory
// that another server holds is refused with a *LockedError naming it.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.IP == "" {
		opts.IP = "127.0.0.1"
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "warn"
	}
	if opts.Port == 0 {
		p, err := FreePort(opts.IP)
		if err != nil {
			return nil, err
		}
		opts.Port = p
	}
	// The ports asked for are taken in this process from now on: the
	// services' own ports, picked below, must not be one of them before
	// the frontend or the UI binds it.
	handedOut.Store(opts.Port, struct{}{})
	if opts.UIPort != 0 {
		handedOut.Store(opts.UIPort, struct{}{})
	}
	s := &Server{opts: opts}
	if opts.StateDir != "" {
		dir, err := filepath.Abs(opts.StateDir)
		if err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		s.opts.StateDir = dir
		if s.lock, err = acquire(dir); err != nil {
			return nil, err
		}
	}
	srv, err := s.start(ctx)
	if err != nil && s.lock != nil {
		s.lock.release()
	}
	return srv, err
}

// start starts what Start does, once the state directory is locked.
func (s *Server) start(ctx context.Context) (*Server, error) {
	opts := s.opts
	if err := checkPortFree(opts.IP, opts.Port); err != nil {
		return nil, fmt.Errorf("frontend port: %w", err)
	}
	if opts.UIPort != 0 {
		if err := checkPortFree(opts.IP, opts.UIPort); err != nil {
			return nil, fmt.Errorf("UI port: %w", err)
		}
	}
	// The internal services bind free ports found a moment earlier; another
	// process can take one in between. Such a bind failure is worth a new
	// set of ports, a few times.
	var err error
	for try := 1; ; try++ {
		err = s.startServer()
		if err == nil || try == 3 || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	if opts.UIPort != 0 {
		s.ui = uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
			Host:                opts.IP,
			Port:                opts.UIPort,
			TemporalGRPCAddress: s.Address(),
			EnableUI:            true,
			CORS:                uiconfig.CORS{CookieInsecure: true},
			HideLogs:            true,
			DisableNewsFetch:    true,
			Codec:               uiconfig.Codec{Endpoint: opts.CodecEndpoint},
		}))
		go func() {
			// Start blocks until Stop; an error here means the port was
			// taken between our check and the bind, which the UI cannot
			// recover from, so the server keeps running without it.
			if err := s.ui.Start(); err != nil && !errors.Is(err, net.ErrClosed) {
				fmt.Fprintf(os.Stderr, "devserver: Temporal UI stopped: %v\n", err)
			}
		}()
	}
	if err := s.ensureSearchAttributes(ctx); err != nil {
		s.stop()
		return nil, err
	}
	s.record = Record{
		PID:       os.Getpid(),
		Address:   s.Address(),
		UIURL:     s.UIURL(),
		Namespace: opts.Namespace,
		StateDir:  opts.StateDir,
		Started:   time.Now().UTC().Truncate(time.Second),
	}
	if s.lock != nil {
		if err := s.lock.publish(s.record); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

// Record is what the server recorded of itself in its state directory.
func (s *Server) Record() Record { return s.record }

func (s *Server) startServer() error {
	cfg, err := s.serverConfig()
	if err != nil {
		return err
	}
	srvOpts, err := s.serverOptions(cfg)
	if err != nil {
		return err
	}
	s.server, err = temporal.NewServer(srvOpts...)
	if err != nil {
		return fmt.Errorf("create temporal server: %w", err)
	}
	if err := s.server.Start(); err != nil {
		return fmt.Errorf("start temporal server: %w", err)
	}
	return nil
}

// Address is the frontend's host:port.
func (s *Server) Address() string {
	return net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.Port))
}

// UIURL is the base URL of the Web UI, or "" when it is disabled.
func (s *Server) UIURL() string {
	if s.opts.UIPort == 0 {
		return ""
	}
	return "http://" + net.JoinHostPort(s.opts.IP, strconv.Itoa(s.opts.UIPort))
}

// Namespace is the namespace the server registered.
func (s *Server) Namespace() string { return s.opts.Namespace }

// Stop stops the UI and the server and unlocks the state directory.
func (s *Server) Stop() {
	s.stop()
	if s.lock != nil {
		s.lock.release()
		s.lock = nil
	}
}

// stop stops the UI and the server.
func (s *Server) stop() {
	if s.ui != nil {
		s.ui.Stop()
	}
	if s.server != nil {
		if err := s.server.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "devserver: stop: %v\n", err)
		}
	}
}

func (s *Server) serverConfig() (*config.Config, error) {
	sqlCfg, err := s.sqlConfig()
	if err != nil {
		return nil, err
	}
	cfg := &config.Config{}
	cfg.Global.Membership.MaxJoinDuration = 30 * time.Second
	cfg.Global.Membership.BroadcastAddress = s.opts.IP
	cfg.Persistence.DefaultStore = "sqlite"
	cfg.Persistence.VisibilityStore = "sqlite"
	cfg.Persistence.NumHistoryShards = 1
	cfg.Persistence.DataStores = map[string]config.DataStore{"sqlite": {SQL: sqlCfg}}

	httpPort, err := FreePort(s.opts.IP)
	if err != nil {
		return nil, err
	}
	cfg.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			clusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             s.Address(),
				HTTPAddress:            net.JoinHostPort(s.opts.IP, strconv.Itoa(httpPort)),
				ClusterID:              "durable-ralph-dev",
			},
		},
	}
	cfg.DCRedirectionPolicy.Policy = "noop"
	cfg.Services = map[string]config.Service{}
	for _, name := range []string{"frontend", "history", "matching", "worker"} {
		var svc config.Service
		svc.RPC.BindOnIP = s.opts.IP
		if name == "frontend" {
			svc.RPC.GRPCPort = s.opts.Port
			svc.RPC.HTTPPort = httpPort
		} else {
			p, err := FreePort(s.opts.IP)
			if err != nil {
				return nil, err
			}
			svc.RPC.GRPCPort = p
		}
		cfg.Services[name] = svc
	}
	cfg.Archival.History.State = "disabled"
	cfg.Archival.Visibility.State = "disabled"
	cfg.NamespaceDefaults.Archival.History.State = "disabled"
	cfg.NamespaceDefaults.Archival.Visibility.State = "disabled"
	cfg.PublicClient.HostPort = s.Address()
	return cfg, nil
}

func (s *Server) sqlConfig() (*config.SQL, error) {
	cfg := &config.SQL{PluginName: sqliteplugin.PluginName}
	if s.opts.StateDir == "" {
		cfg.ConnectAttributes = map[string]string{"mode": "memory", "cache": "shared"}
		cfg.DatabaseName = "ralph-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	} else {
		// WAL lets readers run beside the single writer and, with
		// synchronous=normal, commits no longer wait for an fsync each;
		// without it the server is fsync-bound.
		cfg.ConnectAttributes = map[string]string{
			"mode":         "rwc",
			"journal_mode": "wal",
			"synchronous":  "normal",
			"busy_timeout": "10000",
		}
		// One connection: SQLite takes one writer at a time, and the
		// server writes from many places at once (the history shard,
		// the visibility queue, matching's task writers). On several
		// connections they collide: the loser waits in SQLite's busy
		// handler, which sleeps (1, 2, 5, 10 ms...) instead of being
		// woken when the lock is free, and a transaction whose snapshot
		// went stale fails and is retried. On one, database/sql hands
		// the connection to the next caller the moment it is free. 200
		// sessions at once on 2 cores (BenchmarkScale): 14.0–16.1 s and
		// 9.5 ms of server CPU an iteration, against 24.5–27.4 s and
		// 13.4–13.9 ms on four connections.
		cfg.MaxConns = 1
		cfg.MaxIdleConns = 1
		cfg.DatabaseName = filepath.Join(s.opts.StateDir, "temporal.db")
		if _, err := os.Stat(cfg.DatabaseName); errors.Is(err, os.ErrNotExist) {
			if err := sqliteschema.SetupSchema(cfg); err != nil {
				return nil, fmt.Errorf("set up schema in %s: %w", cfg.DatabaseName, err)
			}
		}
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, s.opts.Namespace, false, s.opts.SearchAttributes)
	if err != nil {
		return nil, fmt.Errorf("namespace %s: %w", s.opts.Namespace, err)
	}
	if err := sqliteschema.CreateNamespaces(cfg, ns); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", s.opts.Namespace, err)
	}
	return cfg, nil
}

func (s *Server) serverOptions(cfg *config.Config) ([]temporal.ServerOption, error) {
	logCfg := log.Config{Level: s.opts.LogLevel, Format: "console"}
	if s.opts.StateDir != "" {
		logCfg.OutputFile = filepath.Join(s.opts.StateDir, "temporal.log")
	}
	logger := log.NewZapLogger(log.BuildZapLogger(logCfg))
	authorizer, err := authorization.GetAuthorizerFromConfig(&cfg.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&cfg.Global.Authorization, logger)
	if err != nil {
		return nil, fmt.Errorf("claim mapper: %w", err)
	}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for name, svc := range map[primitives.ServiceName]string{
		primitives.FrontendService: "frontend",
		primitives.HistoryService:  "history",
		primitives.MatchingService: "matching",
		primitives.WorkerService:   "worker",
	} {
		addr := net.JoinHostPort(s.opts.IP, strconv.Itoa(cfg.Services[svc].RPC.GRPCPort))
		hosts[name] = static.SingleLocalHost(addr)
	}
	dc := dynamicconfig.StaticClient{}
	for k, v := range DefaultDynamicConfig() {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	for k, v := range s.opts.DynamicConfig {
		dc[dynamicconfig.MakeKey(k)] = v
	}
	return []temporal.ServerOption{
		temporal.WithConfig(cfg),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dc),
	}, nil
}

// ensureSearchAttributes waits for the frontend and adds any search
// attribute a database created by an older version lacks.
func (s *Server) ensureSearchAttributes(ctx context.Context) error {
	c, err := client.NewLazyClient(client.Options{HostPort: s.Address(), Namespace: s.opts.Namespace, Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("connect to embedded server: %w", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: s.opts.Namespace})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("embedded server did not become ready: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if len(s.opts.SearchAttributes) == 0 {
		return nil
	}
	have, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: s.opts.Namespace})
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range s.opts.SearchAttributes {
		if _, ok := have.GetCustomAttributes()[name]; !ok {
			missing[name] = typ
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        s.opts.Namespace,
		SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}

// quietLogger drops the SDK client's logs during the readiness probe.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
