package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The end of a dev server's log that ends in a stack trace is the lines
// before the trace: what went wrong, not where.
func TestLogTailLeavesOutStackFrames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "temporal.log")
	require.NoError(t, os.WriteFile(path, []byte(`starting
listen tcp 127.0.0.1:40411: bind: address already in use
github.com/spf13/cobra.(*Command).execute
	/root/go/pkg/mod/github.com/spf13/cobra@v1.10.2/command.go:1015
main.execute
	/tmp/ci/cmd/starter/commands.go:121
main.main
runtime.main
`), 0o644))
	require.Equal(t, "starting\nlisten tcp 127.0.0.1:40411: bind: address already in use", logTail(path, 15))
	require.Equal(t, "listen tcp 127.0.0.1:40411: bind: address already in use", logTail(path, 1))
}
