package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/config"
)

// ownFlags is the heading of a command's own flags in help: those that
// are not settings of package config (--follow, -o, …).
const ownFlags = "Flags"

// topicHeadings are the headings of the settings' topics in help, where
// the topic alone would mislead: the worker's settings apply only when
// the command is the worker itself.
var topicHeadings = map[string]string{
	config.TopicWorker:        "Worker (only when this command is the worker)",
	config.TopicNotifications: "Notifications (only when this command is the worker)",
}

// usage prints the usage of cmd as cobra's default does, but with the
// flags grouped by topic (config.TopicAnnotation) under headings, the
// command's own first, and every line cut to the width of the terminal
// (termWidth, 100 columns when it is not one).
func usage(cmd *cobra.Command) error {
	out := cmd.OutOrStderr()
	width := termWidth(out)
	fmt.Fprint(out, "Usage:")
	if cmd.Runnable() {
		fmt.Fprintf(out, "\n  %s", cmd.UseLine())
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(out, "\n  %s [command]", cmd.CommandPath())
		fmt.Fprint(out, "\n\nAvailable Commands:")
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				pad := cmd.NamePadding() + 2
				fmt.Fprintf(out, "\n%s", wrapHanging("  "+padRight(sub.Name(), pad), sub.Short, pad+2, width))
			}
		}
	}
	if cmd.HasAvailableLocalFlags() {
		groups := flagGroups(cmd.LocalFlags())
		for _, heading := range append([]string{ownFlags}, config.Topics()...) {
			if fs := groups[heading]; fs != nil {
				if h, ok := topicHeadings[heading]; ok {
					heading = h
				}
				fmt.Fprintf(out, "\n\n%s:\n", heading)
				printFlags(out, fs, width)
			}
		}
	}
	if cmd.HasAvailableInheritedFlags() {
		fmt.Fprint(out, "\n\nGlobal Flags:\n")
		printFlags(out, cmd.InheritedFlags(), width)
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(out, "\n\nUse \"%s [command] --help\" for more information about a command.", cmd.CommandPath())
	}
	fmt.Fprintln(out)
	return nil
}

// flagGroups splits the visible flags of fs by topic: ownFlags for those
// without one.
func flagGroups(fs *pflag.FlagSet) map[string]*pflag.FlagSet {
	groups := map[string]*pflag.FlagSet{}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		topic := ownFlags
		if t := f.Annotations[config.TopicAnnotation]; len(t) > 0 {
			topic = t[0]
		}
		if groups[topic] == nil {
			groups[topic] = pflag.NewFlagSet(topic, pflag.ContinueOnError)
			groups[topic].SortFlags = fs.SortFlags
		}
		groups[topic].AddFlag(f)
	})
	return groups
}

// printFlags prints the flags of fs as pflag does (name, value type,
// usage, default), each usage wrapped to width beside the names; a name
// too long for the column has its usage on the lines below.
func printFlags(out io.Writer, fs *pflag.FlagSet, width int) {
	type line struct{ name, usage string }
	var lines []line
	col := 0
	fs.VisitAll(func(f *pflag.Flag) {
		name := "      --" + f.Name
		if f.Shorthand != "" {
			name = "  -" + f.Shorthand + ", --" + f.Name
		}
		varname, text := pflag.UnquoteUsage(f)
		if varname != "" {
			name += " " + varname
		}
		if d := defaultText(f); d != "" {
			text += " (default " + d + ")"
		}
		lines = append(lines, line{name, text})
		if n := utf8.RuneCountInString(name); n <= 36 {
			col = max(col, n)
		}
	})
	col += 3
	for i, l := range lines {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if utf8.RuneCountInString(l.name) >= col {
			fmt.Fprintf(out, "%s\n%s", l.name, wrapHanging(strings.Repeat(" ", col), l.usage, col, width))
			continue
		}
		fmt.Fprint(out, wrapHanging(padRight(l.name, col), l.usage, col, width))
	}
}

// defaultText is how help shows the default of f, as pflag does: quoted
// for a string; "" when the default is its type's zero value.
func defaultText(f *pflag.Flag) string {
	switch f.DefValue {
	case "", "0", "0s", "false", "[]", "<nil>":
		return ""
	}
	if f.Value.Type() == "string" {
		return fmt.Sprintf("%q", f.DefValue)
	}
	return f.DefValue
}

// wrapHanging is prefix, then the words of text wrapped to width
// columns, the lines after the first indented by indent; a word longer
// than a line is cut.
func wrapHanging(prefix, text string, indent, width int) string {
	if width-indent < 20 {
		indent = min(8, indent) // a narrow terminal: room beats alignment
	}
	var b strings.Builder
	b.WriteString(prefix)
	col := utf8.RuneCountInString(prefix)
	for i, w := range strings.Fields(text) {
		n := utf8.RuneCountInString(w)
		if i > 0 {
			if col+1+n > width {
				b.WriteString("\n" + strings.Repeat(" ", indent))
				col = indent
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		for col+n > width && width > col {
			r := []rune(w)
			cut := width - col
			b.WriteString(string(r[:cut]) + "\n" + strings.Repeat(" ", indent))
			w, n, col = string(r[cut:]), n-cut, indent
		}
		b.WriteString(w)
		col += n
	}
	return b.String()
}

// padRight pads s with spaces to n columns.
func padRight(s string, n int) string {
	if d := n - utf8.RuneCountInString(s); d > 0 {
		return s + strings.Repeat(" ", d)
	}
	return s
}
