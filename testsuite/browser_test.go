package testsuite_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpinput "github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/durable-ralph/ralph/contract"
)

// TestBrowserAnswersCheckpointThroughUISignalForm drives the Temporal Web UI
// that `worker --dev` embeds with a real (headless) Chromium: it reads the
// pending question in the session's Current Details, answers it with the
// UI's own "Send a Signal" form, and checks that the session carries the
// answer into the next prompt and completes.
func TestBrowserAnswersCheckpointThroughUISignalForm(t *testing.T) {
	chromium := lookChromium(t)

	const question = "Which database should widgets live in?"
	const payload = `{"id": "cp-2", "answer": "sqlite via the UI"}`

	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps": []any{
			map[string]any{"auto": true},
			map[string]any{"checkpoint": map[string]any{
				"type": "decision", "question": question,
				"options": []string{"postgres", "sqlite"}, "context": "Both drivers are vendored.",
			}, "text": "I need a decision before US-002."},
		},
		"repeat": "auto",
	}))
	id := sessionIDOf(r.Dir)
	uiPort := startUISession(t, se, "run", "--dev", r.Dir)
	waitForStarter(t, se, "the session to wait for a human", id, "list", "--dev", "--status", "awaiting_human")

	// The workflow page redirects to the latest run. The session's current
	// details (workflow.SetCurrentDetails) are on its User Metadata tab, in
	// an iframe that renders the markdown.
	b, ctx := openWorkflow(t, chromium, uiPort, id, "workflow page", `#user-metadata-tab`)
	details := b.currentDetails(ctx, "the pending question", question)
	require.Contains(t, details, "Waiting for a human")
	require.Contains(t, details, "cp-2")
	require.Contains(t, details, "postgres / sqlite")

	// More Actions → Send a Signal opens the signal modal.
	const modal = `[data-testid="signal-confirmation-modal"]`
	b.do(ctx, "open the signal form",
		chromedp.Click(uiVisible(`button[aria-controls="workflow-actions"]`)),
		chromedp.Click(uiVisible(`[data-testid="signal-button"]`)),
		chromedp.WaitVisible(uiVisible(modal)),
	)

	// The modal offers the signals the workflow declares in a select, or a
	// free text field when the UI could not read the workflow's metadata.
	form := b.poll(ctx, "the signal name field", fmt.Sprintf(`%s.length > 0 ? 'select' : %s.length > 0 ? 'name' : false`,
		uiVisible(modal+` [data-testid="signal-select-button"]`), uiVisible(modal+` input#signal-name`)))
	switch form {
	case "select":
		b.do(ctx, "choose the checkpoint signal",
			chromedp.Click(uiVisible(modal+` [data-testid="signal-select-button"]`)),
			chromedp.Click(uiOption(modal, contract.SignalCheckpoint)),
		)
		// The list of signals lies over the Data field until it has faded
		// out; a click before then would land on another signal.
		b.do(ctx, "close the list of signals",
			chromedp.WaitNotPresent(uiPresent(modal+` [role="listbox"]`)))
	default:
		t.Logf("the signal form has no list of signals; typing the name")
		b.do(ctx, "type the signal name",
			chromedp.SendKeys(uiVisible(modal+` input#signal-name`), contract.SignalCheckpoint))
	}

	// The Data field is a CodeMirror editor; typing would auto-close
	// brackets and quotes, so the payload goes in as one text insertion.
	b.do(ctx, "enter the signal input",
		chromedp.Click(uiVisible(modal+` .cm-content`)),
		chromedp.WaitVisible(uiVisible(modal+` .cm-editor.cm-focused`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, cdpinput.InsertText, cdpinput.InsertTextParams{Text: payload})
			return err
		}),
	)
	entered := b.poll(ctx, "the signal input", fmt.Sprintf(`%s.map((e) => e.innerText.trim()).find((v) => v !== '') || false`,
		uiVisible(modal+` .cm-content`)))
	require.Equal(t, payload, entered)
	// Nothing since has changed the signal name.
	b.poll(ctx, "the signal name "+contract.SignalCheckpoint, fmt.Sprintf(`%s.map((e) => e.value).find((v) => v === %q) || false`,
		uiVisible(modal+` input#signal-select, `+modal+` input#signal-name`), contract.SignalCheckpoint))

	b.do(ctx, "submit the signal",
		chromedp.WaitEnabled(uiVisible(modal+` [data-testid="confirm-modal-button"]`)),
		chromedp.Click(uiVisible(modal+` [data-testid="confirm-modal-button"]`)),
		chromedp.WaitVisible(chromedp.ID(`workflow-signal-success-toast`)),
	)

	// The session takes the answer and runs to the end.
	code, out := starter(t, se, "run", "--dev", "--follow", r.Dir)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "ended: complete")
	prompt := sessionPrompt(t, r.Dir, id, 3)
	require.Contains(t, string(prompt), question)
	require.Contains(t, string(prompt), "sqlite via the UI")
}

