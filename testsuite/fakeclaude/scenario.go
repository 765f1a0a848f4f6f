package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// scenario is the script of a fake agent: one step per invocation.
type scenario struct {
	Steps []step `json:"steps"`
	// Repeat says what runs after the last step: "last" (the default)
	// runs the last step again, "auto" runs {"auto": true}.
	Repeat string `json:"repeat"`
	// Roles are the steps of the invocations whose prompt is of a role
	// ("## Role: reviewer", "## Role: planner"), one per invocation of
	// that role, the last repeated; the other invocations play Steps.
	Roles map[string][]step `json:"roles"`
}

// step is what one invocation does. The package documentation describes
// the fields.
type step struct {
	Auto        bool              `json:"auto"`
	ClaimLast   bool              `json:"claim_last"`
	Files       []string          `json:"files"`
	Write       map[string]string `json:"write"`
	CounterFile string            `json:"counter_file"`
	Checkpoint  json.RawMessage   `json:"checkpoint"`
	Commit      toggle            `json:"commit"`
	Claim       toggle            `json:"claim"`
	Text        string            `json:"text"`
	CostUSD     *float64          `json:"cost_usd"`
	Usage       *usage            `json:"usage"`
	NumTurns    *int              `json:"num_turns"`
	ExitCode    *int              `json:"exit_code"`
	IsError     bool              `json:"is_error"`
	ErrorText   string            `json:"error_text"`
	Stderr      string            `json:"stderr"`
	SleepMS     int               `json:"sleep_ms"`
	SleepAfter  int               `json:"sleep_after_ms"`
	Hang        bool              `json:"hang"`
	Garbage     amount            `json:"garbage"`
	Crash       amount            `json:"crash"`
	RateLimit   amount            `json:"rate_limit"`
	AuthError   bool              `json:"auth_error"`
	FloodMB     float64           `json:"flood_mb"`
	FloodLineKB int               `json:"flood_line_kb"`
}

// usage is the token accounting of a result, as Claude Code names it.
type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// toggle is a step field that is true, false or a text.
type toggle struct {
	Set  bool // the field was given
	On   bool
	Text string // the text given, if any
}

// UnmarshalJSON accepts true, false, null or a string.
func (t *toggle) UnmarshalJSON(data []byte) error {
	var b bool
	if err := json.Unmarshal(data, &b); err == nil {
		*t = toggle{Set: true, On: b}
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("want true, false or a string, not %s", data)
	}
	*t = toggle{Set: true, On: true, Text: s}
	return nil
}

// amount is a step field that is true (a default amount), false or a
// number.
type amount struct {
	On bool
	N  int // 0: the default
}

// UnmarshalJSON accepts true, false, null or a number.
func (a *amount) UnmarshalJSON(data []byte) error {
	var b bool
	if err := json.Unmarshal(data, &b); err == nil {
		*a = amount{On: b}
		return nil
	}
	var n float64
	if err := json.Unmarshal(data, &n); err != nil {
		return fmt.Errorf("want true, false or a number, not %s", data)
	}
	*a = amount{On: true, N: int(n)}
	return nil
}

// or returns the amount given, or def for true.
func (a amount) or(def int) int {
	if a.N != 0 {
		return a.N
	}
	return def
}

var autoStep = step{Auto: true}

// loadScenario reads the scenario file at path; "" means none, every
// invocation then runs {"auto": true}.
func loadScenario(path string) (scenario, error) {
	if path == "" {
		return scenario{Repeat: "auto"}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return scenario{}, fmt.Errorf("read scenario: %w", err)
	}
	var sc scenario
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = decodeStrict(trimmed, &sc.Steps)
	} else {
		err = decodeStrict(trimmed, &sc)
	}
	if err != nil {
		return scenario{}, fmt.Errorf("scenario %s: %w", path, err)
	}
	switch sc.Repeat {
	case "":
		sc.Repeat = "last"
	case "last", "auto":
	default:
		return scenario{}, fmt.Errorf(`scenario %s: "repeat" is %q, want "last" or "auto"`, path, sc.Repeat)
	}
	return sc, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// roleStep returns the step the n-th invocation (from 1) of role plays,
// and whether the scenario has steps for role.
func (sc scenario) roleStep(role string, n int) (step, bool) {
	steps := sc.Roles[role]
	if role == "" || len(steps) == 0 {
		return step{}, false
	}
	return steps[min(n, len(steps))-1], true
}

// roleRE finds the role of a prompt.
var roleRE = regexp.MustCompile(`(?m)^## Role: (\w+)\s*$`)

