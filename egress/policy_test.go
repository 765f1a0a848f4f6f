package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	valid := []string{
		"api.anthropic.com", "API.Anthropic.COM.", "api.openai.com:443", "*.githubusercontent.com",
		"*.Example.com:8443", "127.0.0.1:43567", "10.0.0.1", "::1", "[::1]", "[::1]:8080",
		"fe80::1%eth0", "_dmarc.example.com", "localhost",
	}
	for _, e := range valid {
		require.NoError(t, Policy{Allow: []string{e}}.Validate(), e)
	}
	tests := []struct {
		entry, want string
	}{
		{"", "empty"},
		{"exa mple.com", "white space"},
		{"https://api.example.com", "is a URL"},
		{"api.example.com/v1", "contains a slash"},
		{"10.0.0.0/8", "address ranges are not supported"},
		{"api.example.com:0", `port "0" is not a number from 1 to 65535`},
		{"api.example.com:65536", `port "65536"`},
		{"api.example.com:https", `port "https"`},
		{"api.example.com:", `port ""`},
		{"api.example.com:443:1", "neither host, host:port nor an IP address"},
		{"a.*.example.com", "wildcard is only allowed as a leading"},
		{"*", "wildcard is only allowed as a leading"},
		{"*.", "wildcard is only allowed as a leading"},
		{"[api.example.com]", "in brackets is not an IPv6 address"},
		{"a..example.com", "empty label"},
		{"ex!ample.com", "has the character '!'"},
		{"1.2.3", "its last label is a number"},
		{"256.1.1.1:80", "its last label is a number"},
		{strings.Repeat("a", 64) + ".com", "longer than 63"},
	}
	for _, tt := range tests {
		t.Run(tt.entry, func(t *testing.T) {
			err := Policy{Allow: []string{"ok.example.com", tt.entry}}.Validate()
			require.ErrorContains(t, err, `allow entry "`+tt.entry+`": `)
			require.ErrorContains(t, err, tt.want)
			require.NotContains(t, err.Error(), "ok.example.com")
		})
	}
	err := Policy{Allow: []string{"bad/1", "ok.example.com", "x.example.com:0"}}.Validate()
	require.ErrorContains(t, err, `allow entry "bad/1"`)
	require.ErrorContains(t, err, `allow entry "x.example.com:0"`)
	require.NotContains(t, err.Error(), "ok.example.com")
}

func TestNonPublic(t *testing.T) {
	tests := []struct {
		ip, want string
	}{
		{"1.1.1.1", ""},
		{"8.8.8.8", ""},
		{"172.32.0.1", ""},  // just above 172.16.0.0/12
		{"100.128.0.1", ""}, // just above the CGNAT range
		{"2606:4700::1111", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"10.0.0.1", "private"},
		{"172.16.5.4", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "CGNAT"},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"169.254.169.254", "link-local"},
		{"192.0.0.8", "reserved"},
		{"192.0.2.1", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"203.0.113.9", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "reserved"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"fd00::1", "private"},
		{"fc00::1", "private"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"fec0::1", "reserved"}, // site-local, deprecated
		{"ff02::1", "multicast"},
		{"ff0e::1", "multicast"},
		{"::a00:1", "reserved"}, // IPv4-compatible, deprecated
		{"100::1", "reserved"},  // discard-only
		{"2001:db8::1", "documentation"},
		{"2001::1", "reserved"}, // Teredo
		{"2002:a00:1::1", "6to4"},
		{"3fff::1", "documentation"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:169.254.169.254", "link-local"},
		{"64:ff9b::a00:1", "private"}, // NAT64 of 10.0.0.1
		{"64:ff9b::7f00:1", "loopback"},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			require.Equal(t, tt.want, nonPublic(netip.MustParseAddr(tt.ip)))
		})
	}
	require.Equal(t, "invalid", nonPublic(netip.Addr{}))
}

