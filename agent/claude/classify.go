package claude

import (
	"cmp"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/durable-ralph/ralph/agent"
	"github.com/durable-ralph/ralph/contract"
	"github.com/durable-ralph/ralph/internal/words"
)

// stderrLines is how many of the last stderr lines Classify reads.
const stderrLines = 20

// Classify decides the agent.Outcome of a finished run from the Summary of its
// output, the error its process exited with (nil, an *exec.ExitError, or
// the error of starting or reading it), the tail of its stderr, and now,
// which resolves reset times such as "resets 7pm (Europe/London)".
//
// A run succeeds when it printed a result with subtype "success", without
// is_error, and exited with status 0. A run that failed is
//   - agent.OutcomeRateLimited when Claude Code reported a rejected rate limit, a
//     usage limit ("You've hit your limit · resets 7pm (Europe/London)"),
//     an API 429, or an overloaded API; ResetsAt is set when the agent said
//     when the limit lifts;
//   - agent.OutcomePermanent when retrying cannot help: failed authentication,
//     no credit, an account or organization without access, a command line
//     the agent rejected, a missing agent binary;
//   - agent.OutcomeAgentError otherwise.
//
// Only texts that Claude Code itself wrote are read: the result text of a
// result with is_error set, the API error messages Claude Code makes up,
// and stderr. What the model wrote, and tool inputs and outputs, are never
// read, so that a diff mentioning a rate limit is not one. Timeouts are the
// caller's to decide.
func Classify(s Summary, exitErr error, stderrTail string, now time.Time) agent.Verdict {
	if agent.NotStarted(exitErr) {
		return verdict(contract.OutcomePermanent, "agent could not be started: "+exitErr.Error())
	}
	if s.HasResult && !s.IsError && s.ResultSubtype == "success" && exitErr == nil {
		// Claude Code 1.x ended a usage-limited run with a plain result
		// such as "Claude AI usage limit reached|1751234400".
		if isUsageLimit(s.ResultText) {
			return rateLimited(s.ResultText, nil, now)
		}
		return agent.Verdict{Outcome: contract.OutcomeSuccess}
	}

	texts := errorTexts(s, stderrTail)
	if rl := s.RateLimit; rl != nil && rl.Status == "rejected" {
		return rateLimited(firstMatch(texts, isUsageLimit), rl, now)
	}
	if t := firstMatch(texts, isUsageLimit); t != "" {
		return rateLimited(t, nil, now)
	}
	if t := firstMatch(texts, isPermanent); t != "" {
		return verdict(contract.OutcomePermanent, "agent cannot run: "+t)
	}
	if s.APIError == "billing_error" || s.APIError == "oauth_org_not_allowed" || s.APIError == "account_on_hold" ||
		s.APIError == "authentication_failed" && !strings.Contains(strings.ToLower(s.APIErrorText), "temporary") {
		return verdict(contract.OutcomePermanent, fmt.Sprintf("agent cannot run (%s): %s", s.APIError, agent.OrNone(s.APIErrorText)))
	}
	if s.APIError == "rate_limit" || s.APIErrorStatus == 429 || s.APIErrorStatus == 529 {
		return rateLimited(agent.OrNone(cmp.Or(s.APIErrorText, s.ResultText)), nil, now)
	}
	if t := firstMatch(texts, isThrottled); t != "" {
		return rateLimited(t, nil, now)
	}
	return verdict(contract.OutcomeAgentError, agentErrorReason(s, exitErr, stderrTail))
}

// ParseResetsAt finds when a limit resets in a text Claude Code printed.
// It understands an epoch after a bar ("Claude AI usage limit reached|
// 1751234400") and wall times after "resets": "resets 7pm (Europe/London)"
// and "resets 7:30pm" are the next such time, in that zone or else in
// now's, after now (a time less than a minute past counts as now, since
// Claude Code drops the seconds); "resets Aug 8, 7pm (UTC)" and "resets
// Jan 2, 2027, 7am (UTC)" name the day.
func ParseResetsAt(text string, now time.Time) (time.Time, bool) {
	if m := epochRE.FindStringSubmatch(text); m != nil {
		sec, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil {
			return time.Unix(sec, 0).UTC(), true
		}
	}
	m := resetsRE.FindStringSubmatch(text)
	if m == nil {
		return time.Time{}, false
	}
	monthName, dayStr, yearStr, hourStr, minStr, ampm, zone := m[1], m[2], m[3], m[4], m[5], m[6], m[7]

	hour, _ := strconv.Atoi(hourStr)
	minute := 0
	if minStr != "" {
		minute, _ = strconv.Atoi(minStr)
	}
	if hour < 1 || hour > 12 || minute > 59 {
		return time.Time{}, false
	}
	hour %= 12
	if strings.EqualFold(ampm, "p") {
		hour += 12
	}

	loc := now.Location()
	if zone != "" {
		if l, err := time.LoadLocation(strings.TrimSpace(zone)); err == nil {
			loc = l
		}
	}
	local := now.In(loc)

	if monthName == "" {
		t := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
		if !local.Before(t.Add(time.Minute)) {
			t = time.Date(local.Year(), local.Month(), local.Day()+1, hour, minute, 0, 0, loc)
		}
		return t, true
	}

	month, ok := months[strings.ToLower(monthName[:3])]
	day, _ := strconv.Atoi(dayStr)
	if !ok || day < 1 || day > 31 {
		return time.Time{}, false
	}
	year := local.Year()
	if yearStr != "" {
		year, _ = strconv.Atoi(yearStr)
	}
	t := time.Date(year, month, day, hour, minute, 0, 0, loc)
	if yearStr == "" && t.Before(local.AddDate(0, 0, -1)) {
		t = t.AddDate(1, 0, 0)
	}
	return t, true
}

