// Package egress is the worker-side HTTP proxy that is an agent's only way
// out of its sandbox. The agent runs under bubblewrap in a network
// namespace of its own; the proxy's Unix socket is bound into the sandbox
// and bridged there to 127.0.0.1:<port> by socat, and the agent gets
// HTTPS_PROXY and HTTP_PROXY pointing at that port.
//
// The proxy serves CONNECT tunnels (HTTPS and anything else over TCP) and
// absolute-form plain HTTP requests. Every destination passes a Policy: the
// allow list by name first, then, under Policy.Internet, a check that
// every address the name resolves to is public. The address check is
// repeated in the dialer, on the very address being connected (the
// net.Dialer's ControlContext), so a name that resolves to a public
// address for the check and to a private one for the connection (DNS
// rebinding) is still refused.
//
// It is written on the standard library alone on purpose: no proxy
// library checks the resolved address in its dialer, and that check is
// the point of the package.
package egress
