// Package words shapes text for people: one line, bounded length, the
// right number. Workflows, activities, the agents' parsers, the CLI and
// the test servers all write such text; this is its one home.
package words

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Cut shortens s to at most n bytes, cutting between runes and ending in
// "…" when it cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + "…"
}

// OneLine is s on one line: its words joined by single spaces.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Clip is s on one line, cut to at most n bytes (Cut).
func Clip(s string, n int) string { return Cut(OneLine(s), n) }

// Plural is one when n is 1 and many otherwise.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n and what, in the plural (what with an s) unless n is 1:
// "1 file", "3 files".
func Count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Or is s, or def when s is empty: a name with its default.
func Or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Dollars is an amount of US dollars as Ralph prints a cost: "$0.0125",
// to a hundredth of a cent.
func Dollars(v float64) string { return fmt.Sprintf("$%.4f", v) }

// Distance is the Levenshtein distance of a and b: the fewest
// insertions, deletions and substitutions of runes that make one the
// other (what a misspelt name is from the name meant).
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
