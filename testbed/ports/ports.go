// Package ports hands out free loopback TCP ports, never the same one twice in a process,
// so that clusters and add-ons created at the same time do not collide.
package ports

import (
	"fmt"
	"net"
	"os"
	"sync"
)

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Free returns n distinct ports that were free on 127.0.0.1 a moment ago and that this
// process has not handed out before.
func Free(n int) ([]int, error) {
	mu.Lock()
	defer mu.Unlock()
	var out []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("could not find %d free ports on 127.0.0.1", n)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
		}
		held = append(held, l)
		p := l.Addr().(*net.TCPAddr).Port
		if given[p] {
			continue
		}
		given[p] = true
		out = append(out, p)
	}
	return out, nil
}

// InUse reports whether something listens on 127.0.0.1:port.
func InUse(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return true
	}
	l.Close()
	return false
}

// Lasting returns a free port on 127.0.0.1 for a listener that must get the same port back
// after a restart, as a container's published port does on `docker start`: it is taken outside
// the kernel's ephemeral range, the first free one from base up. Free's ports are ephemeral
// ones, which outgoing connections and other programs' free-port picks take in the meantime
// (a k0s node stopped during a scenario could not start again: "bind: address already in
// use", 2026-12-07, with a CI run beside it).
func Lasting(base int) (int, error) {
	mu.Lock()
	defer mu.Unlock()
	low := ephemeralLow()
	for p := base; p < low && p < 65536; p++ {
		if given[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		l.Close()
		given[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 from %d up to the ephemeral range's start (%d): stop what listens there, or lower the base", base, low)
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default, 32768,
// when it cannot be read).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low, high int
	if _, err := fmt.Sscan(string(data), &low, &high); err != nil || low <= 0 {
		return 32768
	}
	return low
}
