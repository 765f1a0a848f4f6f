package activities

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/durable-ralph/ralph/contract"
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

func loadResult(path string) (contract.IterationResult, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return contract.IterationResult{}, false, nil
	}
	if err != nil {
		return contract.IterationResult{}, false, fmt.Errorf("read recorded result: %w", err)
	}
	var res contract.IterationResult
	if err := json.Unmarshal(data, &res); err != nil {
		// A torn write from a crash: run the iteration again.
		return contract.IterationResult{}, false, nil
	}
	return res, true, nil
}

func saveResult(path string, res contract.IterationResult) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create state dir: %w", err)
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("record result: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
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
