// Package apicount counts the requests a client sends to the API server, for tests and the
// benchmark that check the operator makes no writes in the steady state.
package apicount

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Counter counts requests by method and path.
type Counter struct {
	mu      sync.Mutex
	writes  map[string]int // "METHOD path" -> count
	reads   int
	latency map[string]*latency // "METHOD resource" -> latency of writes
}

type latency struct {
	n     int
	total time.Duration
	// bytes is the sum of the request bodies' lengths.
	bytes int64
}

// Wrap returns a copy of cfg whose requests are counted.
func (c *Counter) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			c.record(req)
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			c.observe(req, time.Since(start))
			return resp, err
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

func (c *Counter) observe(req *http.Request, d time.Duration) {
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latency == nil {
		c.latency = map[string]*latency{}
	}
	k := req.Method + " " + resource(req.URL.Path)
	l := c.latency[k]
	if l == nil {
		l = &latency{}
		c.latency[k] = l
	}
	l.n++
	l.total += d
	l.bytes += bodyLength(req)
}

// bodyLength is the length of a request's body: its ContentLength, which client-go's requests
// carry (their bodies are byte readers), else what GetBody yields; 0 without a body.
func bodyLength(req *http.Request) int64 {
	if req.ContentLength > 0 {
		return req.ContentLength
	}
	if req.GetBody == nil {
		return 0
	}
	body, err := req.GetBody()
	if err != nil {
		return 0
	}
	defer body.Close()
	n, _ := io.Copy(io.Discard, body)
	return n
}

// WriteStat is what was sent to one resource by one method.
type WriteStat struct {
	// Requests is the number of requests; Bytes the sum of their bodies' lengths.
	Requests int
	Bytes    int64
}

// WriteStats are the writes since the last Reset by "METHOD resource" ("PATCH
// workloads/status", "PUT deployments"), the resource as WriteLatencies names it.
func (c *Counter) WriteStats() map[string]WriteStat {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]WriteStat, len(c.latency))
	for k, l := range c.latency {
		out[k] = WriteStat{Requests: l.n, Bytes: l.bytes}
	}
	return out
}

// resource reduces an API path to its resource (and subresource): the segment after
// "namespaces/<ns>", or the last collection segment.
func resource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] == "namespaces" {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	if len(parts) > 0 {
		return parts[len(parts)-1]
	}
	return path
}

// WriteLatencies lists the mean client-side latency of writes per method and resource.
func (c *Counter) WriteLatencies() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.latency))
	for k, l := range c.latency {
		out = append(out, fmt.Sprintf("%-40s n=%-6d mean=%.1fms", k, l.n, float64(l.total.Microseconds())/1000/float64(l.n)))
	}
	sort.Strings(out)
	return out
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
	c.writes, c.reads, c.latency = nil, 0, nil
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
