package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// notAllowed is the reason given for a destination refused because it is
// not on the allow list (the configuration key that holds the list).
const notAllowed = "not on agent.network-allow"

// Policy says which destinations pass.
type Policy struct {
	// Internet lets through any host whose every address is public: not
	// loopback, private (RFC 1918, unique local fc00::/7), link-local
	// (169.254.0.0/16, fe80::/10), CGNAT (100.64.0.0/10), unspecified,
	// multicast, documentation, benchmarking or otherwise reserved, nor
	// the IPv4-mapped or NAT64 form of one of these.
	Internet bool
	// Allow are destinations that pass whatever their address: "host",
	// "host:port", "*.suffix" (any subdomain of suffix, not suffix itself)
	// or an IP address ("10.0.0.1", "::1", "[::1]"), each optionally with
	// ":port". Names compare case-insensitively, a trailing dot ignored;
	// an IP entry matches only destinations given as that IP address.
	Allow []string
}

// Validate reports every entry of p.Allow that is not a destination, each
// named with what is wrong with it.
func (p Policy) Validate() error {
	_, err := p.rules()
	return err
}

// rule is one entry of the allow list, parsed.
type rule struct {
	// name is the host name, in lower case without a trailing dot; for a
	// wildcard it is the suffix with its leading dot (".example.com").
	name     string
	wildcard bool
	// ip is the address of an IP entry, unmapped and without a zone.
	ip netip.Addr
	// port is the one port the entry lets through, 0 for any.
	port uint16
}

// rules parses the allow list.
func (p Policy) rules() ([]rule, error) {
	rules := make([]rule, 0, len(p.Allow))
	var errs []error
	for _, e := range p.Allow {
		r, err := parseRule(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("allow entry %q: %w", e, err))
			continue
		}
		rules = append(rules, r)
	}
	return rules, errors.Join(errs...)
}

// parseRule parses one entry of the allow list.
func parseRule(e string) (rule, error) {
	switch {
	case e == "":
		return rule{}, errors.New("empty")
	case strings.ContainsAny(e, " \t\r\n"):
		return rule{}, errors.New("contains white space")
	case strings.Contains(e, "://"):
		return rule{}, errors.New("is a URL: write host or host:port")
	case strings.Contains(e, "/"):
		return rule{}, errors.New("contains a slash: write host or host:port (address ranges are not supported)")
	}
	if ip, err := netip.ParseAddr(e); err == nil { // IPv6 without brackets
		return rule{ip: ip.WithZone("").Unmap()}, nil
	}
	host, port, hasPort := e, "", false
	bracketed := strings.HasPrefix(e, "[")
	if bracketed && strings.HasSuffix(e, "]") {
		host = e[1 : len(e)-1]
	} else if strings.Contains(e, ":") {
		h, p, err := net.SplitHostPort(e)
		if err != nil {
			return rule{}, errors.New("is neither host, host:port nor an IP address")
		}
		host, port, hasPort = h, p, true
	}
	var r rule
	if hasPort {
		n, err := parsePort(port)
		if err != nil {
			return rule{}, err
		}
		r.port = n
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		r.ip = ip.WithZone("").Unmap()
		return r, nil
	}
	if bracketed {
		return rule{}, fmt.Errorf("%q in brackets is not an IPv6 address", host)
	}
	name := canonical(host)
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		r.wildcard, name = true, rest
	}
	if err := checkName(name); err != nil {
		return rule{}, err
	}
	r.name = name
	if r.wildcard {
		r.name = "." + name
	}
	return r, nil
}

// parsePort parses a TCP port, 1 to 65535.
func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return uint16(n), nil
}

// canonical is host as names are compared: lower case, no trailing dot.
func canonical(host string) string {
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// checkName reports what makes a canonical name not a host name.
func checkName(name string) error {
	if strings.Contains(name, "*") {
		return errors.New(`a wildcard is only allowed as a leading "*."`)
	}
	if name == "" || len(name) > 253 {
		return errors.New("host name is empty or longer than 253 characters")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("host name %q has an empty label or one longer than 63 characters", name)
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("host name %q has the character %q", name, c)
			}
		}
	}
	if _, err := strconv.ParseUint(labels[len(labels)-1], 10, 64); err == nil {
		return fmt.Errorf("%q is neither an IP address nor a host name (its last label is a number)", name)
	}
	return nil
}

// dest is a destination as the agent asked for it.
type dest struct {
	// name is the canonical host name, "" for an IP address.
	name string
	// ip is the address of a destination given as an IP address,
	// unmapped and without a zone.
	ip   netip.Addr
	port uint16
}

// parseDest parses host:port as a destination.
func parseDest(hostport string) (dest, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return dest{}, fmt.Errorf("destination %q is not host:port", hostport)
	}
	var d dest
	if d.port, err = parsePort(port); err != nil {
		return dest{}, fmt.Errorf("destination %q: %w", hostport, err)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		d.ip = ip.WithZone("").Unmap()
		return d, nil
	}
	d.name = canonical(host)
	if err := checkName(d.name); err != nil {
		return dest{}, fmt.Errorf("destination %q: %w", hostport, err)
	}
	return d, nil
}

// String is d as host:port, the form refusals are recorded in.
func (d dest) String() string {
	host := d.name
	if d.ip.IsValid() {
		host = d.ip.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(int(d.port)))
}

// matches reports whether r lets d through.
func (r rule) matches(d dest) bool {
	switch {
	case r.port != 0 && r.port != d.port:
		return false
	case r.ip.IsValid():
		return r.ip == d.ip
	case d.ip.IsValid():
		return false
	case r.wildcard:
		return strings.HasSuffix(d.name, r.name)
	default:
		return d.name == r.name
	}
}