// lookChromium finds Debian's Chromium. Outside CI a machine without it
// skips the browser test; in CI it must be there.
func lookChromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required in CI: %v", err)
		}
		t.Skipf("chromium not installed: %v", err)
	}
	return path
}

// envOf returns the value of name in an environment list.
func envOf(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, name+"="); ok {
			v = s
		}
	}
	return v
}

// uiShownJS is a JavaScript predicate for elements a person can see and
// click: the UI renders some controls twice (one copy for narrow screens,
// hidden), keeps closed menus in the DOM as invisible, transparent lists,
// and fades and scales menus and dialogs in and out, so an element counts
// once it is visible and no CSS transition moves it or its ancestors.
const uiShownJS = `(e) => e.checkVisibility({visibilityProperty: true, opacityProperty: true}) && !(` + uiMovingJS + `)(e)`

// uiMovingJS is a JavaScript predicate for elements that a CSS transition
// is moving or fading: a menu that closes is already "invisible" while it
// still lies over the page and takes clicks.
const uiMovingJS = `(e) => document.getAnimations().some((a) => a instanceof CSSTransition &&
	a.playState === 'running' && a.effect && a.effect.target && a.effect.target.contains(e))`

// uiVisible selects the elements that match css and are shown. A query on
// it waits until there is one.
func uiVisible(css string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(`[...document.querySelectorAll(%q)].filter(%s)`, css, uiShownJS))
}

// uiPresent selects the elements that match css and are visible or on
// their way in or out. WaitNotPresent on it waits until they are gone.
func uiPresent(css string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(
		`[...document.querySelectorAll(%q)].filter((e) => e.checkVisibility({visibilityProperty: true, opacityProperty: true}) || (%s)(e))`,
		css, uiMovingJS))
}

// uiOption selects the shown option named name of a select inside scope.
func uiOption(scope, name string) chromedp.JSPath {
	return chromedp.JSPath(fmt.Sprintf(`[...document.querySelectorAll(%q)].filter(%s).filter((e) => {
		const label = e.querySelector('span');
		return label && label.textContent.trim() === %q;
	})`, scope+` [role="option"]`, uiShownJS, name))
}

// browser is a headless Chromium tab. When the test fails, it saves what
// the browser saw: a screenshot, the page's HTML, its console and
// Chromium's own output.
type browser struct {
	t   *testing.T
	ctx context.Context // the tab; it lives until the test ends

	mu      sync.Mutex
	console []string
	output  bytes.Buffer
}

func (b *browser) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.output.Write(p)
}

func startBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	b := &browser{t: t}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox, // tests run as root in containers
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		// The machine has no network: keep Chromium from calling home.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		// Wide enough for the UI's desktop layout.
		chromedp.WindowSize(1400, 1000),
		chromedp.CombinedOutput(b),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	b.ctx = ctx
	// The first action starts the browser and binds it to ctx, which has
	// no deadline, so that a timed-out step still leaves a browser to
	// take the failure screenshot with.
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		require.NoError(t, err, "start chromium; its output:\n%s", b.chromiumOutput())
	case <-startCtx.Done():
		t.Fatalf("chromium did not start within a minute; its output:\n%s", b.chromiumOutput())
	}
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m))
			b.mu.Unlock()
		}
	}()
	t.Cleanup(b.saveIfFailed)
	return b
}