func TestGateCheck(t *testing.T) {
	const listed = "listed"
	const pass = "pass"
	internet := func(allow ...string) Policy { return Policy{Internet: true, Allow: allow} }
	only := func(allow ...string) Policy { return Policy{Allow: allow} }
	tests := []struct {
		name   string
		policy Policy
		dest   string
		want   string // listed, pass, or the reason of the refusal
	}{
		{"exact", only("api.example.com"), "api.example.com:443", listed},
		{"exact any port", only("api.example.com"), "api.example.com:8080", listed},
		{"case and trailing dot", only("API.example.com."), "api.EXAMPLE.com.:443", listed},
		{"other name", only("api.example.com"), "other.example.com:443", notAllowed},
		{"subdomain of exact", only("example.com"), "api.example.com:443", notAllowed},
		{"port", only("api.example.com:443"), "api.example.com:443", listed},
		{"other port", only("api.example.com:443"), "api.example.com:80", notAllowed},
		{"wildcard", only("*.example.com"), "a.b.example.com:1", listed},
		{"wildcard case", only("*.Example.COM"), "API.example.com:443", listed},
		{"wildcard not itself", only("*.example.com"), "example.com:443", notAllowed},
		{"wildcard not suffix of label", only("*.example.com"), "badexample.com:443", notAllowed},
		{"wildcard port", only("*.example.com:443"), "a.example.com:80", notAllowed},
		{"ip", only("10.1.2.3"), "10.1.2.3:22", listed},
		{"ip port", only("127.0.0.1:43567"), "127.0.0.1:43567", listed},
		{"ip mapped", only("127.0.0.1"), "[::ffff:127.0.0.1]:80", listed},
		{"ip6", only("::1"), "[::1]:80", listed},
		{"ip6 bracketed", only("[fd00::5]:443"), "[fd00::5]:443", listed},
		{"ip is not a name", only("127.0.0.1"), "localhost:80", notAllowed},
		{"name is not an ip", only("localhost"), "127.0.0.1:80", notAllowed},
		{"public without internet", only(), "8.8.8.8:443", notAllowed},
		{"allow wins over address", internet("127.0.0.1:43567"), "127.0.0.1:43567", listed},
		{"allow by port only", internet("127.0.0.1:43567"), "127.0.0.1:43568", "loopback address 127.0.0.1"},
		{"public v4", internet(), "8.8.8.8:443", pass},
		{"public v6", internet(), "[2606:4700::1111]:443", pass},
		{"public nat64", internet(), "[64:ff9b::808:808]:443", pass},
		{"private 10", internet(), "10.0.0.1:443", "private address 10.0.0.1"},
		{"private 172", internet(), "172.16.5.4:443", "private address 172.16.5.4"},
		{"private 192", internet(), "192.168.1.1:80", "private address 192.168.1.1"},
		{"loopback", internet(), "127.0.0.1:80", "loopback address 127.0.0.1"},
		{"metadata", internet(), "169.254.169.254:80", "link-local address 169.254.169.254"},
		{"cgnat", internet(), "100.64.0.1:80", "CGNAT address 100.64.0.1"},
		{"unspecified", internet(), "0.0.0.0:80", "unspecified address 0.0.0.0"},
		{"loopback v6", internet(), "[::1]:80", "loopback address ::1"},
		{"link-local v6", internet(), "[fe80::1%25eth0]:80", "link-local address fe80::1"},
		{"ula", internet(), "[fd12:3456::1]:80", "private address fd12:3456::1"},
		{"mapped", internet(), "[::ffff:10.0.0.1]:80", "private address 10.0.0.1"},
		{"nat64 private", internet(), "[64:ff9b::a00:1]:80", "private address 64:ff9b::a00:1"},
		{"localhost resolves to loopback", internet(), "localhost:80", "loopback address "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := tt.policy.rules()
			require.NoError(t, err)
			d, err := parseDest(tt.dest)
			require.NoError(t, err)
			g := gate{internet: tt.policy.Internet, rules: rules}
			got, err := g.check(context.Background(), d)
			switch tt.want {
			case listed, pass:
				require.NoError(t, err)
				require.Equal(t, tt.want == listed, got)
			default:
				var r *refusal
				require.ErrorAs(t, err, &r)
				require.Equal(t, d.String(), r.dest)
				require.True(t, strings.HasPrefix(r.reason, tt.want), "reason %q, want %q", r.reason, tt.want)
			}
		})
	}
}

func TestParseDest(t *testing.T) {
	for _, bad := range []string{"example.com", "example.com:0", ":443", "exa mple.com:443", "127.1:80", "[::1]"} {
		_, err := parseDest(bad)
		require.Error(t, err, bad)
	}
	d, err := parseDest("API.Example.com.:443")
	require.NoError(t, err)
	require.Equal(t, "api.example.com:443", d.String())
	d, err = parseDest("[::ffff:127.0.0.1]:80")
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:80", d.String())
}

// TestCheckAddress tests the dialer's check of the address actually
// connected, which stands against a name resolving to a public address
// for the policy check and to a private one for the connection.
func TestCheckAddress(t *testing.T) {
	d, err := parseDest("rebind.example.com:443")
	require.NoError(t, err)
	control := checkAddress(d)
	tests := []struct {
		address, want string
	}{
		{"93.184.215.14:443", ""},
		{"[2606:4700::1111]:443", ""},
		{"10.0.0.1:443", "private address 10.0.0.1"},
		{"127.0.0.1:443", "loopback address 127.0.0.1"},
		{"169.254.169.254:443", "link-local address 169.254.169.254"},
		{"[::1]:443", "loopback address ::1"},
		{"[::ffff:192.168.0.1]:443", "private address 192.168.0.1"},
		{"[fe80::1%eth0]:443", "link-local address fe80::1"},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			err := control(context.Background(), "tcp", tt.address, nil)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			var r *refusal
			require.ErrorAs(t, err, &r)
			require.Equal(t, "refused rebind.example.com:443: "+tt.want, r.Error())
		})
	}
	require.Error(t, control(context.Background(), "tcp", "not an address", nil))

	// In a real dialer, on a name the dialer resolves itself: the
	// connection is refused before it is made.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	dialer := net.Dialer{ControlContext: control}
	for _, addr := range []string{ln.Addr().String(), net.JoinHostPort("localhost", port)} {
		_, err = dialer.DialContext(context.Background(), "tcp", addr)
		var r *refusal
		require.True(t, errors.As(err, &r), "dial %s: %v", addr, err)
		require.Contains(t, r.reason, "loopback address")
	}
}