// roleOf is the role a prompt gives its agent, "" for none.
func roleOf(prompt string) string {
	if m := roleRE.FindStringSubmatch(prompt); m != nil {
		return m[1]
	}
	return ""
}

// step returns the step invocation n (from 1) plays.
func (sc scenario) step(n int) step {
	switch {
	case n <= len(sc.Steps):
		return sc.Steps[n-1]
	case sc.Repeat == "last" && len(sc.Steps) > 0:
		return sc.Steps[len(sc.Steps)-1]
	default:
		return autoStep
	}
}

// state is the directory where the fake agent counts its invocations and
// records them.
type state struct {
	dir string
}

// openState returns the state directory: FAKE_CLAUDE_STATE_DIR, or
// .ralph/fake-claude in the workspace.
func openState(workspace string) (state, error) {
	dir := os.Getenv("FAKE_CLAUDE_STATE_DIR")
	if dir == "" {
		dir = filepath.Join(workspace, ".ralph", "fake-claude")
	}
	if err := os.MkdirAll(filepath.Join(dir, "sessions"), 0o755); err != nil {
		return state{}, fmt.Errorf("state dir: %w", err)
	}
	return state{dir: dir}, nil
}

// call is one line of calls.jsonl.
type call struct {
	N         int       `json:"n"`
	Time      time.Time `json:"time"`
	CWD       string    `json:"cwd"`
	Argv      []string  `json:"argv"`
	Prompt    string    `json:"prompt"`
	SessionID string    `json:"session_id"`
	// Host is FAKE_CLAUDE_HOST: which worker's machine ran the agent.
	Host string `json:"host,omitempty"`
	// Role is the role the prompt gave the agent, and RoleN counts the
	// invocations of that role, from 1.
	Role  string `json:"role,omitempty"`
	RoleN int    `json:"role_n,omitempty"`
}

// begin counts an invocation and records it in calls.jsonl, under the
// lock; it returns c with its numbers (N, RoleN), from 1.
func (s state) begin(c call) (call, error) {
	unlock, err := s.lock()
	if err != nil {
		return call{}, err
	}
	defer unlock()

	counter := filepath.Join(s.dir, "invocations")
	n := 0
	switch data, err := os.ReadFile(counter); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return call{}, fmt.Errorf("read invocation counter: %w", err)
	default:
		if n, err = strconv.Atoi(strings.TrimSpace(string(data))); err != nil {
			return call{}, fmt.Errorf("invocation counter %s: %w", counter, err)
		}
	}
	n++
	if err := writeFileAtomic(counter, []byte(strconv.Itoa(n)+"\n")); err != nil {
		return call{}, fmt.Errorf("write invocation counter: %w", err)
	}

	c.N = n
	c.Host = os.Getenv("FAKE_CLAUDE_HOST")
	if c.Role != "" {
		roleCounter := filepath.Join(s.dir, "invocations-"+c.Role)
		if data, err := os.ReadFile(roleCounter); err == nil {
			c.RoleN, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		c.RoleN++
		if err := writeFileAtomic(roleCounter, []byte(strconv.Itoa(c.RoleN)+"\n")); err != nil {
			return call{}, fmt.Errorf("write role counter: %w", err)
		}
	}
	line, err := json.Marshal(c)
	if err != nil {
		return call{}, fmt.Errorf("encode call: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "calls.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return call{}, fmt.Errorf("record call: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return call{}, fmt.Errorf("record call: %w", err)
	}
	if err := f.Close(); err != nil {
		return call{}, fmt.Errorf("record call: %w", err)
	}
	return c, nil
}

// lockStale is how old a lock file must be to be taken for one left by a
// killed process.
const lockStale = 10 * time.Second

// lock takes the state directory's lock, a file created with O_EXCL, and
// returns the function that releases it.
func (s state) lock() (func(), error) {
	path := filepath.Join(s.dir, "lock")
	deadline := time.Now().Add(30 * time.Second)
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%d\n", os.Getpid())
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock state dir: %w", err)
		}
		if fi, err := os.Stat(path); err == nil && time.Since(fi.ModTime()) > lockStale {
			os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock state dir: %s is held", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// addSession records a session this fake agent started, for --resume.
func (s state) addSession(id string) error {
	return os.WriteFile(filepath.Join(s.dir, "sessions", id), nil, 0o644)
}

// hasSession reports whether this fake agent started session id.
func (s state) hasSession(id string) bool {
	if !uuidRE.MatchString(id) {
		return false
	}
	_, err := os.Stat(filepath.Join(s.dir, "sessions", id))
	return err == nil
}

// writeFileAtomic replaces the file at path with data.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
