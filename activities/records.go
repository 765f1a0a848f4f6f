package activities

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/recycle"
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

// records is where the worker keeps what it reads back of an iteration:
// the result it recorded, the progress each attempt started with and the
// stream each attempt's agent printed. They live in a directory of the
// worker (Agent.Records, in its state directory), which no contained
// agent sees, one directory per session key: nothing an agent can write
// (its workspace, .ralph/) is ever read back as the worker's record. The
// stream and prompt under the workspace's .ralph/logs are copies for
// people. A records with no directory keeps nothing: a retry then finds
// an iteration's work by its commit alone, and runs a finished agent
// again.
type records struct {
	dir string
}

// keyDir is the directory of the session key's records.
func (r records) keyDir(key string) string { return filepath.Join(r.dir, "sessions", safeName(key)) }

// files are the files of key's records, recycled: an iteration writes
// the three files (its start, its stream, its result) that the last
// one's prune let go, without creating a file (internal/recycle).
func (r records) files(key string) recycle.Dir { return recycle.Dir{Path: r.keyDir(key)} }

func resultName(n int) string { return fmt.Sprintf("iteration-%04d.json", n) }

func startName(n, attempt int) string {
	return fmt.Sprintf("iteration-%04d.attempt-%d.start.json", n, attempt)
}

func streamName(n, attempt int) string {
	return fmt.Sprintf("iteration-%04d.attempt-%d.jsonl", n, attempt)
}

func (r records) resultPath(key string, n int) string {
	return filepath.Join(r.keyDir(key), resultName(n))
}

func (r records) startPath(key string, n, attempt int) string {
	return filepath.Join(r.keyDir(key), startName(n, attempt))
}

func (r records) streamPath(key string, n, attempt int) string {
	return filepath.Join(r.keyDir(key), streamName(n, attempt))
}

// loadResult is the result recorded for iteration n of key; ok is false
// when there is none (or only a torn write of a crash: the iteration then
// runs again).
func (r records) loadResult(key string, n int) (res contract.IterationResult, ok bool, err error) {
	if r.dir == "" {
		return res, false, nil
	}
	data, err := os.ReadFile(r.resultPath(key, n))
	if errors.Is(err, fs.ErrNotExist) {
		return res, false, nil
	}
	if err != nil {
		return res, false, fmt.Errorf("read the recorded result: %w", err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return contract.IterationResult{}, false, nil
	}
	return res, true, nil
}

// saveResult records res as iteration n's result, whole or not at all.
func (r records) saveResult(key string, n int, res contract.IterationResult) error {
	if r.dir == "" {
		return nil
	}
	if err := r.write(key, resultName(n), res); err != nil {
		return fmt.Errorf("record the result: %w", err)
	}
	return nil
}

// saveStart records the progress attempt p.Attempt of iteration n
// starts with (its start commit, its story, what earlier attempts
// cost), before its agent runs: a retry after a worker that died before
// its first heartbeat knows the attempt from it.
func (r records) saveStart(key string, n int, p contract.Progress) error {
	if r.dir == "" {
		return nil
	}
	// Written in place, without the rename of a whole-or-nothing write:
	// it is the attempt's own file, and a torn one does not parse, or
	// names another attempt, and is not read (lastStart).
	data, err := json.Marshal(p)
	var f *os.File
	if err == nil {
		f, err = r.files(key).Create(startName(n, p.Attempt), 0o600)
	}
	if err == nil {
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("record the attempt's start: %w", err)
	}
	return nil
}

// lastStart is the start of the latest attempt of iteration n before
// attempt, or nil.
func (r records) lastStart(key string, n, attempt int) *contract.Progress {
	k := r.latest(key, fmt.Sprintf("iteration-%04d.attempt-", n), ".start.json", attempt)
	if k == 0 {
		return nil
	}
	data, err := os.ReadFile(r.startPath(key, n, k))
	if err != nil {
		return nil
	}
	var p contract.Progress
	if json.Unmarshal(data, &p) != nil || p.Attempt != k || p.Iteration != n {
		return nil
	}
	return &p
}

// lastStream is the path of the stream of the latest attempt of
// iteration n before attempt that left one, and that attempt; "" when
// there is none.
func (r records) lastStream(key string, n, attempt int) (string, int) {
	k := r.latest(key, fmt.Sprintf("iteration-%04d.attempt-", n), ".jsonl", attempt)
	if k == 0 {
		return "", 0
	}
	return r.streamPath(key, n, k), k
}

// latest is the highest attempt below before among the records of key
// named prefix+attempt+suffix; 0 for none.
func (r records) latest(key, prefix, suffix string, before int) int {
	if r.dir == "" {
		return 0
	}
	entries, err := os.ReadDir(r.keyDir(key))
	if err != nil {
		return 0
	}
	best := 0
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		num, ok := strings.CutSuffix(rest, suffix)
		if !ok {
			continue
		}
		if k, err := strconv.Atoi(num); err == nil && k > best && k < before {
			best = k
		}
	}
	return best
}

// createStream opens the record of attempt's stream, empty.
func (r records) createStream(key string, n, attempt int) (*os.File, error) {
	f, err := r.files(key).Create(streamName(n, attempt), 0o600)
	if err != nil {
		return nil, fmt.Errorf("record the agent's stream: %w", err)
	}
	return f, nil
}

// prune removes the records of key's iterations before n, but those of
// keep: the workflow runs its iterations in order, so none of theirs is
// read again, but the last run of an iteration that failed after its
// retries (keep), which the next iteration's result counts. Their files
// are kept as spares for the iteration's own (files).
func (r records) prune(key string, n int, keep ...int) {
	if r.dir == "" {
		return
	}
	entries, err := os.ReadDir(r.keyDir(key))
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "iteration-")
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		if k, err := strconv.Atoi(num); err == nil && k < n && !slices.Contains(keep, k) {
			_ = r.files(key).Remove(e.Name())
		}
	}
}

// write writes v as JSON as key's record name, whole or not at all.
func (r records) write(key, name string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return r.files(key).WriteFile(name, data, 0o600)
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