// startUISession starts a dev worker of se and a session by the starter
// run with args, and returns the port of the dev server's Temporal UI.
func startUISession(t *testing.T, se *starterEnv, args ...string) (uiPort string) {
	t.Helper()
	uiPort = envOf(se.env, "RALPH_DEV_UI_PORT")
	require.NotEmpty(t, uiPort)
	startDevWorker(t, se)
	code, out := starter(t, se, args...)
	require.Equal(t, 0, code, out)
	return uiPort
}

// openWorkflow starts a browser on the Temporal UI at uiPort, opens the
// page of workflow id and clicks its tab (a selector). It returns the
// browser and a context of two minutes for the test's steps.
func openWorkflow(t *testing.T, chromium, uiPort, id, what, tab string) (*browser, context.Context) {
	t.Helper()
	b := startBrowser(t, chromium)
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Minute)
	t.Cleanup(cancel)
	b.do(ctx, "open the "+what,
		chromedp.Navigate(fmt.Sprintf("http://127.0.0.1:%s/namespaces/default/workflows/%s", uiPort, id)),
		chromedp.Click(uiVisible(tab)),
	)
	return b, ctx
}

// currentDetails waits for the session's Current Details, in the iframe
// of the User Metadata tab, to hold text, and returns them; what names
// them for a failure.
func (b *browser) currentDetails(ctx context.Context, what, text string) string {
	b.t.Helper()
	return b.poll(ctx, what+" in the Current Details", fmt.Sprintf(`%s
		.map((f) => f.contentDocument && f.contentDocument.body ? f.contentDocument.body.innerText : '')
		.find((text) => text.includes(%q)) || false`, uiVisible(`iframe#user-metadata-current-details`), text))
}

// keepScreenshot saves a screenshot of the page as name in the test's
// directory of BROWSER_TEST_ARTIFACTS, when it is set.
func (b *browser) keepScreenshot(ctx context.Context, name string) {
	b.t.Helper()
	dir := os.Getenv("BROWSER_TEST_ARTIFACTS")
	if dir == "" {
		return
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	require.NoError(b.t, err)
	path := filepath.Join(dir, b.t.Name(), name)
	require.NoError(b.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(b.t, os.WriteFile(path, shot, 0o644))
	b.t.Logf("screenshot: %s", path)
}

func (b *browser) chromiumOutput() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.output.String()
}

// do runs the steps of one user action and fails the test, naming the
// action, when one of them fails or the context ends first.
func (b *browser) do(ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	b.check(chromedp.Do(ctx, steps...), what)
}

// poll evaluates a JavaScript expression until it is truthy and returns
// its value as a string. The expression runs in the page, in a function.
func (b *browser) poll(ctx context.Context, what, expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Poll[string](expr,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second)))
	b.check(err, what)
	return v
}

func (b *browser) check(err error, what string) {
	b.t.Helper()
	if err != nil {
		url, _ := chromedp.Run(b.quick(), chromedp.Location())
		b.t.Fatalf("browser: %s: %v (page %s)", what, err, url)
	}
}

// quick is a short context on the tab for reading it after a failure.
func (b *browser) quick() context.Context {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	b.t.Cleanup(cancel)
	return ctx
}

// saveIfFailed writes the screenshot, HTML and logs of a failed test to a
// directory it names in the test log (BROWSER_TEST_ARTIFACTS, or a new
// temporary directory that outlives the test).
func (b *browser) saveIfFailed() {
	t := b.t
	if !t.Failed() {
		return
	}
	dir := os.Getenv("BROWSER_TEST_ARTIFACTS")
	var err error
	if dir != "" {
		dir = filepath.Join(dir, t.Name())
		err = os.MkdirAll(dir, 0o755)
	} else {
		dir, err = os.MkdirTemp("", "ralph-browser-")
	}
	if err != nil {
		t.Logf("cannot save the browser's state: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	save := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Logf("save %s: %v", name, err)
		}
	}
	if url, err := chromedp.Run(ctx, chromedp.Location()); err == nil {
		save("url.txt", []byte(url+"\n"))
	}
	if shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		save("screenshot.png", shot)
	} else {
		t.Logf("screenshot: %v", err)
	}
	if html, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html"))); err == nil {
		save("page.html", []byte(html))
	} else {
		t.Logf("page HTML: %v", err)
	}
	b.mu.Lock()
	save("console.log", []byte(strings.Join(b.console, "\n")+"\n"))
	save("chromium.log", b.output.Bytes())
	b.mu.Unlock()
	t.Logf("the browser's screenshot, HTML and console are in %s", dir)
}

