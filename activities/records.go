package activities

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/tasks"
)

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, list := range [][]string{a, b} {
		for _, f := range list {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

var unsafeName = strings.NewReplacer("/", "_", "\\", "_", "..", "_", "\x00", "_")

func safeName(s string) string { return unsafeName.Replace(s) }

// loadResult reads the result recorded at name in the workspace ws; ok
// is false when there is none, or when it is not a file of the workspace
// (the agent replaced it by a symlink out): the iteration then runs again.
func loadResult(ws, name string) (res contract.IterationResult, ok bool, err error) {
	data, err := tasks.ReadFile(ws, filepath.ToSlash(name))
	var outside *tasks.OutsideError
	if errors.Is(err, fs.ErrNotExist) || errors.As(err, &outside) {
		return contract.IterationResult{}, false, nil
	}
	if err != nil {
		return contract.IterationResult{}, false, fmt.Errorf("read recorded result: %w", err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		// A torn write from a crash: run the iteration again.
		return contract.IterationResult{}, false, nil
	}
	return res, true, nil
}

// saveResult records res at name in the workspace ws, whole or not at all
// (a temporary file renamed), never out of the workspace.
func saveResult(ws, name string, res contract.IterationResult) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	tmp := name + ".tmp"
	if err := tasks.WriteFile(ws, filepath.ToSlash(tmp), data); err != nil {
		return fmt.Errorf("record result: %w", err)
	}
	if err := tasks.Rename(ws, tmp, name); err != nil {
		return fmt.Errorf("record result: %w", err)
	}
	return nil
}

// cappedWriter writes up to max bytes and then notes the truncation once.
type cappedWriter struct {
	w       io.Writer
	max     int64
	written int64
	capped  bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.capped {
		return len(p), nil
	}
	if c.written+int64(len(p)) > c.max {
		c.capped = true
		_, err := fmt.Fprintf(c.w, "{\"type\":\"ralph_log_truncated\",\"after_bytes\":%d}\n", c.written)
		return len(p), err
	}
	n, err := c.w.Write(p)
	c.written += int64(n)
	return len(p), err
}
