package app_test

import (
	"os"
	"testing"

	"github.com/durable-ralph/ralph/internal/testkit"
)

// TestMain runs the tests without the user's RALPH_* variables: they
// read the configuration, which would take them.
func TestMain(m *testing.M) {
	testkit.ClearRalphEnv()
	os.Exit(m.Run())
}
