package testsuite_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeMarker marks a shell block of README.md or docs/ that TestREADME
// runs:
//
//	<!-- ralph:run [background] [wait="TEXT"] [join] [expect="TEXT"]... -->
//	```sh
//	...
//	```
//
// A block runs with bash -e, as in a terminal where the blocks before it
// ran (what they exported is exported), and must exit 0 with every
// expect text in its output. A background block runs as in a terminal
// of its own while the blocks after it run: the README goes on once its
// output has its wait text, and the first block after it marked join
// waits for it to end, when it must have exited 0 with its expect texts.
// A block with wait that is not background first waits for the
// background block's output to have that text.
var readmeMarker = regexp.MustCompile(`^<!-- ralph:run((?:\s+\w+(?:="[^"]*")?)*)\s*-->$`)

// readmeAttr is one attribute of a marker.
var readmeAttr = regexp.MustCompile(`(\w+)(?:="([^"]*)")?`)

// readmeBlock is a shell block of README.md or docs/ marked to run.
type readmeBlock struct {
	file       string // the file the block is in
	line       int    // of the block's opening fence in file
	script     string
	background bool
	join       bool
	wait       string
	expect     []string
}

// readmeBlocks reads the blocks of the Markdown file at path marked to
// run, in order.
func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var blocks []readmeBlock
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		m := readmeMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		b := readmeBlock{file: path}
		for _, a := range readmeAttr.FindAllStringSubmatch(m[1], -1) {
			switch a[1] {
			case "background":
				b.background = true
			case "join":
				b.join = true
			case "wait":
				b.wait = a[2]
			case "expect":
				b.expect = append(b.expect, a[2])
			default:
				t.Fatalf("%s:%d: unknown ralph:run attribute %q", path, i+1, a[1])
			}
		}
		require.Less(t, i+1, len(lines), "%s:%d: a marker with no block", path, i+1)
		require.Contains(t, []string{"```sh", "```bash"}, lines[i+1], "%s:%d: a ralph:run marker must be right above a ```sh block", path, i+1)
		b.line = i + 2
		var body []string
		for i += 2; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		require.Less(t, i, len(lines), "%s:%d: the block does not end", path, b.line)
		b.script = strings.Join(body, "\n")
		blocks = append(blocks, b)
	}
	return blocks
}

// readmeFiles are the files whose marked blocks TestREADME runs, in the
// order a newcomer reads them: the README's quick start, the tour of the
// fake agent in docs/sessions.md and the check of the sandbox in
// docs/security.md.
var readmeFiles = []string{"../README.md", "../docs/sessions.md", "../docs/security.md"}

// TestREADME runs the shell blocks of readmeFiles marked to run (the quick
// start, the tour of the fake agent: plan, checkpoint, status; the
// sandbox seen from inside), in order, on what a fresh machine has: a
// HOME without git identity or state, a new git repository where the
// README says "a git repository", the built starter and worker on PATH
// and the fake agent as claude. It fails on a block that exits non-zero
// or lacks an expected output.
func TestREADME(t *testing.T) {
	var blocks []readmeBlock
	for _, f := range readmeFiles {
		fb := readmeBlocks(t, f)
		require.NotEmpty(t, fb, "%s has no block marked <!-- ralph:run -->", f)
		blocks = append(blocks, fb...)
	}

	rr := newReadmeRun(t)
	var bg *readmeProc
	for _, b := range blocks {
		t.Logf("%s:%d:\n%s", b.file, b.line, b.script)
		if b.wait != "" && !b.background {
			require.NotNil(t, bg, "%s:%d: wait without a background block before it", b.file, b.line)
			bg.waitFor(t, b.wait)
		}
		if b.background {
			require.Nil(t, bg, "%s:%d: a second background block before the first was joined", b.file, b.line)
			bg = rr.start(t, b)
			if b.wait != "" {
				bg.waitFor(t, b.wait)
			}
			continue
		}
		out, err := rr.run(t, b)
		require.NoError(t, err, "%s:%d exited with an error; output:\n%s", b.file, b.line, out)
		for _, e := range b.expect {
			require.Contains(t, out, e, "%s:%d: output", b.file, b.line)
		}
		if b.join {
			require.NotNil(t, bg, "%s:%d: join without a background block", b.file, b.line)
			bg.join(t)
			bg = nil
		}
	}
	require.Nil(t, bg, "the background block of %s was never joined", func() string {
		if bg == nil {
			return ""
		}
		return fmt.Sprintf("%s:%d", bg.block.file, bg.block.line)
	}())
}

// readmeRun is where TestREADME runs the README's blocks: a fresh HOME
// and the environment a newcomer's shell would have.
type readmeRun struct {
	root    string // the clone: this module
	home    string
	env     []string
	envFile string // what the blocks exported, for the next block
	marker  string // in the environment of every process it starts
	subst   *strings.Replacer
}

