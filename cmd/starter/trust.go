package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/durable-ralph/ralph/config"
)

// trustCommand is `starter trust`: it records that the user trusts the
// commands a workspace's ralph.yaml sets, lists the workspaces trusted,
// or revokes one.
type trustCommand struct {
	list, revoke bool
}

func (s *trustCommand) flags(f *pflag.FlagSet) {
	f.BoolVar(&s.list, "list", false, "list the trusted workspaces and the commands trusted in each")
	f.BoolVar(&s.revoke, "revoke", false, "stop trusting DIR: its ralph.yaml's commands are refused again")
}

func (s *trustCommand) run(cctx *commandContext, args []string) error {
	switch {
	case s.list && s.revoke:
		return errors.New("--list and --revoke do not go together: choose one")
	case s.list && len(args) > 0:
		return errors.New("--list takes no directory: it lists every trusted workspace")
	case s.list:
		return listTrusted(cctx.stdout)
	case s.revoke:
		return revokeTrust(cctx.stdout, orDot(args))
	}
	return trustWorkspace(cctx.stdout, orDot(args))
}

// trustWorkspace trusts the commands the ralph.yaml of dir sets, saying
// which.
func trustWorkspace(out io.Writer, dir string) error {
	w, err := config.TrustWorkspace(dir, time.Now())
	if err != nil {
		return err
	}
	if len(w.Settings) == 0 {
		fmt.Fprintf(out, "%s/ralph.yaml sets no command: it needs no trust, and nothing was recorded\n", w.Dir)
		return nil
	}
	file, err := config.TrustFile()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Trusted %s: sessions started there may run what its ralph.yaml sets:\n", w.Dir)
	writeSettings(out, w.Settings)
	fmt.Fprintf(out, "Recorded in %s. When ralph.yaml changes these values, starter asks again.\n", file)
	return nil
}

// listTrusted prints the trusted workspaces.
func listTrusted(out io.Writer) error {
	file, err := config.TrustFile()
	if err != nil {
		return err
	}
	entries, err := config.TrustedWorkspaces()
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		fmt.Fprintf(out, "No trusted workspaces (%s)\n", file)
		return nil
	}
	for i, w := range entries {
		if i > 0 {
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "%s (trusted %s)\n", w.Dir, w.TrustedAt.Local().Format(time.DateTime))
		writeSettings(out, w.Settings)
	}
	return nil
}

// revokeTrust stops trusting dir.
func revokeTrust(out io.Writer, dir string) error {
	w, found, err := config.RevokeWorkspace(dir)
	if err != nil {
		return err
	}
	if !found {
		fmt.Fprintf(out, "%s was not trusted: nothing to revoke (starter trust --list shows the trusted workspaces)\n", dir)
		return nil
	}
	fmt.Fprintf(out, "No longer trusted: %s; its ralph.yaml's commands are refused until you trust it again\n", w.Dir)
	return nil
}

// writeSettings prints settings, a line each, their values aligned.
func writeSettings(out io.Writer, settings []config.RunSetting) {
	width := 0
	for _, s := range settings {
		width = max(width, len(s.Key))
	}
	for _, s := range settings {
		fmt.Fprintf(out, "    %-*s  %s\n", width, s.Key, s.Value)
	}
}
