package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		out     string
		errText string
	}{
		{args: []string{"help"}, out: "worker polls a Temporal task queue"},
		{args: []string{"--help"}, out: "--agent-env"},
		{args: []string{"--version"}, out: "worker "},
		{args: []string{"--max-iterations", "1"}, errText: "unknown flag: --max-iterations"},
		{args: []string{"bogus"}, errText: `invalid argument "bogus"`},
	} {
		var out bytes.Buffer
		cmd := newRootCmd()
		cmd.SetOut(&out)
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		if tc.errText != "" {
			require.ErrorContains(t, err, tc.errText)
			continue
		}
		require.NoError(t, err)
		require.Contains(t, out.String(), tc.out)
	}
	var out bytes.Buffer
	cmd := newRootCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	require.NoError(t, cmd.Execute())
	require.NotContains(t, out.String(), "--max-cost", "session flags belong to the starter")
}
