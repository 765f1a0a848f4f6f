package testkit

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// ConfigRow is a row of the configuration table of docs/configuration.md:
// a key, its flag and the commands that take the flag.
type ConfigRow struct {
	Key, Flag string
	// Commands are the commands the row names; nil for "every command".
	Commands []string
	// Every says the row names every command that talks to Temporal.
	Every bool
}

// configHeader is the header of the configuration table.
const configHeader = "| key (`ralph.yaml`) | flag | commands | environment | default |"

// configCell is the `…` of a cell: a key or a flag.
var configCell = regexp.MustCompile("`([^`]+)`")

// ConfigTable reads the configuration table of the Markdown file at path
// (docs/configuration.md).
func ConfigTable(path string) ([]ConfigRow, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	start := -1
	for i, l := range lines {
		if l == configHeader {
			start = i
		}
	}
	if start < 0 {
		return nil, errors.New(path + ": no configuration table (" + configHeader + ")")
	}
	var rows []ConfigRow
	for i := start + 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		cols := strings.Split(strings.Trim(lines[i], "|"), " | ")
		if len(cols) < 4 {
			return nil, fmt.Errorf("%s:%d: %d columns", path, i+1, len(cols))
		}
		key, flag := configCell.FindStringSubmatch(cols[0]), configCell.FindStringSubmatch(cols[1])
		if key == nil || flag == nil {
			return nil, fmt.Errorf("%s:%d: no key or flag", path, i+1)
		}
		row := ConfigRow{Key: key[1], Flag: strings.TrimPrefix(flag[1], "--")}
		if cmds := strings.TrimSpace(cols[2]); cmds == "every command" {
			row.Every = true
		} else {
			row.Commands = strings.Split(cmds, ", ")
		}
		rows = append(rows, row)
	}
	return rows, nil
}
