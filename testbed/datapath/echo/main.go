// Command polykube-echo is the routing probe's workload. `polykube-echo serve` answers every
// HTTP request with the name of the cluster it runs in (from $CLUSTER_NAME, which the pod
// template reads from the cluster label the Polykube operator puts on its pods) and its pod name; `polykube-echo call` calls a URL N times, each
// on a new connection so that every call is load-balanced anew, and prints one JSON line per
// call: the cluster that answered, or the error. It is built into the test bed's image beside
// the operator (see the Dockerfile).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
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

const usage = "usage: polykube-echo serve [--listen :8080] | call --url URL [--count N] [--timeout 2s] | reach --url URL [--timeout 5s]"

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
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *url == "" || *count < 1 {
			return errors.New("call needs --url and a --count of at least 1")
		}
		return call(ctx, out, *url, *count, *timeout)
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

// Answer is what the server replies.
type Answer struct {
	Cluster string `json:"cluster"`
	Pod     string `json:"pod,omitempty"`
}

func handler(cluster, pod string) (http.Handler, error) {
	if cluster == "" || strings.Contains(cluster, "${") {
		return nil, fmt.Errorf("CLUSTER_NAME is %q: set it to the cluster's name (from the pod's polykube.kismet.io/cluster label through the downward API, as testbed/datapath.EchoTemplate does)", cluster)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Answer{Cluster: cluster, Pod: pod})
	})
	return mux, nil
}

// record is one line of `call` output; testbed/datapath.ParseCalls reads it.
type record struct {
	N       int    `json:"call"`
	Cluster string `json:"cluster,omitempty"`
	Pod     string `json:"pod,omitempty"`
	Error   string `json:"error,omitempty"`
}

func call(ctx context.Context, out io.Writer, url string, count int, timeout time.Duration) error {
	// A new connection per call: Cilium balances at connect time, so a kept-alive
	// connection would send every call to one backend.
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	enc := json.NewEncoder(out)
	for i := range count {
		r := record{N: i}
		a, err := get(ctx, hc, url)
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Cluster, r.Pod = a.Cluster, a.Pod
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func get(ctx context.Context, hc *http.Client, url string) (Answer, error) {
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
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return a, fmt.Errorf("%s answered something that is not an echo answer: %w", url, err)
	}
	if a.Cluster == "" {
		return a, fmt.Errorf("%s answered without a cluster name", url)
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
