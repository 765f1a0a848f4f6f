package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagSuggestions are the flags of cmd that the unknown flag --typed may
// be a misspelling of, "--name" each, as cobra finds the commands a
// misspelt command may mean: at most cmd's SuggestionsMinimumDistance
// edits away (2 by default), or starting with what was typed.
func flagSuggestions(cmd *cobra.Command, typed string) []string {
	if typed == "" {
		return nil
	}
	most := cmd.SuggestionsMinimumDistance
	if most <= 0 {
		most = 2
	}
	typed = strings.ToLower(typed)
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		name := strings.ToLower(f.Name)
		if f.Hidden || f.Deprecated != "" {
			return
		}
		if editDistance(typed, name) <= most || len(typed) > 2 && strings.HasPrefix(name, typed) {
			names = append(names, "--"+f.Name)
		}
	})
	return names
}

// editDistance is the Levenshtein distance of a and b: the fewest
// insertions, deletions and substitutions of runes that make one the
// other.
func editDistance(a, b string) int {
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
