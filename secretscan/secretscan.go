// Package secretscan finds secrets in text that is about to leave the
// worker, such as the lines a push would publish: the worker's own secret
// values, which redact knows, and the shapes of well-known credentials
// (GitHub, Anthropic, OpenAI and Slack tokens, AWS access key IDs, PEM
// private keys). What it reports says what and where, never the value.
//
// Documented example keys (AKIAIOSFODNN7EXAMPLE) have the real shape and
// are found too: telling an example from a key is guesswork, and a
// fixture is easily written without one.
package secretscan

import (
	"regexp"

	"github.com/durable-ralph/ralph/redact"
)

// shape is a well-known kind of credential.
type shape struct {
	what string
	re   *regexp.Regexp
	// random, when set, asks the match to look random too: upper and
	// lower case letters and digits, as a generated key has and a long
	// kebab-case name has not.
	random bool
}

// shapes are the well-known credentials, most specific first.
var shapes = []shape{
	{what: "a GitHub token", re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}`)},
	{what: "a GitHub token", re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{30,}`)},
	{what: "an Anthropic API key", re: regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{20,}`)},
	{what: "an OpenAI API key", re: regexp.MustCompile(`\bsk-proj-[A-Za-z0-9_-]{20,}`)},
	{what: "an OpenAI API key", re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{32,}`), random: true},
	{what: "an AWS access key ID", re: regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)},
	{what: "a private key", re: regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----`)},
	{what: "a Slack token", re: regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)},
}

// Scanner finds secrets in lines of text.
type Scanner struct {
	secrets *redact.Redactor
}

// New returns a Scanner for the secret values secrets knows (nil: the
// shapes only).
func New(secrets *redact.Redactor) *Scanner {
	return &Scanner{secrets: secrets}
}

// Line says what secret line holds, such as "the value of GITHUB_TOKEN"
// or "an AWS access key ID"; "" when none.
func (s *Scanner) Line(line string) string {
	if name, ok := s.secrets.Find(line); ok {
		return "the value of " + name
	}
	for _, sh := range shapes {
		for _, m := range sh.re.FindAllString(line, -1) {
			if !sh.random || mixed(m) {
				return sh.what
			}
		}
	}
	return ""
}

// mixed reports whether s has upper and lower case letters and digits.
func mixed(s string) bool {
	var upper, lower, digit bool
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		}
	}
	return upper && lower && digit
}
