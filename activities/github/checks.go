package github

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	gh "github.com/google/go-github/v62/github"

	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/secretscan"
)

const (
	// maxLogs bounds the GitHub Actions jobs whose log one reading
	// downloads; the other failed jobs give their check run's output.
	maxLogs = 5
	// logTail is how much of the end of a job's log is kept while the
	// log streams by, before it is cleaned, redacted and cut to its share
	// of contract.FailedCheckOutputLimit.
	logTail = 64 << 10
	// actionsApp is the slug of the GitHub Actions app, whose check runs
	// are jobs with a log.
	actionsApp = "github-actions"
)

// failure is a failed check run or status while its output is gathered.
type failure struct {
	check contract.FailedCheck
	// job is the GitHub Actions job of a check run (its ID), 0 for
	// others.
	job  int64
	text string
}

// checks reads the check runs and commit statuses of head. A completed
// check run passes with the conclusions branch protection lets pass
// (success, neutral, skipped) and fails with any other (failure,
// timed_out, cancelled, action_required, startup_failure, stale); a
// status passes with success and fails with failure or error. What has
// not completed is pending. A head without checks has Total 0.
func (c *client) checks(ctx context.Context, head string) (contract.ChecksSummary, error) {
	sum := contract.ChecksSummary{Head: head}
	if head == "" {
		return sum, nil
	}
	runs, err := pages(func(opts gh.ListOptions) ([]*gh.CheckRun, *gh.Response, error) {
		res, resp, err := c.Checks.ListCheckRunsForRef(ctx, c.repo.Owner, c.repo.Name, head,
			&gh.ListCheckRunsOptions{Filter: gh.String("latest"), ListOptions: opts})
		if err != nil {
			return nil, resp, err
		}
		return res.CheckRuns, resp, nil
	})
	if err != nil {
		return sum, c.fail("list the check runs of "+contract.ShortSHA(head), err)
	}
	statuses, err := pages(func(opts gh.ListOptions) ([]*gh.RepoStatus, *gh.Response, error) {
		res, resp, err := c.Repositories.GetCombinedStatus(ctx, c.repo.Owner, c.repo.Name, head, &opts)
		if err != nil {
			return nil, resp, err
		}
		return res.Statuses, resp, nil
	})
	if err != nil {
		return sum, c.fail("read the commit status of "+contract.ShortSHA(head), err)
	}

	failed := tally(&sum, runs, statuses)
	c.readLogs(ctx, failed)
	outs := make([]string, len(failed))
	for i, f := range failed {
		outs[i] = c.a.scrub(f.text)
	}
	share(outs, contract.FailedCheckOutputLimit)
	for i, f := range failed {
		f.check.Output = outs[i]
		sum.Failed = append(sum.Failed, f.check)
	}
	return sum, nil
}

// tally counts runs and statuses into sum and returns the failed ones.
func tally(sum *contract.ChecksSummary, runs []*gh.CheckRun, statuses []*gh.RepoStatus) []failure {
	var failed []failure
	for _, r := range runs {
		sum.Total++
		switch {
		case r.GetStatus() != "completed":
			sum.Pending = append(sum.Pending, r.GetName())
		case passes(r.GetConclusion()):
			sum.Passed++
		default:
			f := failure{
				check: contract.FailedCheck{Name: r.GetName(), Conclusion: r.GetConclusion(), URL: r.GetHTMLURL()},
				text:  runOutput(r),
			}
			if r.GetApp().GetSlug() == actionsApp {
				f.job = r.GetID()
			}
			failed = append(failed, f)
		}
	}
	for _, s := range statuses {
		sum.Total++
		switch s.GetState() {
		case "pending":
			sum.Pending = append(sum.Pending, s.GetContext())
		case "success":
			sum.Passed++
		default:
			failed = append(failed, failure{
				check: contract.FailedCheck{Name: s.GetContext(), Conclusion: s.GetState(), URL: s.GetTargetURL()},
				text:  s.GetDescription(),
			})
		}
	}
	return failed
}

// readLogs takes the Actions log of each failed job (at most maxLogs) as
// its text; a log it cannot read is said after the check's own text.
func (c *client) readLogs(ctx context.Context, failed []failure) {
	logs := 0
	for i := range failed {
		f := &failed[i]
		if f.job == 0 || logs == maxLogs {
			continue
		}
		logs++
		text, err := c.jobLog(ctx, f.job)
		if err != nil {
			f.text = strings.TrimSpace(f.text + fmt.Sprintf("\n(the job's log could not be read: %v)", err))
			continue
		}
		f.text = text
	}
}

// passes reports whether a completed check run's conclusion lets a
// merge through.
func passes(conclusion string) bool {
	switch conclusion {
	case "success", "neutral", "skipped":
		return true
	}
	return false
}

