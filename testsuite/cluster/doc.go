// Package cluster runs a real Temporal cluster for tests: a private
// PostgreSQL 15 server (Debian's postgresql-15 package) and the Temporal
// server as a separate process, built from the go.temporal.io/server module
// this repository pins, with its schema set up by the server's own SQL tool.
//
// A test starts PostgreSQL, then a server on it, and talks to the server
// through HostPort and Namespace:
//
//	pg := cluster.StartPostgres(t)
//	srv := cluster.StartServer(t, pg, cluster.Options{
//		Namespace:        "default",
//		SearchAttributes: map[string]enumspb.IndexedValueType{"RalphRepo": enumspb.INDEXED_VALUE_TYPE_KEYWORD},
//	})
//	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Namespace: srv.Namespace()})
//
// Both are stopped by t.Cleanup (the server first). Everything runs as real
// processes on 127.0.0.1 with free ports; PostgreSQL runs as the postgres
// system user when the test runs as root. The two Temporal binaries are
// built once into <repo>/.cache/temporal-<version>/ and reused by later
// runs (see Build).
//
// StartPostgres skips the test when PostgreSQL is not installed, except
// when the environment variable CI is set: there it fails, so that CI never
// passes by skipping.
//
// The package is Linux-only in practice: it runs PostgreSQL under another
// user id and locks the build cache with flock.
package cluster
