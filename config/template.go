package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Template is a commented ralph.yaml for a workspace: every key a
// workspace may set, under its section, with what it does and, commented
// out, its default. Uncommenting a line sets that key to its default.
func Template() string {
	var b strings.Builder
	b.WriteString("# ralph.yaml: how Durable Ralph runs sessions on this repository.\n")
	b.WriteString("# Every key is optional. The values commented out are the defaults: uncomment\n")
	b.WriteString("# a line and change it to use another. Flags (`starter run --help`) and RALPH_*\n")
	b.WriteString("# variables override this file. Settings of the machine (where Temporal runs,\n")
	b.WriteString("# encryption keys, the agent's extra environment) belong in the user config\n")
	b.WriteString("# file or the worker's flags, not here. The commands this file sets\n")
	b.WriteString("# (agent.command, agent.args, task.check-command, roles.*.command) run only\n")
	b.WriteString("# once you trust them with `starter trust DIR`; a changed one is asked again.\n")
	section := ""
	for i := range specs {
		s := &specs[i]
		if s.trusted || s.key == "workspace" {
			continue
		}
		sec, name, nested := strings.Cut(s.key, ".")
		if !nested {
			sec, name = "", s.key
		}
		if sec != section {
			section = sec
			fmt.Fprintf(&b, "\n%s:\n", sec)
		}
		indent := ""
		if sec != "" {
			indent = "  "
		}
		for _, line := range wrap(s.usage, 76-len(indent)) {
			fmt.Fprintf(&b, "%s# %s\n", indent, line)
		}
		fmt.Fprintf(&b, "%s# %s: %s\n", indent, name, yamlValue(s.def))
	}
	return b.String()
}

// yamlValue spells a default as YAML.
func yamlValue(v any) string {
	switch v := v.(type) {
	case time.Duration:
		return shortDuration(v)
	case []string:
		if len(v) == 0 {
			return "[]"
		}
	case string:
		if v == "" {
			return `""`
		}
	}
	data, err := json.Marshal(v) // JSON scalars and lists are YAML
	if err != nil {
		panic(fmt.Sprintf("config: default %v: %v", v, err))
	}
	return string(data)
}

// wrap breaks text into lines of at most width bytes, between words.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
