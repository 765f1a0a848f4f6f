package version

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{Version: "v0.3.0", Commit: "0123456789ab", Server: "v1.32.1", SDK: "v1.50.0", GoRuntime: "go1.26.8"},
			"v0.3.0 (0123456789ab), Temporal server v1.32.1, Temporal Go SDK v1.50.0, go1.26.8"},
		{Info{Version: "(devel)", Server: "unknown", SDK: "unknown", GoRuntime: "go1.26.8"},
			"(devel) (unknown commit), Temporal server unknown, Temporal Go SDK unknown, go1.26.8"},
	} {
		require.Equal(t, tc.want, tc.info.String())
	}
	require.True(t, strings.HasPrefix(Read().GoRuntime, "go1."))
}
