// Command polykube-echo is the routing probe's workload. `polykube-echo serve` answers every
// HTTP request with the name of the cluster it runs in (from $CLUSTER_NAME, which the pod
// template reads from the cluster label the Polykube operator puts on its pods) and its pod name; `polykube-echo call` calls a URL N times, each
// on a new connection so that every call is load-balanced anew, and prints one JSON line per
// call: the cluster that answered, or the error. It is built into the test bed's image beside
// the operator (see the Dockerfile).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "polykube-echo:", err)
		os.Exit(1)
	}
}

const usage = "usage: polykube-echo serve [--listen :8080] | call --url URL [--count N] [--timeout 2s] [--bytes N] | reach --url URL [--timeout 5s]"

// maxPayload bounds the payload a call may ask for (?bytes=N): enough to fill many segments of
// any MTU, small enough that a pod's memory never matters (the server streams it).
const maxPayload = 64 << 20

func run(ctx context.Context, args []string, out io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "serve":
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		listen := fs.String("listen", ":8080", "address to listen on")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		h, err := handler(getenv("CLUSTER_NAME"), getenv("POD_NAME"))
		if err != nil {
			return err
		}
		srv := &http.Server{Addr: *listen, Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	case "call":
		fs := flag.NewFlagSet("call", flag.ContinueOnError)
		url := fs.String("url", "", "URL to call")
		count := fs.Int("count", 60, "number of calls")
		timeout := fs.Duration("timeout", 2*time.Second, "timeout of one call")
		payload := fs.Int64("bytes", 0, "ask each answer to carry this many bytes after it (checked byte by byte); 0 for none")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *url == "" || *count < 1 {
			return errors.New("call needs --url and a --count of at least 1")
		}
		if *payload < 0 || *payload > maxPayload {
			return fmt.Errorf("--bytes %d: give 0 to %d", *payload, maxPayload)
		}
		return call(ctx, out, *url, *count, *timeout, *payload)
	case "reach":
		fs := flag.NewFlagSet("reach", flag.ContinueOnError)
		url := fs.String("url", "", "URL to fetch")
		timeout := fs.Duration("timeout", 5*time.Second, "timeout of the request")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *url == "" {
			return errors.New("reach needs --url")
		}
		return reach(ctx, out, *url, *timeout)
	default:
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
}

// Answer is what the server replies: one JSON line, then Bytes bytes of the pattern when the
// call asked for them.
type Answer struct {
	Cluster string `json:"cluster"`
	Pod     string `json:"pod,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
}

// pattern reads as the payload's bytes: byte i is i mod 251 (a prime, so that a chunk lost or
// repeated at any power-of-two boundary shows as a wrong byte).
type pattern struct{ off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte((p.off + int64(i)) % 251)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// checkPattern reads exactly n bytes of the payload from r, checking each, and then the end of
// the body.
func checkPattern(r io.Reader, n int64) error {
	buf := make([]byte, 32<<10)
	var off int64
	for off < n {
		k, err := r.Read(buf[:min(int64(len(buf)), n-off)])
		for i := range k {
			if want := byte((off + int64(i)) % 251); buf[i] != want {
				return fmt.Errorf("byte %d of %d is %d, not %d", off+int64(i), n, buf[i], want)
			}
		}
		off += int64(k)
		if err != nil {
			if off < n {
				return fmt.Errorf("the answer stopped after %d of %d bytes: %w", off, n, err)
			}
			break
		}
	}
	if k, _ := r.Read(buf[:1]); k > 0 {
		return fmt.Errorf("the answer goes on after its %d bytes", n)
	}
	return nil
}

func handler(cluster, pod string) (http.Handler, error) {
	if cluster == "" || strings.Contains(cluster, "${") {
		return nil, fmt.Errorf("CLUSTER_NAME is %q: set it to the cluster's name (from the pod's polykube.kismet.io/cluster label through the downward API, as testbed/datapath.EchoTemplate does)", cluster)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		var n int64
		if q := r.URL.Query().Get("bytes"); q != "" {
			v, err := strconv.ParseInt(q, 10, 64)
			if err != nil || v < 0 || v > maxPayload {
				http.Error(w, fmt.Sprintf("bytes=%q: give a whole number from 0 to %d", q, maxPayload), http.StatusBadRequest)
				return
			}
			n = v
		}
		head, err := json.Marshal(Answer{Cluster: cluster, Pod: pod, Bytes: n})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		head = append(head, '\n')
		w.Header().Set("Content-Type", "application/json")
		// The length is announced, so an answer cut short on its way (a segment too large
		// for a tunnel, dropped) is an error at the client, not a short read taken as whole.
		w.Header().Set("Content-Length", strconv.FormatInt(int64(len(head))+n, 10))
		if _, err := w.Write(head); err != nil {
			return
		}
		_, _ = io.CopyN(w, &pattern{}, n)
	})
	return mux, nil
}

// record is one line of `call` output; testbed/datapath.ParseCalls reads it into its CallRecord,
// which has the same fields. It is kept here, not imported, so that this binary, which runs in
// every probe pod, does not link the test bed's Kubernetes clients. Bytes and Seconds
// are given for a call that asked for a payload: the bytes that arrived whole, and the call's
// time from request to the last byte.
type record struct {
	N       int     `json:"call"`
	Cluster string  `json:"cluster,omitempty"`
	Pod     string  `json:"pod,omitempty"`
	Bytes   int64   `json:"bytes,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	Error   string  `json:"error,omitempty"`
}

func call(ctx context.Context, out io.Writer, url string, count int, timeout time.Duration, payload int64) error {
	if payload > 0 {
		sep := "?"
		if strings.Contains(url, "?") {
			sep = "&"
		}
		url += sep + "bytes=" + strconv.FormatInt(payload, 10)
	}
	// A new connection per call: Cilium balances at connect time, so a kept-alive
	// connection would send every call to one backend.
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	enc := json.NewEncoder(out)
	for i := range count {
		r := record{N: i}
		start := time.Now()
		a, err := get(ctx, hc, url, payload)
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Cluster, r.Pod = a.Cluster, a.Pod
			if payload > 0 {
				r.Bytes, r.Seconds = a.Bytes, time.Since(start).Seconds()
			}
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func get(ctx context.Context, hc *http.Client, url string, payload int64) (Answer, error) {
	var a Answer
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return a, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	body := bufio.NewReader(resp.Body)
	head, err := body.ReadBytes('\n')
	if err != nil && payload > 0 {
		return a, fmt.Errorf("%s: the answer's first line did not arrive whole: %w", url, err)
	}
	if err := json.Unmarshal(head, &a); err != nil {
		return a, fmt.Errorf("%s answered something that is not an echo answer: %w", url, err)
	}
	if a.Cluster == "" {
		return a, fmt.Errorf("%s answered without a cluster name", url)
	}
	if payload == 0 {
		return a, nil
	}
	if a.Bytes != payload {
		return a, fmt.Errorf("%s (cluster %s) announced %d bytes, not the %d asked for: is its echo server older than this client?", url, a.Cluster, a.Bytes, payload)
	}
	if err := checkPattern(body, payload); err != nil {
		return a, fmt.Errorf("%s (cluster %s): %w", url, a.Cluster, err)
	}
	return a, nil
}

// reach fetches url once and fails unless it answers 200 OK: the test bed's check that a pod
// reaches the Git server Flux pulls from (its smart-HTTP info/refs answers 200).
func reach(ctx context.Context, out io.Writer, url string, timeout time.Duration) error {
	hc := &http.Client{Timeout: timeout}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	_, err = fmt.Fprintf(out, "%s answered %s\n", url, resp.Status)
	return err
}
