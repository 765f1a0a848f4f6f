package codex

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// stderrLines is how many of the last lines of stderr Verdict reads.
const stderrLines = 20

// exitUsage is the exit status of a command line Codex's argument parser
// rejects.
const exitUsage = 2

var (
	// resumeFailedRE matches Codex's error for a resume of a thread it
	// has no session of: "Error: thread/resume: thread/resume failed: no
	// rollout found for thread id 01a2... (code -32600)".
	resumeFailedRE = regexp.MustCompile(`(?i)no rollout found for thread id|thread/resume failed`)
	// permanentRE matches failures that retrying does not fix: no or
	// wrong credentials, no credit, a model the account cannot use, a
	// plan without Codex, a configuration Codex cannot read.
	permanentRE = regexp.MustCompile(`(?i)\b40[13] (?:Unauthorized|Forbidden)\b|\bunexpected status 404\b|` +
		`Missing environment variable|invalid_api_key|Incorrect API key|invalid api key|` +
		`quota exceeded|insufficient_quota|exceeded your current quota|` +
		"does not exist or you do not have access|model_not_found|model (?:is )?not supported|unsupported model|not supported when using Codex|" +
		`To use Codex with your ChatGPT plan|not logged in|sign in again|log in again|refresh token|` +
		"Error loading config|Model provider `[^`]*` not found|Not inside a trusted directory")
	// rateLimitRE matches what Codex says of a rate limit (429, "rate
	// limit exceeded"), of the usage limit of a ChatGPT plan ("You've hit
	// your usage limit"), and of an overloaded API ("Selected model is at
	// capacity", 503, 529 "overloaded"). Codex words every HTTP 500 as
	// "We're currently experiencing high demand, which may cause
	// temporary errors."; that is an agent error, as an error that
	// outlasts Codex's own retries may well persist.
	rateLimitRE = regexp.MustCompile(`(?i)\b429\b|too many requests|rate[ _-]?limit|usage limit|` +
		`at capacity|overloaded|\b503 Service Unavailable\b|slow down`)
	// retryInRE matches a wait in the API's words: "Please try again in
	// 11.054s", "in 6m0s", "in 120ms", "in 20 seconds".
	retryInRE = regexp.MustCompile(`(?i)try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+|\d+(?:\.\d+)?\s*(?:seconds?|secs?|minutes?|mins?|hours?))`)
	// retryAtRE matches the reset of a usage limit in Codex's words, in
	// its local time: "try again at 2:31 AM", "try again at Nov 26th,
	// 2026 4:04 AM".
	retryAtRE = regexp.MustCompile(`(?i)try again at (?:([A-Z][a-z]{2,8}) (\d{1,2})(?:st|nd|rd|th)?,? (\d{4}),? )?(\d{1,2}):(\d{2})(?:\s*([AP]M))?`)
	// logPrefixRE matches the time and level Codex's log lines on stderr
	// begin with.
	logPrefixRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT[\d:.]+Z\s+[A-Z]+\s+`)
	// backtraceRE matches the lines of a backtrace Codex prints on stderr
	// after a fatal error.
	backtraceRE = regexp.MustCompile(`^(?:Stack backtrace:|\s*\d+: |\s+at )`)
)

// Verdict classifies the finished run. It succeeds when a turn completed,
// none failed, and Codex exited with status 0. A run that failed is
//   - agent.OutcomeRateLimited when Codex reported a rate limit (an API
//     429, which it gives up on as "exceeded retry limit, last status:
//     429 Too Many Requests"; "rate limit exceeded: ..."), the usage
//     limit of a ChatGPT plan ("You've hit your usage limit ... try again
//     at 2:31 AM."), or an overloaded API (503, "Selected model is at
//     capacity"); ResetsAt is set when Codex said when ("Please try
//     again in 20s", "try again at ...", read in the location of now,
//     Codex printing its local time);
//   - agent.OutcomePermanent when retrying cannot help: no or wrong API
//     key (401, 403, "Missing environment variable"), an exhausted quota
//     ("Quota exceeded", insufficient_quota), a model that does not exist
//     or is not supported, a ChatGPT plan without Codex, a config.toml
//     Codex cannot read, a command line it rejected (exit status 2), a
//     binary that cannot be started;
//   - agent.OutcomeAgentError otherwise, with Codex's last word on it: an
//     API error 500 it gave up retrying (which it words "We're currently
//     experiencing high demand"), a stream cut off, a full context
//     window, a resume of a thread it has no session of (see
//     ResumeFailed).
//
// Only texts that Codex itself wrote are read: the error of turn.failed,
// the messages of error events, and stderr; never the model's messages or
// the output of the commands it ran. Error items (warnings that do not
// end the turn, such as a model's missing metadata) do not make a run
// fail.
func (p *Parser) Verdict(exitErr error, stderrTail string, now time.Time) agent.Verdict {
	if agent.NotStarted(exitErr) {
		return agent.NewVerdict(contract.OutcomePermanent, "agent could not be started: "+exitErr.Error())
	}
	if exitErr == nil && p.completed > 0 && !p.hasFailed {
		return agent.Verdict{Outcome: contract.OutcomeSuccess}
	}
	stderr := stderrMessages(stderrTail)
	// texts are what Codex said of the failure, its last word first: the
	// error of the failed turn, then its error events and stderr, latest
	// first.
	var texts []string
	if p.hasFailed {
		texts = append(texts, p.failed)
	}
	texts = append(texts, p.Errors.NewestFirst()...)
	texts = append(texts, agent.Recent(stderr).NewestFirst()...)
	message := ""
	if len(texts) > 0 {
		message = texts[0]
	}
	// decisive are the texts that say why the run ended: the failed
	// turn's error when there is one (earlier error events may be
	// retries of another error), else all of them.
	decisive := texts
	if p.hasFailed {
		decisive = texts[:1]
	}

	if t := agent.FirstMatch(stderr, resumeFailedRE); t != "" {
		p.NoSession = true
		return agent.NewVerdict(contract.OutcomeAgentError, "agent could not resume its session: "+t)
	}
	if agent.ExitCode(exitErr) == exitUsage {
		if t := firstPrefixed(stderr, "error:"); t != "" {
			return agent.NewVerdict(contract.OutcomePermanent, "agent rejected its command line: "+t)
		}
	}
	if t := agent.FirstMatch(decisive, permanentRE); t != "" {
		return agent.NewVerdict(contract.OutcomePermanent, "agent cannot run: "+t)
	}
	if t := agent.FirstMatch(decisive, rateLimitRE); t != "" {
		v := agent.NewVerdict(contract.OutcomeRateLimited, "agent was rate limited: "+t)
		v.ResetsAt = resetsAt(t, now)
		if v.ResetsAt.IsZero() {
			v.ResetsAt = resetsAt(strings.Join(texts, "\n"), now)
		}
		return v
	}

	var reason string
	switch {
	case p.hasFailed:
		reason = "agent's turn failed"
	case exitErr == nil && p.completed == 0:
		reason = "agent exited with status 0 but completed no turn (was it stopped?)"
	case exitErr == nil:
		reason = "agent failed"
	default:
		reason = "agent " + agent.ExitPhrase(exitErr)
	}
	if message != "" {
		reason += ": " + message
	}
	return agent.NewVerdict(contract.OutcomeAgentError, reason)
}

// ResumeFailed reports that the run, started to resume a thread, ended
// because Codex has no session of that thread under its CODEX_HOME
// ("no rollout found for thread id ..." on stderr, exit status 1, no
// output). Codex says so on stderr only, so ResumeFailed knows it once
// Verdict has read stderr.
//
// A thread given by a name rather than a UUID that Codex does not know is
// no failure to Codex: it starts a new thread, whose id thread.started
// prints.
func (p *Parser) ResumeFailed() bool { return p.NoSession }

// stderrMessages are the last lines of stderr that say something: not
// blank, not Codex's warning that it could not create its PATH helpers,
// not a backtrace; log lines without their time and level.
func stderrMessages(tail string) []string {
	lines := strings.Split(tail, "\n")
	var out []string
	for _, l := range lines {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" || backtraceRE.MatchString(l) ||
			strings.HasPrefix(l, "WARNING: proceeding, even though we could not create PATH aliases") {
			continue
		}
		out = append(out, strings.TrimSpace(logPrefixRE.ReplaceAllString(l, "")))
	}
	return out[max(len(out)-stderrLines, 0):]
}

// firstPrefixed is the first text that begins with prefix, "" if none
// does.
func firstPrefixed(texts []string, prefix string) string {
	for _, t := range texts {
		if strings.HasPrefix(t, prefix) {
			return t
		}
	}
	return ""
}

// resetsAt is when a limit lifts by what text says: now plus the wait of
// "try again in ...", or the time of "try again at ..." in now's
// location; zero if text says neither.
func resetsAt(text string, now time.Time) time.Time {
	if m := retryInRE.FindStringSubmatch(text); m != nil {
		if d, ok := parseWait(m[1]); ok {
			return now.Add(d)
		}
	}
	m := retryAtRE.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}
	}
	hour, _ := strconv.Atoi(m[4])
	minute, _ := strconv.Atoi(m[5])
	switch strings.ToUpper(m[6]) {
	case "AM":
		if hour == 12 {
			hour = 0
		}
	case "PM":
		if hour < 12 {
			hour += 12
		}
	}
	if hour > 23 || minute > 59 {
		return time.Time{}
	}
	loc := now.Location()
	if m[1] != "" {
		month, ok := parseMonth(m[1])
		day, _ := strconv.Atoi(m[2])
		year, _ := strconv.Atoi(m[3])
		if !ok || day < 1 || day > 31 {
			return time.Time{}
		}
		return time.Date(year, month, day, hour, minute, 0, 0, loc)
	}
	t := time.Date(now.Year(), now.Month(), now.Day(), hour, minute, 0, 0, loc)
	// Codex names the time of day only when it is within a day; a time
	// already past is tomorrow's (within the minute, it is this one).
	if t.Before(now.Add(-time.Minute)) {
		t = t.AddDate(0, 0, 1)
	}
	return t
}

// parseWait reads a wait as the API writes it: a Go duration ("20s",
// "11.054s", "6m0s", "120ms") or a number of seconds, minutes or hours in
// words.
func parseWait(s string) (time.Duration, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if d, err := time.ParseDuration(s); err == nil {
		return d, d >= 0
	}
	num, unit, _ := strings.Cut(strings.Join(strings.Fields(s), " "), " ")
	if unit == "" {
		i := strings.IndexFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') })
		if i < 0 {
			return 0, false
		}
		num, unit = s[:i], s[i:]
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	per := time.Second
	switch {
	case strings.HasPrefix(unit, "h"):
		per = time.Hour
	case strings.HasPrefix(unit, "m"):
		per = time.Minute
	}
	return time.Duration(n * float64(per)), true
}

// parseMonth reads an English month name or its abbreviation.
func parseMonth(s string) (time.Month, bool) {
	s = strings.ToLower(s)
	for m := time.January; m <= time.December; m++ {
		if name := strings.ToLower(m.String()); name == s || name[:3] == s {
			return m, true
		}
	}
	return 0, false
}
