package secretscan_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/durable-ralph/ralph/redact"
	"github.com/durable-ralph/ralph/secretscan"
)

// The credentials are put together at run time, so that this file holds
// none for a scanner (this one included) to find.
var (
	random36  = strings.Repeat("aB3x", 9)
	ghToken   = "gh" + "p_" + random36
	awsKey    = "AK" + "IAIOSFODNN7EXAMPLE" // AWS's documented example
	stsKey    = "AS" + "IA" + strings.Repeat("Z7", 8)
	anthropic = "sk-" + "ant-api03-" + random36
	openAI    = "sk-" + "proj-" + random36
	legacyAI  = "sk-" + strings.Repeat("Ab1", 16)
	slack     = "xo" + "xb-1234567890-abcdefghij"
	pem       = "-----BEGIN " + "RSA PRIVATE KEY-----"
)

func TestLine(t *testing.T) {
	s := secretscan.New(redact.New([]string{"DEPLOY_PASSWORD=hunter2-but-longer", "HOME=/home/dev"}, "MY_GH=custom-token-value"))
	tests := []struct {
		name, line, want string
	}{
		{"worker secret", `password: "hunter2-but-longer"`, "the value of DEPLOY_PASSWORD"},
		{"named secret", "auth = custom-token-value", "the value of MY_GH"},
		{"GitHub classic", "token: " + ghToken, "a GitHub token"},
		{"GitHub app", "gh" + "s_" + random36, "a GitHub token"},
		{"GitHub fine-grained", "github" + "_pat_11ABCDEFG0" + random36, "a GitHub token"},
		{"Anthropic", "ANTHROPIC_API_KEY=" + anthropic, "an Anthropic API key"},
		{"OpenAI project", `"` + openAI + `"`, "an OpenAI API key"},
		{"OpenAI legacy", legacyAI, "an OpenAI API key"},
		{"AWS documented example", "aws_access_key_id = " + awsKey, "an AWS access key ID"},
		{"AWS temporary", stsKey, "an AWS access key ID"},
		{"PEM", pem, "a private key"},
		{"OpenSSH", "-----BEGIN " + "OPENSSH PRIVATE KEY-----", "a private key"},
		{"encrypted PEM", "-----BEGIN " + "ENCRYPTED PRIVATE KEY-----", "a private key"},
		{"Slack", "SLACK=" + slack, "a Slack token"},

		{"ordinary code", "func main() { fmt.Println(\"hello\") }", ""},
		{"prefix alone", "tokens start with gh" + "p_ or github" + "_pat_", ""},
		{"short GitHub-like", "gh" + "p_short", ""},
		{"kebab case after sk-", "sk-" + "this-is-a-long-kebab-case-identifier-name", ""},
		{"word ending in sk", "task-" + strings.Repeat("Ab1", 12), ""},
		{"AWS-like in a longer word", "XAKIA" + strings.Repeat("Z", 16), ""},
		{"public key", "-----BEGIN " + "PUBLIC KEY-----", ""},
		{"certificate", "-----BEGIN " + "CERTIFICATE-----", ""},
		{"Slack-like without token", "xo" + "xb-", ""},
		{"not a secret variable", "/home/dev", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, s.Line(tt.line))
		})
	}
}

func TestLineWithoutSecrets(t *testing.T) {
	s := secretscan.New(nil)
	require.Equal(t, "a GitHub token", s.Line(ghToken))
	require.Empty(t, s.Line("nothing"))
}
