package fleettest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Recording and replay of an API server's answers, for the benchmark of polykube-status against
// many clusters: one real kube-apiserver holds one cluster's objects, a Recorder in front of it
// keeps every answer the readers under test got, and any number of Replay servers answer the
// same requests from that recording, each with its own cluster's variant of the bodies. The
// answers are the API server's own (its list envelopes, metadata, managed fields, paging
// tokens, discovery documents), not JSON written by hand; only what a Variant changes differs.
//
// httptest and httputil do the serving and proxying; what is ours is the keying (method, path,
// query and Accept, since the API server answers one path in several representations) and
// answering with gzip the way kube-apiserver does (level 1, above 128 KiB, when asked).

// Answer is one recorded response, its body uncompressed.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// Recording maps a request key (RequestKey) to the answer the API server gave.
type Recording struct {
	mu      sync.Mutex
	answers map[string]Answer
}

// RequestKey identifies a request by what selects its answer: method, path, raw query and Accept.
func RequestKey(r *http.Request) string {
	return r.Method + " " + r.URL.Path + "?" + r.URL.RawQuery + " " + r.Header.Get("Accept")
}

// Keys returns the recorded request keys, sorted.
func (rec *Recording) Keys() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make([]string, 0, len(rec.answers))
	for k := range rec.answers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Answer returns the recorded answer to key.
func (rec *Recording) Answer(key string) (Answer, bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	a, ok := rec.answers[key]
	return a, ok
}

// Recorder is a TLS reverse proxy to an API server that records every answer.
type Recorder struct {
	Server    *httptest.Server
	Recording *Recording
}

// NewRecorder proxies to the API server of cfg with cfg's credentials. Clients of the recorder
// need none: it is a loopback test server. Close it with Recorder.Server.Close.
func NewRecorder(cfg *rest.Config) (*Recorder, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("parse API server address %q: %w", cfg.Host, err)
	}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("transport for %s: %w", cfg.Host, err)
	}
	rec := &Recorder{Recording: &Recording{answers: map[string]Answer{}}}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = rt
	proxy.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		rec.Recording.mu.Lock()
		rec.Recording.answers[RequestKey(resp.Request)] = Answer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: body}
		rec.Recording.mu.Unlock()
		return nil
	}
	director := proxy.Director
	proxy.Director = func(r *http.Request) {
		director(r)
		// Recorded uncompressed, so that a Variant can read the bodies; Replay compresses
		// them again as the API server would.
		r.Header.Del("Accept-Encoding")
		r.Header.Del("Authorization")
	}
	rec.Server = httptest.NewTLSServer(proxy)
	return rec, nil
}

// Variant rewrites a recorded body for one replayed cluster; it returns the body unchanged when
// the request is not one it rewrites.
type Variant func(key string, a Answer) ([]byte, error)

// gzipThreshold and gzipLevel are what kube-apiserver compresses with when the client accepts
// gzip (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters).
const (
	gzipThreshold = 128 * 1024
	gzipLevel     = gzip.BestSpeed
)

type prepared struct {
	Answer
	gzipped []byte
}

// Replay is a TLS server answering from a recording; requests it has no answer for get a 404
// and are counted in Misses.
type Replay struct {
	Server  *httptest.Server
	answers map[string]prepared
	// Misses counts requests that were not in the recording.
	Misses   atomic.Int64
	missedMu sync.Mutex
	missed   []string
}

// NewReplay prepares every answer of rec through variant (nil: as recorded) and serves them.
// The bodies are rewritten and compressed here, once, so that serving costs the benchmark's
// process no more than writing bytes.
func NewReplay(rec *Recording, variant Variant) (*Replay, error) {
	r := &Replay{answers: map[string]prepared{}}
	for _, k := range rec.Keys() {
		a, _ := rec.Answer(k)
		if variant != nil {
			body, err := variant(k, a)
			if err != nil {
				return nil, fmt.Errorf("rewrite %s: %w", k, err)
			}
			a.Body = body
		}
		p := prepared{Answer: a}
		if len(a.Body) > gzipThreshold {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzipLevel)
			_, _ = zw.Write(a.Body)
			_ = zw.Close()
			p.gzipped = buf.Bytes()
		}
		r.answers[k] = p
	}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	return r, nil
}

// Missed lists the keys of the requests that were not in the recording.
func (r *Replay) Missed() []string {
	r.missedMu.Lock()
	defer r.missedMu.Unlock()
	return append([]string(nil), r.missed...)
}

func (r *Replay) serve(w http.ResponseWriter, req *http.Request) {
	key := RequestKey(req)
	a, ok := r.answers[key]
	if !ok {
		r.Misses.Add(1)
		r.missedMu.Lock()
		r.missed = append(r.missed, key)
		r.missedMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"not in the recording: %s","reason":"NotFound","code":404}`, strings.ReplaceAll(key, `"`, `'`))
		return
	}
	w.Header().Set("Content-Type", a.ContentType)
	body := a.Body
	if a.gzipped != nil && strings.Contains(req.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		body = a.gzipped
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(body)
}