var (
	epochRE  = regexp.MustCompile(`(?i)limit reached\|(\d{9,11})\b`)
	resetsRE = regexp.MustCompile(`(?i)\bresets\s+(?:at\s+|on\s+)?` +
		`(?:([a-z]{3,9})\.?\s+(\d{1,2}),?\s+(?:(\d{4}),?\s+)?(?:at\s+)?)?` +
		`(\d{1,2})(?::(\d{2}))?\s*([ap])\.?m\b\.?` +
		`(?:\s*\(([^)]{1,64})\))?`)
	months = map[string]time.Month{
		"jan": time.January, "feb": time.February, "mar": time.March, "apr": time.April,
		"may": time.May, "jun": time.June, "jul": time.July, "aug": time.August,
		"sep": time.September, "oct": time.October, "nov": time.November, "dec": time.December,
	}
)

// usageLimitPrefixes start the texts with which Claude Code reports that a
// subscription's usage limit was hit; they are from Claude Code 2.1's own
// list, plus the 1.x text.
var usageLimitPrefixes = []string{
	"You've hit your",
	"You've reached your",
	"You're out of usage credits",
	"You're out of extra usage",
	"Your org is out of usage",
	"Claude AI usage limit reached",
}

// oldLimitRE matches the limit texts of Claude Code 2.0, such as "5-hour
// limit reached ∙ resets 3pm" and "Opus weekly limit reached ∙ resets Oct
// 9, 3pm".
var oldLimitRE = regexp.MustCompile(`(?i)^(?:[\w-]+ ){0,3}limit reached\b.{0,8}\bresets\b`)

