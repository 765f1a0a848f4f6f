package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// dialTimeout bounds the resolution of one destination and the
// connection to it.
const dialTimeout = 10 * time.Second

// refusal is the error of a destination the policy refuses.
type refusal struct {
	// dest is the destination as host:port.
	dest string
	// reason is why: notAllowed, or the address at fault ("private
	// address 10.0.0.1").
	reason string
}

func (r *refusal) Error() string {
	return "refused " + r.dest + ": " + r.reason
}

// addressRefusal is the refusal of d for ip, which is not public for
// class.
func addressRefusal(d dest, ip netip.Addr, class string) *refusal {
	return &refusal{dest: d.String(), reason: class + " address " + ip.WithZone("").Unmap().String()}
}

// gate applies a Policy.
type gate struct {
	internet bool
	rules    []rule
}

// listed reports whether the allow list lets d through.
func (g *gate) listed(d dest) bool {
	for _, r := range g.rules {
		if r.matches(d) {
			return true
		}
	}
	return false
}

// check decides on d before any connection: listed says the allow list
// lets it through (whatever its address); otherwise err is a *refusal
// unless the policy lets in the Internet and every address of d is
// public, or an error of the resolution.
func (g *gate) check(ctx context.Context, d dest) (listed bool, err error) {
	if g.listed(d) {
		return true, nil
	}
	if !g.internet {
		return false, &refusal{dest: d.String(), reason: notAllowed}
	}
	addrs := []netip.Addr{d.ip}
	if !d.ip.IsValid() {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", d.name)
		if err != nil {
			return false, fmt.Errorf("resolve %s: %w", d.name, err)
		}
	}
	for _, ip := range addrs {
		if class := nonPublic(ip); class != "" {
			return false, addressRefusal(d, ip, class)
		}
	}
	return false, nil
}

// dial connects to d if the policy lets it through. A destination let
// through for its public addresses is dialed with checkAddress as the
// dialer's control, on the address actually connected: the name is
// resolved again by the dialer, and may resolve differently.
func (g *gate) dial(ctx context.Context, d dest) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	listed, err := g.check(ctx, d)
	if err != nil {
		return nil, err
	}
	var dialer net.Dialer
	if !listed {
		dialer.ControlContext = checkAddress(d)
	}
	return dialer.DialContext(ctx, "tcp", d.String()) // its errors name the address
}

// checkAddress is the dialer control for d: it refuses a connection to an
// address that is not public, before the connection is made.
func checkAddress(d dest) func(ctx context.Context, network, address string, c syscall.RawConn) error {
	return func(_ context.Context, _, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("address %q of %s: %w", address, d, err)
		}
		if class := nonPublic(ap.Addr()); class != "" {
			return addressRefusal(d, ap.Addr(), class)
		}
		return nil
	}
}
