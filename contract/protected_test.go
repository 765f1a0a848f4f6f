package contract

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProtectedPaths checks that a history without the field keeps the
// default and that an explicit empty list survives the round trip.
func TestProtectedPaths(t *testing.T) {
	tests := []struct {
		name string
		in   GitSettings
		json string // decoded instead of in when set
		want []string
	}{
		{name: "recorded before the field", json: `{"auto_commit":true,"allow_dirty":false}`, want: DefaultProtectedPaths},
		{name: "null", json: `{"protected_paths":null}`, want: DefaultProtectedPaths},
		{name: "explicit empty", in: GitSettings{ProtectedPaths: []string{}}, want: []string{}},
		{name: "own list", in: GitSettings{ProtectedPaths: []string{"deploy/**"}}, want: []string{"deploy/**"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.json)
			if tt.json == "" {
				var err error
				data, err = json.Marshal(tt.in)
				require.NoError(t, err)
			}
			var got GitSettings
			require.NoError(t, json.Unmarshal(data, &got))
			require.Equal(t, tt.want, got.Protected())
		})
	}
}
