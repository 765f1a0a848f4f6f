package fakechat

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// SlashCommand is what Slack sends an app's Request URL when a person
// types one of its slash commands: the form fields of that POST.
type SlashCommand struct {
	Command     string // "/run"
	Text        string // what follows the command
	TeamID      string // "" is SlackTeamID
	ChannelID   string
	ChannelName string // without "#"
	UserID      string
	UserName    string
	TriggerID   string // "" is made up, unique per command
}

// triggers numbers the made-up trigger IDs.
var triggers atomic.Int64

// SendSlashCommand POSTs cmd to url as Slack does: form encoded, with
// X-Slack-Request-Timestamp (at) and X-Slack-Signature, v0= the
// HMAC-SHA256 of "v0:<timestamp>:<body>" with the app's signing secret.
// It returns the response's status and body.
func SendSlashCommand(url, secret string, cmd SlashCommand, at time.Time) (int, string, error) {
	if cmd.TeamID == "" {
		cmd.TeamID = SlackTeamID
	}
	if cmd.TriggerID == "" {
		cmd.TriggerID = fmt.Sprintf("%d.%d.fake", at.Unix(), triggers.Add(1))
	}
	body := form(cmd).Encode()
	ts := strconv.FormatInt(at.Unix(), 10)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", SlackSignature(secret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// SlackSignature is the X-Slack-Signature of body sent at timestamp ts.
func SlackSignature(secret, ts, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:%s", ts, body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// form is cmd's form fields, as Slack names them.
func form(cmd SlashCommand) url.Values {
	return url.Values{
		"token":        {"deprecated-verification-token"},
		"team_id":      {cmd.TeamID},
		"team_domain":  {"fake"},
		"channel_id":   {cmd.ChannelID},
		"channel_name": {cmd.ChannelName},
		"user_id":      {cmd.UserID},
		"user_name":    {cmd.UserName},
		"command":      {cmd.Command},
		"text":         {cmd.Text},
		"response_url": {"https://hooks.slack.com/commands/" + cmd.TeamID + "/1/fake"},
		"trigger_id":   {cmd.TriggerID},
		"api_app_id":   {"AFAKEAPP"},
	}
}