// TestBrowserShowsTheLiveViewInPendingActivities: while an iteration runs,
// the Temporal UI's Pending Activities tab of the session shows what its
// agent did last, from the iteration's heartbeat. With
// BROWSER_TEST_ARTIFACTS set, the tab's screenshot is kept there.
func TestBrowserShowsTheLiveViewInPendingActivities(t *testing.T) {
	chromium := lookChromium(t)
	r := newRepo(t, map[string]string{"prd.json": threeStoryPRD, "progress.txt": ""})
	se := newStarterEnv(t, scenario(t, map[string]any{"auto": true, "sleep_ms": 120000}))
	id := sessionIDOf(r.Dir)
	uiPort := startUISession(t, se, "run", "--dev", r.Dir)
	waitForStarter(t, se, "the live view in status", "▸ Bash  sleep 120", "status", "--dev", r.Dir)

	b, ctx := openWorkflow(t, chromium, uiPort, id, "pending activities", `#pending-activities-tab`)
	text := b.poll(ctx, "the agent's last events in the pending activity",
		`document.body.innerText.includes("sleep 120") ? document.body.innerText : false`)
	require.Contains(t, text, "RunIteration")
	require.Contains(t, text, "Running the test suite; this takes a moment.")
	b.keepScreenshot(ctx, "pending-activities.png")
}

// TestBrowserShowsThePlanToApprove opens the Temporal UI on a session of
// starter plan that waits for its plan to be approved: the Current
// Details show the stories with their acceptance criteria, and the
// activity summary names the planner. With BROWSER_TEST_ARTIFACTS set,
// the screenshot is kept there.
func TestBrowserShowsThePlanToApprove(t *testing.T) {
	chromium := lookChromium(t)
	r := newRepo(t, map[string]string{"README.md": "# Widgets\n"})
	se := newStarterEnv(t, rawScenario(t, map[string]any{
		"steps":  []any{map[string]any{"auto": true}},
		"repeat": "auto",
		"roles":  map[string]any{"planner": []any{map[string]any{"write": map[string]string{"prd.json": planTwoStories}, "text": "Planned."}}},
	}))
	id := sessionIDOf(r.Dir)
	uiPort := startUISession(t, se, "plan", "--dev", "a catalogue of widgets", r.Dir)
	waitForStarter(t, se, "the plan to wait for a human", id, "list", "--dev", "--status", "awaiting_human")

	b, ctx := openWorkflow(t, chromium, uiPort, id, "workflow page", `#user-metadata-tab`)
	details := b.currentDetails(ctx, "the plan", "US-002")
	require.Contains(t, details, "The planner wrote 2 stories into prd.json")
	require.Contains(t, details, "US-001 List widgets")
	require.Contains(t, details, "Typecheck passes")
	require.Contains(t, details, "cp-1-plan")
	b.keepScreenshot(ctx, "plan-checkpoint.png")

	// The planner's iteration is named so in the summary the UI shows
	// for its activity.
	c := se.dial(t)
	defer c.Close()
	var summaries []string
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if ev.GetActivityTaskScheduledEventAttributes() != nil && ev.GetUserMetadata().GetSummary() != nil {
			var sum string
			require.NoError(t, converter.GetDefaultDataConverter().FromPayload(ev.GetUserMetadata().GetSummary(), &sum))
			summaries = append(summaries, sum)
		}
	}
	require.Contains(t, summaries, "iteration 1 (planner): plan prd.json")
}
