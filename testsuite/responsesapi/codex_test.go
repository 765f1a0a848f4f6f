package responsesapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/agent/codex"
	"github.com/durable-ralph/ralph/testsuite/realcli"
	"github.com/durable-ralph/ralph/testsuite/responsesapi"
)

// codexCLI is the real CLI set up against a scripted server: a CODEX_HOME of
// its own (where it keeps its sessions, so a resume must use the same
// one), a HOME and a temp dir, and a git repository to work in.
type codexCLI struct {
	t    *testing.T
	bin  string
	home string // CODEX_HOME
	dir  string // working directory
	env  []string
}

// newCodex sets up the real CLI against srv, with retries as
// Server.CodexConfig takes them.
func newCodex(t *testing.T, srv *responsesapi.Server, retries int) *codexCLI {
	t.Helper()
	c := &codexCLI{t: t, bin: realcli.CodexBin(t), home: t.TempDir(), dir: t.TempDir()}
	require.NoError(t, os.WriteFile(filepath.Join(c.home, "config.toml"), []byte(srv.CodexConfig(retries)), 0o600))
	git := exec.Command("git", "init", "-q", c.dir)
	out, err := git.CombinedOutput()
	require.NoError(t, err, string(out))
	c.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"TMPDIR=" + t.TempDir(),
		"CODEX_HOME=" + c.home,
		responsesapi.EnvKey + "=sk-test-scripted",
	}
	return c
}

// read is the content of the file name of the working directory.
func (c *codexCLI) read(name string) string {
	c.t.Helper()
	data, err := os.ReadFile(filepath.Join(c.dir, name))
	require.NoError(c.t, err)
	return string(data)
}

// write writes content to the file name of the working directory.
func (c *codexCLI) write(name, content string) {
	c.t.Helper()
	require.NoError(c.t, os.WriteFile(filepath.Join(c.dir, name), []byte(content), 0o644))
}

// run is one codex run.
type run struct {
	realcli.Run
	code   int
	events []map[string]any
}

// verdict is how the codex backend's parser reads the run.
func (r run) verdict() (agent.Summary, agent.Verdict) {
	p := codex.Backend{}.NewParser(agent.Options{})
	for _, l := range strings.Split(r.Stdout, "\n") {
		_, _ = p.Line([]byte(l))
	}
	return p.Summary(), p.Verdict(r.Err, r.Stderr, time.Now())
}

// exec runs codex with args and the prompt on its standard input.
func (c *codexCLI) exec(prompt string, args ...string) run {
	c.t.Helper()
	r := run{Run: realcli.Command{Bin: c.bin, Args: args, Dir: c.dir, Env: c.env, Stdin: prompt}.Run(c.t)}
	r.code = r.ExitCode()
	r.events = events(r.Stdout)
	c.t.Logf("codex %s: exit %d in %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.Elapsed.Round(time.Millisecond), r.Stdout, tail(r.Stderr, 2000))
	return r
}

// fresh is the command line of a fresh run as the codex backend builds
// it, the prompt read from stdin; extra are its agent.args.
func fresh(extra ...string) []string {
	return codex.Backend{}.Args(agent.Options{ExtraArgs: extra}, "")
}

// resume is the command line of a run that resumes thread id.
func resume(id string, extra ...string) []string {
	return codex.Backend{}.Args(agent.Options{ExtraArgs: extra}, id)
}

// threadID is the thread id of the run's thread.started event.
func (r run) threadID() string {
	for _, ev := range r.events {
		if ev["type"] == "thread.started" {
			id, _ := ev["thread_id"].(string)
			return id
		}
	}
	return ""
}

// types lists the types of the run's events, with the item type of item
// events ("item.completed:agent_message").
func (r run) types() []string {
	var out []string
	for _, ev := range r.events {
		typ, _ := ev["type"].(string)
		if item, ok := ev["item"].(map[string]any); ok {
			it, _ := item["type"].(string)
			typ += ":" + it
		}
		out = append(out, typ)
	}
	return out
}

// items lists the completed items of the given type.
func (r run) items(typ string) []map[string]any {
	var out []map[string]any
	for _, ev := range r.events {
		item, ok := ev["item"].(map[string]any)
		if ev["type"] == "item.completed" && ok && item["type"] == typ {
			out = append(out, item)
		}
	}
	return out
}

// killAfter starts codex like exec, waits until cond holds, and kills its
// process group with SIGKILL, as the end of a worker does.
func (c *codexCLI) killAfter(prompt string, args []string, cond func() bool) run {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Dir, cmd.Env = c.dir, c.env
	cmd.Stdin = strings.NewReader(prompt)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(c.t, cmd.Start())
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			c.t.Fatalf("codex never got there:\n%s\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(c.t, syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL))
	_ = cmd.Wait()
	r := run{Run: realcli.Run{Stdout: stdout.String(), Stderr: stderr.String()}, code: cmd.ProcessState.ExitCode()}
	r.events = events(r.Stdout)
	c.t.Logf("codex %s: killed\nstdout:\n%s", strings.Join(args, " "), r.Stdout)
	return r
}

// events decodes the JSON lines of stdout.
func events(stdout string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			out = append(out, ev)
		}
	}
	return out
}

// usageOf is the input_tokens of the run's turn.completed.
func usageOf(t *testing.T, r run) int {
	t.Helper()
	for _, ev := range r.events {
		if ev["type"] == "turn.completed" {
			return int(ev["usage"].(map[string]any)["input_tokens"].(float64))
		}
	}
	t.Fatalf("no turn.completed in %s", r.Stdout)
	return 0
}

// commandsOf lists the shell commands of the request's tool calls, taken
// out of Codex's code-mode scripts.
func commandsOf(req responsesapi.Request) []string {
	var out []string
	for _, c := range req.Commands() {
		if i := strings.Index(c, "{cmd: "); i >= 0 {
			var s string
			if json.NewDecoder(strings.NewReader(c[i+len("{cmd: "):])).Decode(&s) == nil {
				c = s
			}
		}
		out = append(out, c)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
