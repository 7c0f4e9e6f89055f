package meshmirror

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// requestTimeout bounds each of the mirror's API calls, so that a stopped API server fails a
// pass quickly and the others are still written.
const requestTimeout = 5 * time.Second

// ClusterFromKubeconfig is a cluster the mirror reaches with the kubeconfig at path (its
// current context).
func ClusterFromKubeconfig(name, path string) (Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return Cluster{}, fmt.Errorf("kubeconfig of %s: %w", name, err)
	}
	cfg.Timeout = requestTimeout
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Cluster{}, fmt.Errorf("client of %s: %w", name, err)
	}
	return Cluster{Name: name, Client: cs}, nil
}

// Handler serves /healthz (200 once a pass has completed) and /status (Status as JSON).
func (m *Mirror) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if m.Passes() == 0 {
			http.Error(w, "no pass completed yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.Status())
	})
	return mux
}

// Serve runs the mirror and its HTTP endpoints on listen until ctx ends.
func (m *Mirror) Serve(ctx context.Context, listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	m.Run(ctx)
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
