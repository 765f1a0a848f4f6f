package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/internal/devserver"
)

// TestSuggestReachesTheSameServer: the command lines the starter prints
// find the dev server from any terminal: --state-dir when it is not the
// default, --dev only where this terminal names another server and for
// run, which starts the server when it is gone.
func TestSuggestReachesTheSameServer(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	def := filepath.Join(state, "durable-ralph")
	self := self()
	for _, tc := range []struct {
		name    string
		dev     string // the dev server's state directory; "" for none
		address string // TEMPORAL_ADDRESS
		sub     string
		args    []string
		want    string
	}{
		{"another_server", "", "", "respond", []string{"ID", "--approve"}, self + " respond ID --approve"},
		{"default_state_dir", def, "", "respond", []string{"ID", "--checkpoint", "cp-2"}, self + " respond ID --checkpoint cp-2"},
		{"own_state_dir", "/srv/ralph", "", "resume", []string{"ID"}, self + " resume --state-dir /srv/ralph ID"},
		{"state_dir_to_quote", "/tmp/my state", "", "stop", []string{"ID"}, self + " stop --state-dir '/tmp/my state' ID"},
		{"run_starts_it_again", def, "", "run", []string{"--follow", "/src/app"}, self + " run --dev --follow /src/app"},
		{"temporal_address_elsewhere", def, "10.0.0.1:7233", "status", []string{"ID"}, self + " status --dev ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TEMPORAL_ADDRESS", tc.address)
			conn := &connection{}
			if tc.dev != "" {
				conn.dev = &devserver.Record{StateDir: tc.dev}
			}
			require.Equal(t, tc.want, conn.suggest(tc.sub, tc.args...))
		})
	}
}
