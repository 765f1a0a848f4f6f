package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/internal/words"
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
		if words.Distance(typed, name) <= most || len(typed) > 2 && strings.HasPrefix(name, typed) {
			names = append(names, "--"+f.Name)
		}
	})
	return names
}