// isUsageLimit reports whether text, a message Claude Code printed, says
// that a usage limit was hit. Only the start of the text counts.
func isUsageLimit(text string) bool {
	text = trimErrorPrefix(text)
	for _, p := range usageLimitPrefixes {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return oldLimitRE.MatchString(text)
}

// permanentPhrases, in lower case, mark errors that retrying does not fix.
var permanentPhrases = []string{
	// authentication
	"not logged in",
	"please run /login",
	"invalid api key",
	"invalid x-api-key",
	"authentication_error",
	"authentication required",
	"invalid auth token",
	"oauth token revoked",
	"oauth token has expired",
	"login expired",
	"login reached its time limit",
	"failed to authenticate",
	"api error: 401",
	"401 unauthorized",
	// billing and access
	"credit balance is too low",
	"disabled organization",
	"organization has been disabled",
	"disabled api key authentication",
	"api key authentication is disabled",
	"disabled claude subscription access",
	"your seat type doesn't include",
	"usage allocation has been disabled",
	"usage limit is set to $0",
	"this service is disabled for your org",
	"requires usage credits",
	// the command line and the prompt
	"cannot be used with root/sudo privileges",
	"error: unknown option",
	"error: option '",
	"error: too many arguments",
	"requires --verbose",
	"invalid session id",
	"input must be provided either through stdin or as a prompt argument",
	"input contained only whitespace",
}

// isPermanent reports whether text, an error Claude Code printed, is one
// that retrying cannot fix.
func isPermanent(text string) bool {
	lower := strings.ToLower(text)
	return !strings.Contains(lower, "temporary") && containsAny(lower, permanentPhrases)
}

// throttlePhrases, in lower case, mark API errors that waiting fixes.
var throttlePhrases = []string{
	"rate_limit_error",
	"request rejected (429)",
	"api error: 429",
	"temporarily limiting requests",
	"experiencing high load",
	"overloaded",
	"api error: 529",
}

// isThrottled reports whether text, an error Claude Code printed, says the
// API throttled or shed the request.
func isThrottled(text string) bool {
	return containsAny(strings.ToLower(text), throttlePhrases)
}

// containsAny reports whether s contains one of phrases.
func containsAny(s string, phrases []string) bool {
	for _, p := range phrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// errorTexts lists the texts Claude Code wrote about how the run failed,
// most authoritative first: the result's text when it is an error, the
// last API error message, and the last lines of stderr.
func errorTexts(s Summary, stderrTail string) []string {
	var texts []string
	if s.HasResult && s.IsError && s.ResultText != "" {
		texts = append(texts, s.ResultText)
	}
	if s.APIErrorText != "" {
		texts = append(texts, s.APIErrorText)
	}
	lines := strings.Split(stderrTail, "\n")
	if len(lines) > stderrLines {
		lines = lines[len(lines)-stderrLines:]
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			texts = append(texts, l)
		}
	}
	return texts
}

func firstMatch(texts []string, match func(string) bool) string {
	for _, t := range texts {
		if match(t) {
			return t
		}
	}
	return ""
}

// trimErrorPrefix drops the "Error: " or "API Error: " Claude Code may put
// before a message.
func trimErrorPrefix(text string) string {
	text = strings.TrimSpace(text)
	for _, p := range []string{"API Error: ", "Error: "} {
		text = strings.TrimPrefix(text, p)
	}
	return text
}

// rateLimited is the verdict for a rate limit reported by text, rl or
// both.
func rateLimited(text string, rl *RateLimit, now time.Time) agent.Verdict {
	v := agent.Verdict{Outcome: contract.OutcomeRateLimited}
	if rl != nil {
		v.ResetsAt = rl.ResetsAt
	}
	if v.ResetsAt.IsZero() && text != "" {
		if t, ok := ParseResetsAt(text, now); ok {
			v.ResetsAt = t
		}
	}
	var b strings.Builder
	b.WriteString("rate limited")
	if rl != nil && rl.Type != "" {
		fmt.Fprintf(&b, " (%s)", rl.Type)
	}
	if text != "" {
		b.WriteString(": ")
		b.WriteString(text)
	}
	if !v.ResetsAt.IsZero() {
		fmt.Fprintf(&b, "; resets at %s", v.ResetsAt.UTC().Format(time.RFC3339))
	}
	v.Reason = reasonLine(b.String())
	return v
}

// agentErrorReason says why a run that failed for none of the known
// reasons failed.
func agentErrorReason(s Summary, exitErr error, stderrTail string) string {
	exit := agent.ExitPhrase(exitErr)
	var r string
	switch {
	case s.HasResult && s.IsError:
		if s.ResultSubtype == "success" || s.ResultSubtype == "" {
			r = "agent reported an error: " + agent.OrNone(cmp.Or(s.ResultText, s.APIErrorText))
		} else {
			r = fmt.Sprintf("agent ended with %s: %s", s.ResultSubtype, agent.OrNone(s.ResultText))
		}
	case s.HasResult && exitErr != nil:
		r = fmt.Sprintf("agent %s after a successful result", exit)
	case s.HasResult:
		r = fmt.Sprintf("agent ended with result subtype %q", s.ResultSubtype)
	case s.Events == 0 && s.InvalidLines > 0:
		r = fmt.Sprintf("agent printed %d %s that %s not stream-json and no result", s.InvalidLines,
			words.Plural(s.InvalidLines, "line", "lines"), words.Plural(s.InvalidLines, "is", "are"))
		if exitErr != nil {
			r += " and " + exit
		}
		r += fmt.Sprintf("; first: %q", clipMiddle(s.FirstInvalidLine, 80))
	case s.Events == 0 && s.OversizedLines == 0:
		r = "agent printed nothing"
		if exitErr != nil {
			r = fmt.Sprintf("agent %s without printing anything", exit)
		}
	default:
		if exitErr != nil {
			r = fmt.Sprintf("agent %s without a result event", exit)
		} else {
			r = "agent exited without a result event"
		}
		if s.InvalidLines > 0 {
			r += fmt.Sprintf(" (%d %s not stream-json)", s.InvalidLines, words.Plural(s.InvalidLines, "line was", "lines were"))
		}
		if s.OversizedLines > 0 {
			r += fmt.Sprintf(" (%d %s too long to read)", s.OversizedLines, words.Plural(s.OversizedLines, "line was", "lines were"))
		}
	}
	if !s.HasResult || s.ResultText == "" {
		if last := agent.LastLine(stderrTail); last != "" {
			r += fmt.Sprintf("; stderr: %q", clipMiddle(last, 160))
		}
	}
	return reasonLine(r)
}

func verdict(o contract.Outcome, reason string) agent.Verdict {
	return agent.Verdict{Outcome: o, Reason: reasonLine(reason)}
}

// reasonLine folds white space, line ends included, and bounds the length
// to agent.MaxReasonLen, keeping the beginning and the end (clipMiddle).
func reasonLine(s string) string {
	return clipMiddle(words.OneLine(s), agent.MaxReasonLen)
}
