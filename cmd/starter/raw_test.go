package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/contract"
)

// TestRawViewNeutralisesSequences follows a raw log that an agent writes
// escape sequences to, one of them cut between two polls: the terminal
// gets the text without them.
func TestRawViewNeutralisesSequences(t *testing.T) {
	tests := []struct {
		name   string
		writes []string // what the log gains before each poll; the last before the end
		want   string
	}{
		{
			name:   "clear screen, title and clipboard",
			writes: []string{"start\x1b[2J\x1b]0;pwned\x07\n", "\x1b]52;c;aGk=\x1b\\done\n"},
			want:   "start\ndone\n",
		},
		{
			name:   "a sequence cut between two polls",
			writes: []string{"one\x1b", "]52;c;Y3VybA==\x07two\x1b[", "31mthree\n"},
			want:   "onetwothree\n",
		},
		{
			name:   "8-bit CSI and a UTF-8 character cut in two",
			writes: []string{"caf\xc3", "\xa9 \x9b2Jok\n"},
			want:   "café ok\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			log := filepath.Join(contract.StateDir, "logs", "iteration-1.jsonl")
			path := filepath.Join(ws, log)
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			file, err := os.Create(path)
			require.NoError(t, err)
			defer file.Close()

			var out bytes.Buffer
			f := &follower{out: &out, view: ViewRaw}
			p := contract.Progress{Log: filepath.ToSlash(log)}
			for i, w := range tt.writes {
				_, err := file.WriteString(w)
				require.NoError(t, err)
				if i < len(tt.writes)-1 {
					require.True(t, f.rawView(p, ws))
				}
			}
			f.flushRaw()
			require.Equal(t, tt.want, out.String())
		})
	}
}