func newReadmeRun(t *testing.T) *readmeRun {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	tmp := t.TempDir()
	if resolved, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = resolved
	}
	rr := &readmeRun{root: root, home: filepath.Join(tmp, "home"), envFile: filepath.Join(tmp, "exported.sh")}
	rr.marker = "RALPH_README_RUN=" + tmp
	require.NoError(t, os.MkdirAll(rr.home, 0o755))

	// The README's placeholders: the repository of its first section is
	// a new one (git init, no commit), as it says; /tmp/fake is the fake
	// agent's directory.
	repo := filepath.Join(rr.home, "src", "your-repo")
	require.NoError(t, os.MkdirAll(repo, 0o755))
	gitInit := exec.Command("git", "init", "-q", repo)
	gitInit.Env = []string{"HOME=" + rr.home, "PATH=" + os.Getenv("PATH")}
	out, err := gitInit.CombinedOutput()
	require.NoError(t, err, "%s", out)
	rr.subst = strings.NewReplacer(
		"/path/to/your/repo", repo,
		"/tmp/fake", filepath.Join(tmp, "fake"),
	)

	// The built starter, worker and fake agent (as claude) on PATH, with
	// go and the system's tools; the Go caches of this machine, so that
	// docs/sessions.md's go build takes seconds; the dev server on free ports
	// instead of 7233 and 8233, which other tests may hold.
	goBin, err := exec.LookPath("go")
	require.NoError(t, err)
	rr.env = []string{
		"HOME=" + rr.home,
		"PATH=" + bins.dir + ":" + filepath.Dir(goBin) + ":/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"RALPH_DEV_PORT=" + strconv.Itoa(fixedPort(t)),
		"RALPH_DEV_UI_PORT=" + strconv.Itoa(fixedPort(t)),
		rr.marker,
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOFLAGS", "GOTOOLCHAIN", "GONOSUMDB", "GOPRIVATE"} {
		v, err := exec.Command("go", "env", k).Output()
		require.NoError(t, err)
		if s := strings.TrimSpace(string(v)); s != "" {
			rr.env = append(rr.env, k+"="+s)
		}
	}
	t.Cleanup(func() { rr.killLeftovers(t) })
	return rr
}

// script is the bash script of block b: the exports of the blocks
// before, the block with its placeholders replaced, and, unless it runs
// in a terminal of its own, its exports saved for the next.
func (rr *readmeRun) script(b readmeBlock) string {
	var s strings.Builder
	fmt.Fprintf(&s, "set -e\nif [ -f %q ]; then source %q; fi\n", rr.envFile, rr.envFile)
	s.WriteString(rr.subst.Replace(b.script))
	if !b.background {
		fmt.Fprintf(&s, "\nexport -p > %q.new && mv %q.new %q\n", rr.envFile, rr.envFile, rr.envFile)
	}
	return s.String()
}

// command is bash running block b in the clone, in a process group of
// its own.
func (rr *readmeRun) command(ctx context.Context, b readmeBlock) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "bash", "-c", rr.script(b))
	cmd.Dir = rr.root
	cmd.Env = rr.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// run runs block b to its end and returns its output.
func (rr *readmeRun) run(t *testing.T, b readmeBlock) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out, err := rr.command(ctx, b).CombinedOutput()
	t.Logf("%s:%d output:\n%s", b.file, b.line, out)
	return string(out), err
}

// readmeProc is a background block running.
type readmeProc struct {
	block readmeBlock
	p     *proc
}

// start starts the background block b.
func (rr *readmeRun) start(t *testing.T, b readmeBlock) *readmeProc {
	t.Helper()
	p := startCmd(t, rr.command(context.Background(), b), func(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) })
	return &readmeProc{block: b, p: p}
}

// waitFor waits until the background block's output has text.
func (bp *readmeProc) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(bp.p.Output(), text) {
		select {
		case <-bp.p.end:
			if strings.Contains(bp.p.Output(), text) {
				return
			}
			t.Fatalf("%s:%d ended (%v) before printing %q; output:\n%s", bp.block.file, bp.block.line, bp.p.err, text, bp.p.Output())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s:%d did not print %q; output:\n%s", bp.block.file, bp.block.line, text, bp.p.Output())
		}
	}
}

// join waits for the background block to end: exit 0, with its expected
// output.
func (bp *readmeProc) join(t *testing.T) {
	t.Helper()
	code := bp.p.wait(t, 4*time.Minute)
	out := bp.p.Output()
	t.Logf("%s:%d (background) output:\n%s", bp.block.file, bp.block.line, out)
	require.Equal(t, 0, code, "%s:%d exited %d; output:\n%s", bp.block.file, bp.block.line, code, out)
	for _, e := range bp.block.expect {
		require.Contains(t, out, e, "%s:%d: output", bp.block.file, bp.block.line)
	}
}

// killLeftovers ends what the README's commands left running (a dev
// server runs on after the command that started it): every process with
// this run's marker in its environment.
func (rr *readmeRun) killLeftovers(t *testing.T) {
	var pids []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(data, []byte(rr.marker+"\x00")) {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			t.Logf("process %d of the README did not end on SIGTERM: killed", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestREADMEMarkers checks the markers' grammar on a README of its own,
// so that a mistyped marker fails here rather than silently running
// nothing.
func TestREADMEMarkers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(path, []byte(readmeSample), 0o644))
	require.Equal(t, []readmeBlock{
		{file: path, line: 4, script: "echo one"},
		{file: path, line: 13, script: "sleep 1\necho two", background: true, wait: "a b", expect: []string{"c", "d e"}},
		{file: path, line: 19, script: "echo three", join: true},
	}, readmeBlocks(t, path))
}

const readmeSample = `# x

<!-- ralph:run -->
` + "```sh" + `
echo one
` + "```" + `

` + "```sh" + `
not marked
` + "```" + `

<!-- ralph:run background wait="a b" expect="c" expect="d e" -->
` + "```sh" + `
sleep 1
echo two
` + "```" + `

<!-- ralph:run join -->
` + "```bash" + `
echo three
` + "```" + `
`
