package gemini

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/internal/words"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
)

// Exit statuses of Gemini CLI 0.61 (packages/core/src/utils/errors.ts and
// exitCodes.ts) that say the run cannot go on as configured. Others are
// 0, 1 (any other error), 53 (turn limit), 54 (a fatal tool error, such
// as no space left) and 130 (cancelled). An API error that ends a run
// exits with its HTTP status instead, modulo 256: 400 is 144, 429 is
// 173, 500 is 244, 503 is 247.
const (
	exitAuth            = 41  // FatalAuthenticationError: no or bad credentials configured
	exitInput           = 42  // FatalInputError: bad flags, no prompt, no session to resume
	exitSandbox         = 44  // FatalSandboxError
	exitConfig          = 52  // FatalConfigError: unreadable settings.json
	exitTurnLimit       = 53  // FatalTurnLimitedError: model.maxSessionTurns reached
	exitUntrusted       = 55  // FatalUntrustedWorkspaceError
	exitHTTPStatusFirst = 144 // 400 % 256
)

// Verdict classifies the finished run. It succeeds when the CLI printed a
// result with status "success" and exited with status 0: a CLI stopped by
// SIGTERM also exits with 0, but prints no result. A run that failed is
//   - agent.OutcomeRateLimited when the API refused a request for a quota
//     or rate limit (429 RESOURCE_EXHAUSTED) or was overloaded (503);
//     ResetsAt is set when the CLI passed on when to retry ("Please retry
//     in 30s", "Suggested retry after 30s", a RetryInfo retryDelay), or to
//     the next midnight in Pacific time for a daily quota;
//   - agent.OutcomePermanent when retrying cannot help: no or invalid
//     credentials (exit status 41, API 401 and 403, an invalid API key),
//     a command line or settings the CLI rejected (42, 44, 52), an
//     untrusted folder (55), an unknown model (404), a quota of 0;
//   - agent.OutcomeAgentError otherwise, such as an API error 500 the CLI
//     gave up retrying, the turn limit (53), or a resume of a session the
//     CLI does not have (see ResumeFailed).
//
// Only texts that the CLI itself wrote are read: the messages of its
// error events and of its result, and stderr; never the model's text or
// a tool's output.
func (p *Parser) Verdict(exitErr error, stderrTail string, now time.Time) agent.Verdict {
	if agent.NotStarted(exitErr) {
		return agent.NewVerdict(contract.OutcomePermanent, "agent could not be started: "+exitErr.Error())
	}
	if exitErr == nil && p.result == "success" {
		return agent.Verdict{Outcome: contract.OutcomeSuccess}
	}
	code := agent.ExitCode(exitErr)
	stderr := stderrMessages(stderrTail)
	// texts are what the CLI said of the failure, latest first: the error
	// of its result, which ends the run; else its error events and stderr.
	var texts []string
	if p.resultError != "" {
		texts = []string{p.resultError}
	} else {
		texts = append(p.Errors.NewestFirst(), stderr...)
	}
	// message is the CLI's last word on the failure.
	message := cmp.Or(p.resultError, p.Errors.Latest(), strings.Join(stderr[max(len(stderr)-3, 0):], " "))
	status := apiStatus(code, texts)

	if code == exitInput && resumeFailedRE.MatchString(stderrTail) {
		p.NoSession = true
		return agent.NewVerdict(contract.OutcomeAgentError, "agent could not resume its session: "+agent.FirstMatch(stderr, resumeFailedRE))
	}
	if t := agent.FirstMatch(texts, zeroQuotaRE); t != "" {
		return agent.NewVerdict(contract.OutcomePermanent, "agent cannot run: the API grants no quota for this model: "+t)
	}
	limited := agent.FirstMatch(texts, rateLimitRE, overloadedRE)
	if limited != "" || status == 429 || status == 503 {
		v := agent.NewVerdict(contract.OutcomeRateLimited, "agent was rate limited: "+agent.OrNone(cmp.Or(limited, message)))
		v.ResetsAt = resetsAt(strings.Join(texts, "\n"), now)
		if v.ResetsAt.IsZero() {
			// The API's own words, as the CLI logged them on stderr.
			v.ResetsAt = resetsAt(strings.Join(stderr, "\n"), now)
		}
		return v
	}
	switch code {
	case exitAuth, exitInput, exitSandbox, exitConfig, exitUntrusted:
		return agent.NewVerdict(contract.OutcomePermanent, fmt.Sprintf("agent cannot run (agent %s): %s", agent.ExitPhrase(exitErr), agent.OrNone(message)))
	}
	if t := agent.FirstMatch(texts, permanentRE); t != "" || status == 401 || status == 403 || status == 404 {
		return agent.NewVerdict(contract.OutcomePermanent, "agent cannot run: "+agent.OrNone(cmp.Or(t, message)))
	}
	if code == exitTurnLimit {
		return agent.NewVerdict(contract.OutcomeAgentError, "agent reached its turn limit: "+agent.OrNone(message))
	}
	reason := "agent " + agent.ExitPhrase(exitErr)
	switch {
	case exitErr == nil && p.result == "":
		reason = "agent exited with status 0 but printed no result (was it stopped?)"
	case exitErr == nil:
		reason = "agent ended with result status " + words.Cut(p.result, agent.MaxIDLen)
	}
	if message != "" {
		reason += ": " + message
	}
	return agent.NewVerdict(contract.OutcomeAgentError, reason)
}

