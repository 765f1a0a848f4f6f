package app

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoopback(t *testing.T) {
	tests := []struct {
		hostPort string
		want     bool
	}{
		{"127.0.0.1:7233", true},
		{"127.0.0.2:7233", true},
		{"localhost:7233", true},
		{"[::1]:7233", true},
		{"10.0.0.5:7233", false},
		{"temporal.internal:7233", false},
		{"my-ns.a1b2c.tmprl.cloud:7233", false},
		{"127.0.0.1", false}, // no port: not an address Dial accepts either
	}
	for _, tt := range tests {
		t.Run(tt.hostPort, func(t *testing.T) {
			require.Equal(t, tt.want, loopback(tt.hostPort))
		})
	}
}
