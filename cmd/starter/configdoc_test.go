package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/config"
)

// updateDocs makes TestConfigurationTable write the table it checks.
var updateDocs = flag.Bool("update", false, "write docs/configuration.md's table of settings")

// configDoc is the document that holds the table of settings.
const configDoc = "../../docs/configuration.md"

// configHeader opens the table of settings in configDoc.
const configHeader = "| key (`ralph.yaml`) | flag | commands | environment | default |"

// workerGroups are the groups of settings whose flags cmd/worker takes
// beside the connection's (its own test holds the table to its flags).
const workerGroups = config.WorkerFlags | config.GitHubFlags

// TestConfigurationTable: the table of settings in docs/configuration.md
// is generated from the settings (config.Keys: key, flag, variable, the
// † of a trusted one, its Doc) and the commands whose flags they are; a
// table that differs fails here, and -update writes it.
func TestConfigurationTable(t *testing.T) {
	data, err := os.ReadFile(configDoc)
	require.NoError(t, err)
	doc := string(data)
	start := strings.Index(doc, configHeader)
	require.GreaterOrEqual(t, start, 0, "%s has no table of settings", configDoc)
	end := start
	for end < len(doc) && strings.HasPrefix(doc[end:], "|") {
		next := strings.IndexByte(doc[end:], '\n')
		require.GreaterOrEqual(t, next, 0)
		end += next + 1
	}
	want := configTable(t)
	if doc[start:end] == want {
		return
	}
	if *updateDocs {
		require.NoError(t, os.WriteFile(configDoc, []byte(doc[:start]+want+doc[end:]), 0o644))
		return
	}
	t.Fatalf("%s's table of settings is not what the settings say: run go test ./cmd/starter/ -run TestConfigurationTable -update, then read the diff", configDoc)
}

// configTable is the table of settings: a row per setting in the order
// of config.Keys, naming the commands that take its flag.
func configTable(t *testing.T) string {
	t.Helper()
	cmds := leaves(newRootCmd(&commandContext{Context: context.Background(), stdout: io.Discard, stderr: io.Discard}))
	var order []string // the commands as `starter --help` lists them
	for _, s := range commands() {
		order = append(order, strings.Fields(s.use)[0])
	}
	var b strings.Builder
	b.WriteString(configHeader + "\n|---|---|---|---|---|\n")
	for _, k := range config.Keys() {
		var takes []string
		if k.Group&workerGroups != 0 {
			takes = append(takes, "worker")
		}
		for _, name := range order {
			// A flag of the same name that is not the setting (set-limits'
			// --max-iterations) has no topic.
			if c, ok := cmds[name]; ok && c.Flags().Lookup(k.Flag) != nil && c.Flags().Lookup(k.Flag).Annotations[config.TopicAnnotation] != nil {
				takes = append(takes, name)
			}
		}
		require.NotEmpty(t, takes, "no command takes --%s (%s)", k.Flag, k.Key)
		commands := strings.Join(takes, ", ")
		if k.Group == config.ConnectionFlags {
			commands = "every command"
		}
		key, flag := fmt.Sprintf("`%s`", k.Key), fmt.Sprintf("`--%s`", k.Flag)
		if k.Trusted {
			key += " †"
		}
		if k.Repeat {
			flag += " (repeat)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | `%s` | %s |\n", key, flag, commands, k.Env, k.Doc)
	}
	return b.String()
}