// ResumeFailed reports that the run, started with --resume, ended
// because the CLI has no such session for the working directory ("Error
// resuming session: Invalid session identifier ..." or "No previous
// sessions found for this project.", exit status 42). The CLI says so on
// stderr only, so ResumeFailed knows it once Verdict has read stderr.
func (p *Parser) ResumeFailed() bool { return p.NoSession }

var (
	resumeFailedRE = regexp.MustCompile(`Error resuming session: .*`)
	// rateLimitRE matches what the CLI and the API say of a quota or rate
	// limit.
	rateLimitRE = regexp.MustCompile(`(?i)(?:\b(?:status|code)\W{0,3}429\b|\b429 Too Many|\b(?:resource[_ ]exhausted|resource has been exhausted|too many requests|rate[- ]?limit(?:ed)?|quota (?:exceeded|exhausted)|exceeded your current quota|exhausted your (?:daily )?quota|(?:Retryable|Terminal)QuotaError)\b)`)
	// overloadedRE matches an API too busy to answer: 503 UNAVAILABLE.
	overloadedRE = regexp.MustCompile(`(?i)\b(?:model is overloaded|overloaded|UNAVAILABLE|exhausted your capacity|MODEL_CAPACITY_EXHAUSTED)\b`)
	// zeroQuotaRE matches a quota of 0: the key's tier cannot use the
	// model at all.
	zeroQuotaRE = regexp.MustCompile(`(?i)\blimit:\s*0(?:[^\d.]|$)`)
	// permanentRE matches errors that retrying does not fix.
	permanentRE = regexp.MustCompile(`(?i)(?:API key not valid|API_KEY_INVALID|API key expired|API key was reported as leaked|` +
		`PERMISSION_DENIED|UNAUTHENTICATED|invalid authentication credentials|unregistered callers|` +
		`you must specify the GEMINI_API_KEY|Please set an Auth method|not running in a trusted directory|` +
		`is not found for API version|models/\S+ is not found|Model not found|ModelNotFoundError|billing (?:is )?(?:not enabled|disabled)|` +
		`User location is not supported|FAILED_PRECONDITION|` +
		// yargs, of a command line it rejects
		`Unknown arguments?:|Not enough arguments|Invalid values?:|are mutually exclusive)`)
	// retryRE finds when to retry: "Please retry in 38.8s", "Suggested
	// retry after 30s", "retryDelay": "30s".
	retryRE = regexp.MustCompile(`(?i)(?:retry in|retry after|retryDelay\\?"?\s*:\s*\\?")\s*([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)\b`)
	dailyRE = regexp.MustCompile(`(?i)\bdaily quota\b|PerDay`)
	// apiErrorRE finds the JSON error body the CLI quotes in "[API Error:
	// {...}]".
	apiErrorRE = regexp.MustCompile(`\{"error":\s*\{.*\}\s*\}`)
)

// resetsAt is when a limit that text reports lifts: the next midnight in
// Pacific time (when Google resets daily quotas) for a daily quota, else
// now plus the longest retry delay text names; zero if it does not say.
func resetsAt(text string, now time.Time) time.Time {
	if dailyRE.MatchString(text) {
		if pt, err := time.LoadLocation("America/Los_Angeles"); err == nil {
			local := now.In(pt)
			return time.Date(local.Year(), local.Month(), local.Day()+1, 0, 0, 0, 0, pt).UTC()
		}
		return time.Time{}
	}
	var longest time.Duration
	for _, m := range retryRE.FindAllStringSubmatch(text, -1) {
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour}[strings.ToLower(m[2])]
		if d := time.Duration(n * float64(unit)); d > longest {
			longest = d
		}
	}
	if longest == 0 {
		return time.Time{}
	}
	// Round up to the second: a retry a little late beats one too soon.
	return now.Add(longest).Truncate(time.Second).Add(time.Second)
}

// apiStatus is the HTTP status of the API error that ended the run: the
// code of the first error body the CLI quotes in texts, else the one its
// exit status stands for; 0 if neither says.
func apiStatus(code int, texts []string) int {
	for _, t := range texts {
		m := apiErrorRE.FindString(t)
		if m == "" {
			continue
		}
		var body struct {
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(m), &body) == nil && body.Error.Code >= 400 {
			return body.Error.Code
		}
	}
	if code >= exitHTTPStatusFirst && code <= 255 {
		return 256 + code
	}
	return 0
}

// stderrMessages are the lines of stderr that say something: not the
// frames of a stack trace, the dump of an object, or the CLI's notices
// at start.
func stderrMessages(tail string) []string {
	var out []string
	for l := range strings.Lines(tail) {
		l = strings.TrimSpace(stripANSI(l))
		switch {
		case l == "", strings.HasPrefix(l, "at "), len(l) <= 2, isNotice(l):
			continue
		}
		out = append(out, words.Cut(l, agent.MaxReasonLen))
	}
	return out
}

// notices are the starts of lines the CLI prints on stderr on every run.
var notices = []string{
	"YOLO mode is enabled",
	"Warning: 256-color support",
	"Ripgrep is not available",
	"[STARTUP]",
	"Approval mode overridden",
	"Loaded cached credentials",
}

func isNotice(l string) bool {
	for _, n := range notices {
		if strings.HasPrefix(l, n) {
			return true
		}
	}
	return false
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

func stripANSI(s string) string { return ansiRE.ReplaceAllString(s, "") }
