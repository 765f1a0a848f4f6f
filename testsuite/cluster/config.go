package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"

	"github.com/durable-ralph/ralph/internal/devserver"
)

func (s *Server) pickPorts() error {
	ports := make([]int, 9)
	for i := range ports {
		var p int
		var err error
		switch i {
		case 2, 4, 6, 8:
			// The membership table keeps ports in a PostgreSQL
			// smallint.
			p, err = devserver.FreePortBelow(s.ip, 1<<15)
		default:
			p, err = devserver.FreePort(s.ip)
		}
		if err != nil {
			return err
		}
		ports[i] = p
	}
	s.ports = servicePorts{
		frontend: ports[0], frontendHTTP: ports[1], frontendMembership: ports[2],
		history: ports[3], historyMembership: ports[4],
		matching: ports[5], matchingMembership: ports[6],
		worker: ports[7], workerMembership: ports[8],
	}
	return nil
}

func (s *Server) dynamicConfigPath() string { return filepath.Join(s.dir, "dynamicconfig.yaml") }

// writeDynamicConfig writes DefaultDynamicConfig merged with
// opts.DynamicConfig as the server's dynamic config file. JSON is YAML, and
// it quotes any value correctly.
func (s *Server) writeDynamicConfig() error {
	values := DefaultDynamicConfig()
	maps.Copy(values, s.opts.DynamicConfig)
	type constrained struct {
		Value any `json:"value"`
	}
	file := map[string][]constrained{}
	for k, v := range values {
		file[k] = []constrained{{Value: v}}
	}
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return fmt.Errorf("dynamic config: %w", err)
	}
	if err := os.WriteFile(s.dynamicConfigPath(), data, 0o644); err != nil {
		return fmt.Errorf("write dynamic config: %w", err)
	}
	return nil
}

// writeConfig writes the server's static config: both stores on pg with
// the postgres12 plugin, every service on its own ports of 127.0.0.1,
// membership through the database, one cluster, archival off.
func (s *Server) writeConfig() error {
	q := strconv.Quote
	store := func(db string, maxConns int) string {
		return fmt.Sprintf(`      sql:
        pluginName: %s
        databaseName: %s
        connectAddr: %s
        connectProtocol: tcp
        user: %s
        password: ""
        maxConns: %d
        maxIdleConns: %d
        maxConnLifetime: 1h
`, q(SQLPlugin), q(db), q(s.pg.Addr()), q(s.pg.User()), maxConns, maxConns)
	}
	service := func(name string, grpc, membership, http int) string {
		out := fmt.Sprintf("  %s:\n    rpc:\n      grpcPort: %d\n      membershipPort: %d\n      bindOnIP: %s\n", name, grpc, membership, q(s.ip))
		if http != 0 {
			out += fmt.Sprintf("      httpPort: %d\n", http)
		}
		return out
	}
	p := s.ports
	conf := fmt.Sprintf(serverConfig,
		q(s.opts.LogLevel), s.opts.NumHistoryShards,
		store(s.opts.Database, 20), store(s.opts.VisibilityDatabase, 10),
		q(s.ip),
		service("frontend", p.frontend, p.frontendMembership, p.frontendHTTP),
		service("history", p.history, p.historyMembership, 0),
		service("matching", p.matching, p.matchingMembership, 0),
		service("worker", p.worker, p.workerMembership, 0),
		q(s.HostPort()), q(s.HTTPHostPort()),
		q(s.HostPort()),
		q(s.dynamicConfigPath()),
	)
	if err := os.WriteFile(s.configPath, []byte(conf), 0o644); err != nil {
		return fmt.Errorf("write server config: %w", err)
	}
	return nil
}

// serverConfig is the format of the server's static config; see
// writeConfig.
const serverConfig = `# Written by github.com/durable-ralph/ralph/testsuite/cluster.
log:
  stdout: true
  level: %s
  format: console

persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: %d
  datastores:
    default:
%s    visibility:
%s
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: %s

services:
%s%s%s%s
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: %s
      httpAddress: %s

dcRedirectionPolicy:
  policy: noop

archival:
  history:
    state: disabled
  visibility:
    state: disabled

namespaceDefaults:
  archival:
    history:
      state: disabled
    visibility:
      state: disabled

publicClient:
  hostPort: %s

dynamicConfigClient:
  filepath: %s
  pollInterval: 10s
`
