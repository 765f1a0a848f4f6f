package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/durable-ralph/ralph/activities/github"
	"github.com/durable-ralph/ralph/config"
)

// appKeySource names the GitHub App's private key where redacted text
// says which secret was there.
const appKeySource = "github.app-private-key-file"

// newApp is the GitHub App's installation of github.app-*, nil when
// none is configured. Its tokens for git come from the worker's
// github.api-url.
func newApp(cfg config.Config) (*github.App, error) {
	app, err := cfg.GitHub.App()
	if err != nil || app == nil {
		return nil, err
	}
	return github.NewApp(app.ID, app.InstallationID, app.Key, cfg.GitHub.APIURL, nil), nil
}

// appKeySecrets are the secrets of the GitHub App's private key: the key
// file's text, and each line of its body, so that a part of the key is
// redacted too. A key file that cannot be read adds nothing: NewGitHub
// reports it.
func appKeySecrets(cfg config.Config) []string {
	app, err := cfg.GitHub.App()
	if err != nil || app == nil {
		return nil
	}
	secrets := []string{appKeySource + "=" + app.PEM}
	for line := range strings.Lines(app.PEM) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "-----") {
			secrets = append(secrets, appKeySource+"="+line)
		}
	}
	return secrets
}

// GitHubNotice is what a worker says at its start about how it
// authenticates to GitHub when it is configured with a GitHub App: as
// the app's installation, and that a token configured too is not used.
// It is "" without an app.
func GitHubNotice(cfg config.Config) string {
	gc := cfg.GitHub
	if !gc.UsesApp() {
		return ""
	}
	notice := fmt.Sprintf("GitHub:          as the GitHub App %d's installation %d (github.app-*), with tokens it renews", gc.AppID, gc.AppInstallationID)
	from := ""
	if gc.TokenFile != "" {
		from = github.TokenFileSource
	} else if name, token := gc.Token(os.Getenv); token != "" {
		from = "$" + name
	}
	if from != "" {
		notice += fmt.Sprintf("; the token in %s is not used: the app wins", from)
	}
	return notice
}
