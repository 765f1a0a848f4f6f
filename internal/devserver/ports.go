package devserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowestPort is the lowest port FreePort hands out: below it lie the
// well-known ports of services one may run.
const lowestPort = 10000

// handedOut are the ports FreePort gave in this process, so that it never
// gives one twice, even before the first taker binds it.
var handedOut sync.Map // int → struct{}

// FreePort returns a TCP port on ip that is free now. It takes one below
// the kernel's ephemeral range (net.ipv4.ip_local_port_range), where the
// kernel never picks ports itself: a port found free there stays free
// until the server binds it, whatever connections and ":0" listeners
// other processes open in between. (A port the kernel picked, closed and
// gave back could be taken by the next outgoing connection of any
// process, and the embedded Temporal server exits when it cannot bind.)
// Where the range cannot be read or nothing below it is free, the kernel
// picks one.
func FreePort(ip string) (int, error) { return FreePortBelow(ip, 1<<16) }

// FreePortBelow is FreePort for a port below limit, such as 32768 for a
// table that keeps ports in a smallint.
func FreePortBelow(ip string, limit int) (int, error) {
	if low := min(ephemeralLow(), limit); low-lowestPort >= 1000 {
		for range 100 {
			p := lowestPort + rand.IntN(low-lowestPort)
			if _, taken := handedOut.LoadOrStore(p, struct{}{}); taken {
				continue
			}
			if checkPortFree(ip, p) == nil {
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	defer l.Close()
	p := l.Addr().(*net.TCPAddr).Port
	if p >= limit {
		return 0, fmt.Errorf("no free port below %d on %s", limit, ip)
	}
	handedOut.Store(p, struct{}{})
	return p, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// where it cannot be read.
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0
	}
	low, _ := strconv.Atoi(fields[0])
	return low
}

func checkPortFree(ip string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%s:%d is not free (is another server running?): %w", ip, port, err)
	}
	return l.Close()
}
