package geminiapi

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// TestAPIKey is the API key a test gives the CLI; the server takes any.
const TestAPIKey = "test-gemini-api-key"

// CLIEnv makes home the HOME of Gemini CLI runs against s and returns
// what to add to their environment: HOME, TMPDIR (where the CLI leaves
// its error reports) under home, the API key and GOOGLE_GEMINI_BASE_URL.
//
// It writes home/.gemini/settings.json: API-key auth, which the CLI must
// be told when GOOGLE_GEMINI_BASE_URL is set (else it picks "gateway"
// auth and exits 41, "Invalid auth method selected."); one attempt per
// request, as the CLI otherwise retries a 429 or a 5xx up to 10 times
// over some 4 minutes; and no usage statistics, which the CLI would
// otherwise send to play.googleapis.com. settings are merged over that,
// top-level key by top-level key (say {"model": {"maxSessionTurns": 2}}).
func (s *Server) CLIEnv(home string, settings map[string]any) ([]string, error) {
	base := map[string]any{
		"security": map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"general":  map[string]any{"maxAttempts": 1},
		"privacy":  map[string]any{"usageStatisticsEnabled": false},
	}
	for k, v := range settings {
		base[k] = v
	}
	data, err := json.MarshalIndent(base, "", "  ")
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(home, "tmp")
	for _, dir := range []string{filepath.Join(home, ".gemini"), tmp} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), data, 0o644); err != nil {
		return nil, err
	}
	return []string{
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"GEMINI_API_KEY=" + TestAPIKey,
		"GOOGLE_GEMINI_BASE_URL=" + s.URL(),
	}, nil
}
