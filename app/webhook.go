package app

import (
	"fmt"
	"log/slog"
	"os"

	"go.temporal.io/sdk/client"

	"github.com/durable-ralph/ralph/config"
	"github.com/durable-ralph/ralph/webhook"
)

// WebhookSecret is the webhooks' secret: the value of the variable
// github.webhook-secret-env names, which must not be empty.
func WebhookSecret(cfg config.Config) ([]byte, error) {
	env := cfg.GitHub.WebhookSecretEnv
	secret := os.Getenv(env)
	if secret == "" {
		return nil, fmt.Errorf("github.webhook-listen is set but the environment variable %s (github.webhook-secret-env) is empty: "+
			"set it to the secret of the repository's webhook, or unset github.webhook-listen", env)
	}
	return []byte(secret), nil
}

// ServeWebhook serves GitHub's webhooks on cfg's github.webhook-listen
// until stop is called: each delivery signed with secret (WebhookSecret)
// wakes the workflows of worker.host-id it concerns, through c.
// Deliveries that had an effect are recorded in the state directory
// (dev.state-dir). It returns the address it listens on.
func ServeWebhook(c client.Client, cfg config.Config, secret []byte, log *slog.Logger) (stop func(), addr string, err error) {
	h, err := webhook.New(c, cfg.Worker.HostID, secret, cfg.Dev.StateDir, log)
	if err != nil {
		return nil, "", err
	}
	stop, addr, err = webhook.Serve(cfg.GitHub.WebhookListen, h)
	if err != nil {
		_ = h.Close()
		return nil, "", fmt.Errorf("github.webhook-listen: %w", err)
	}
	return stop, addr, nil
}