// runOutput is what a check run says about itself: its output's text,
// else its summary, else its title.
func runOutput(r *gh.CheckRun) string {
	o := r.GetOutput()
	for _, s := range []string{o.GetText(), o.GetSummary(), o.GetTitle()} {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// jobLog is the end of the log of GitHub Actions job id: GitHub answers
// with a signed link, which is fetched without the token, and the log
// streams through a buffer that keeps its last logTail bytes, however
// long it is. When the log was cut, its first, partial line is dropped:
// it could hold the end of a secret that no redaction would recognise.
// The link never reaches an error: it is a credential of its own.
func (c *client) jobLog(ctx context.Context, id int64) (string, error) {
	link, _, err := c.Actions.GetWorkflowJobLogs(ctx, c.repo.Owner, c.repo.Name, id, 3)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link.String(), nil)
	if err != nil {
		return "", errors.New("GitHub gave an invalid link")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return "", withoutURL(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("download: %s", resp.Status)
	}
	t := tailBuffer{buf: make([]byte, logTail)}
	if _, err := io.Copy(&t, resp.Body); err != nil {
		return "", fmt.Errorf("download: %w", withoutURL(err))
	}
	text := string(t.Bytes())
	if t.total > int64(len(t.buf)) {
		_, rest, ok := strings.Cut(text, "\n")
		if !ok {
			return fmt.Sprintf("(the log's last line is longer than %d KiB)", logTail>>10), nil
		}
		text = rest
	}
	return text, nil
}

// withoutURL is err without the URL a *url.Error names.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// tailBuffer is a writer that keeps the last len(buf) bytes written to
// it.
type tailBuffer struct {
	buf []byte
	// next is where the next byte goes; total counts all bytes written.
	next  int
	total int64
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.total += int64(n)
	if n >= len(t.buf) {
		copy(t.buf, p[n-len(t.buf):])
		t.next = 0
		return n, nil
	}
	k := copy(t.buf[t.next:], p)
	copy(t.buf, p[k:])
	t.next = (t.next + n) % len(t.buf)
	return n, nil
}

// Bytes returns what the buffer keeps, oldest first.
func (t *tailBuffer) Bytes() []byte {
	if t.total < int64(len(t.buf)) {
		return t.buf[:t.total]
	}
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.next:]...)
	return append(out, t.buf[:t.next]...)
}

var (
	// ansiEscape matches a terminal's control sequence (colours, cursor
	// moves).
	ansiEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)
	// actionsStamp matches the timestamp GitHub Actions starts each line
	// of a job's log with.
	actionsStamp = regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ?`)
	// credentials finds the shapes of well-known credentials.
	credentials = secretscan.New(nil)
	// word matches a run of characters between white space.
	word = regexp.MustCompile(`\S+`)
)

// scrub makes a check's output fit for a prompt: without terminal
// escapes, Actions' timestamps and invisible characters, with the
// worker's secret values redacted (Activities.Redact) and what has the
// shape of a well-known credential replaced (hideCredentials).
func (a *Activities) scrub(s string) string {
	s = ansiEscape.ReplaceAllString(s, "")
	s = actionsStamp.ReplaceAllString(s, "")
	s = visible(s)
	if a.Redact != nil {
		s = a.Redact(s)
	}
	return hideCredentials(s)
}

// hideCredentials replaces each word that has the shape of a well-known
// credential (secretscan) with a placeholder naming what it was, a line
// that still holds one after that with a placeholder, and a private
// key's block, from its BEGIN line to its END line, with one.
func hideCredentials(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	inKey := false
	for _, line := range lines {
		if inKey {
			if strings.Contains(line, "-----END") {
				inKey = false
			}
			continue
		}
		what := credentials.Line(line)
		if what == "" {
			out = append(out, line)
			continue
		}
		if strings.Contains(line, "-----BEGIN") && strings.Contains(line, "PRIVATE KEY") {
			inKey = !strings.Contains(line, "-----END")
			out = append(out, "[REDACTED: "+what+"]")
			continue
		}
		line = word.ReplaceAllStringFunc(line, func(w string) string {
			if what := credentials.Line(w); what != "" {
				return "[REDACTED: " + what + "]"
			}
			return w
		})
		if credentials.Line(line) != "" {
			line = "[REDACTED: a line holding " + what + "]"
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// share cuts outs in place to at most limit bytes together, keeping the
// end of each: the budget is shared fairly, each output getting an
// equal part of what the shorter ones leave.
func share(outs []string, limit int) {
	order := make([]int, len(outs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(len(outs[i]), len(outs[j])) })
	left := limit
	for k, i := range order {
		fair := left / (len(order) - k)
		outs[i] = tail(outs[i], fair)
		left -= len(outs[i])
	}
}

// cutMark starts a text whose beginning was cut.
const cutMark = "…\n"

// tail is the end of s in at most n bytes, cutMark included when s was
// cut: from the first whole line when one starts in the first half of
// what is kept, else from the first whole character.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= len(cutMark) {
		return ""
	}
	keep := s[len(s)-(n-len(cutMark)):]
	if i := strings.IndexByte(keep, '\n'); i >= 0 && i < len(keep)/2 {
		keep = keep[i+1:]
	}
	for keep != "" && !utf8.RuneStart(keep[0]) {
		keep = keep[1:]
	}
	return cutMark + keep
}
