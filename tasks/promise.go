package tasks

import "strings"

// ClaimsCompletion reports whether the agent's final text claims that all
// the work is done with promise.
//
// The promise must stand alone on a line: a line that, once trimmed, is the
// promise, optionally wrapped in markdown emphasis or a code span ("**",
// "__", "*", "_" or "`"). A promise of the form <promise>X</promise> also
// matches with white space around X inside the tags. Lines inside fenced
// code blocks do not count, and neither does the promise in the middle of a
// sentence: agents often write "I will not output <promise>COMPLETE</promise>
// yet", and taking that as a claim would end the loop early. This is
// stricter than snarktank/ralph's plain substring check and close to
// ralph-orchestrator, which also wants the promise on a line of its own.
// An empty promise never matches.
func ClaimsCompletion(text, promise string) bool {
	promise = strings.TrimSpace(promise)
	if promise == "" {
		return false
	}
	inner, tagged := promiseTag(promise)
	var code fence
	for line := range strings.Lines(text) {
		if code.skip(line) {
			continue
		}
		l := strings.TrimSpace(line)
		for {
			if l == promise || tagged && isPromiseTag(l, inner) {
				return true
			}
			var ok bool
			if l, ok = unwrapEmphasis(l); !ok {
				break
			}
		}
	}
	return false
}

const (
	openTag  = "<promise>"
	closeTag = "</promise>"
)

// promiseTag returns the text inside a promise of the form
// <promise>X</promise>.
func promiseTag(promise string) (inner string, ok bool) {
	rest, ok := strings.CutPrefix(promise, openTag)
	if !ok {
		return "", false
	}
	inner, ok = strings.CutSuffix(rest, closeTag)
	if !ok {
		return "", false
	}
	return strings.TrimSpace(inner), true
}

// isPromiseTag reports whether line is <promise>inner</promise>, allowing
// white space around inner.
func isPromiseTag(line, inner string) bool {
	got, ok := promiseTag(line)
	return ok && got == inner
}

// emphasis lists the markdown wrappers unwrapEmphasis removes, longest
// first so that "**x**" loses both stars at once.
var emphasis = []string{"**", "__", "`", "*", "_"}

// unwrapEmphasis removes one level of markdown emphasis or code span around
// s, reporting whether there was one.
func unwrapEmphasis(s string) (string, bool) {
	for _, m := range emphasis {
		if len(s) > 2*len(m) && strings.HasPrefix(s, m) && strings.HasSuffix(s, m) {
			return strings.TrimSpace(s[len(m) : len(s)-len(m)]), true
		}
	}
	return s, false
}
