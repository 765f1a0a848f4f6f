package egress

import (
	"net/netip"
)

// special is a range of addresses that are not public, with the word the
// refusals use for it.
type special struct {
	prefix netip.Prefix
	class  string
}

// specials4 are the IPv4 ranges that are not public: IANA's
// special-purpose registry and the multicast and reserved blocks.
var specials4 = []special{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "CGNAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "reserved"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
}

// nat64 is the well-known NAT64 prefix (RFC 6052): its addresses reach
// the IPv4 address in their last 32 bits, which decides.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// global6 is where public IPv6 addresses are: global unicast. Everything
// outside it (unspecified, loopback, IPv4-compatible, discard-only,
// unique local fc00::/7, link-local fe80::/10, site-local, multicast) is
// not public; specials6 are the exceptions inside it.
var global6 = netip.MustParsePrefix("2000::/3")

// specials6 are the ranges inside global6 that are not public.
var specials6 = []special{
	{netip.MustParsePrefix("2001::/23"), "reserved"}, // IETF protocol assignments, Teredo included
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
}

// nonPublic returns what makes ip not public ("private", "loopback",
// "link-local", ...), or "" if it is a public address. IPv4-mapped and
// NAT64 addresses are judged by the IPv4 address they carry.
func nonPublic(ip netip.Addr) string {
	ip = ip.WithZone("").Unmap()
	if !ip.IsValid() {
		return "invalid"
	}
	if ip.Is4() {
		for _, s := range specials4 {
			if s.prefix.Contains(ip) {
				return s.class
			}
		}
		return ""
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		return nonPublic(netip.AddrFrom4([4]byte(b[12:])))
	}
	if !global6.Contains(ip) {
		return class6(ip)
	}
	for _, s := range specials6 {
		if s.prefix.Contains(ip) {
			return s.class
		}
	}
	return ""
}

// class6 names an IPv6 address outside global unicast.
func class6(ip netip.Addr) string {
	switch {
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast():
		return "multicast"
	default:
		return "reserved"
	}
}
