// Package apicount counts the requests a client sends to the API server, for tests and the
// benchmark that check the operator makes no writes in the steady state.
package apicount

import (
	"fmt"
	"net/http"
	"sort"
	"sync"

	"k8s.io/client-go/rest"
)

// Counter counts requests by method and path.
type Counter struct {
	mu     sync.Mutex
	writes map[string]int // "METHOD path" -> count
	reads  int
}

// Wrap returns a copy of cfg whose requests are counted.
func (c *Counter) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			c.record(req)
			return rt.RoundTrip(req)
		})
	})
	return out
}

func (c *Counter) record(req *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		c.reads++
	default:
		if c.writes == nil {
			c.writes = map[string]int{}
		}
		c.writes[req.Method+" "+req.URL.Path]++
	}
}

// Writes is the number of write requests (POST, PUT, PATCH, DELETE) since the last Reset.
func (c *Counter) Writes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.writes {
		n += v
	}
	return n
}

// Reads is the number of GET requests (including watches) since the last Reset.
func (c *Counter) Reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// WriteSummary lists the writes as "count METHOD path" lines, most frequent first.
func (c *Counter) WriteSummary() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.writes))
	for k := range c.writes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c.writes[keys[i]] != c.writes[keys[j]] {
			return c.writes[keys[i]] > c.writes[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%d %s", c.writes[k], k))
	}
	return out
}

// Reset sets the counts to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes, c.reads = nil, 0
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
