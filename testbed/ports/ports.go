// Package ports hands out free loopback TCP ports, never the same one twice in a process,
// so that clusters and add-ons created at the same time do not collide.
package ports

import (
	"fmt"
	"net"
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
