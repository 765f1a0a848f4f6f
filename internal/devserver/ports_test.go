package devserver

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFreePortIsOutsideTheEphemeralRange checks that the ports handed out
// lie where the kernel picks none for connections and ":0" listeners,
// are free, and are never handed out twice.
func TestFreePortIsOutsideTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low == 0 {
		t.Skip("no /proc/sys/net/ipv4/ip_local_port_range here")
	}
	seen := map[int]bool{}
	for range 50 {
		p, err := FreePort("127.0.0.1")
		require.NoError(t, err)
		require.GreaterOrEqual(t, p, lowestPort)
		require.Less(t, p, low, "below the ephemeral range %d-", low)
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		require.NoError(t, err, "the port is free")
		require.NoError(t, l.Close())
	}
}
