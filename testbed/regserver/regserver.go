// Package regserver runs the toolchain's OCI registry (distribution's `registry`, built from
// github.com/distribution/distribution/v3) as a test-bed process: plain HTTP on one address,
// no authentication, blobs and manifests on the file system under the run's state directory.
//
// It is a process, not a library linked into the test bed: distribution's registry package
// brings its own versions of OpenTelemetry, Redis and the cloud storage SDKs, which would move
// the dependencies of everything Polykube links; built by the toolchain it is a pinned binary
// like etcd or Prometheus, and the release code, Flux and containerd speak to it as to any
// registry, over HTTP.
package regserver

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/topology"
)

// Options say how to run one registry.
type Options struct {
	// Name is the process name in Procs.
	Name string
	// Binary is the registry binary (toolchain.Registry).
	Binary string
	// Procs holds the process files; DataDir the configuration and the storage.
	Procs   proc.Dir
	DataDir string
	// Host is the address it listens on (127.0.0.1 for the host bed, the docker bridge's
	// gateway for the kind nodes of the in-cluster bed); "" means 127.0.0.1.
	Host string
	// Port is its port; 0 takes a free one.
	Port int
	// Ready bounds the wait for the API to answer.
	Ready topology.Wait
}

// Server is a running registry.
type Server struct {
	// Addr is host:port, what image references name (Addr/polykube/operator:v0.1.0).
	Addr  string
	name  string
	procs proc.Dir
}

// StorageDir is where the registry keeps blobs and manifests, under its data directory.
func StorageDir(dataDir string) string { return filepath.Join(dataDir, "storage") }

// Config is the registry's configuration: the file-system driver under dataDir, HTTP on addr,
// deletes enabled (a test bed cleans up), no authentication, no debug server.
func Config(dataDir, addr string) []byte {
	return []byte(strings.TrimSpace(fmt.Sprintf(`
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
health:
  storagedriver:
    enabled: false
`, StorageDir(dataDir), addr)) + "\n")
}

// Start writes the configuration and starts the registry (a registry of that name already
// running is kept), then waits until GET /v2/ answers 200.
func Start(ctx context.Context, o Options) (*Server, error) {
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if net.ParseIP(host) == nil {
		return nil, fmt.Errorf("registry address %q is not an IP address: give the address to listen on, 127.0.0.1 or the docker bridge's gateway", host)
	}
	if err := os.MkdirAll(StorageDir(o.DataDir), 0o755); err != nil {
		return nil, err
	}
	port := o.Port
	if port == 0 {
		p, err := ports.Free(1)
		if err != nil {
			return nil, err
		}
		port = p[0]
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	cfgPath := filepath.Join(o.DataDir, "config.yml")
	if err := os.WriteFile(cfgPath, Config(o.DataDir, addr), 0o644); err != nil {
		return nil, err
	}
	s := &Server{Addr: addr, name: o.Name, procs: o.Procs}
	if _, err := o.Procs.Start(proc.Spec{
		Name: o.Name, Path: o.Binary, Dir: o.DataDir,
		Args: []string{"serve", cfgPath},
		// The registry exports traces through OpenTelemetry's autoexport, OTLP to localhost
		// unless told otherwise: there is no collector here.
		Env:       []string{"OTEL_TRACES_EXPORTER=none"},
		HealthURL: s.URL() + "/v2/",
	}); err != nil {
		return nil, err
	}
	if err := o.Procs.AwaitHealthy(ctx, o.Name, "the registry "+o.Name+" to answer at "+s.URL()+"/v2/", o.Ready); err != nil {
		return nil, err
	}
	return s, nil
}

// URL is the registry's base URL, http://host:port.
func (s *Server) URL() string { return "http://" + s.Addr }

// Stop stops the process (a Server of another process's registry has none to stop).
func (s *Server) Stop(ctx context.Context, w topology.Wait) error {
	if s.name == "" {
		return nil
	}
	return s.procs.Stop(ctx, s.name, false, w)
}

// PullEntrypoint pulls the image ref (a tag or a digest; an index is resolved to its os/arch
// image) from a registry and writes the file its entrypoint names to dest, executable: what a
// kubelet would run, for a bed whose pods run nothing (kwok). Plain HTTP is allowed.
func PullEntrypoint(ctx context.Context, ref, goos, goarch, dest string) error {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithPlatform(v1.Platform{OS: goos, Architecture: goarch}))
	if err != nil {
		return fmt.Errorf("pull %s for %s/%s: %w", ref, goos, goarch, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read the configuration of %s: %w", ref, err)
	}
	if len(cfg.Config.Entrypoint) == 0 {
		return fmt.Errorf("image %s has no entrypoint: nothing to run", ref)
	}
	entry := strings.TrimPrefix(path.Clean(cfg.Config.Entrypoint[0]), "/")
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("image %s has no file %s, its entrypoint", ref, cfg.Config.Entrypoint[0])
		}
		if err != nil {
			return fmt.Errorf("read the layers of %s: %w", ref, err)
		}
		if strings.TrimPrefix(path.Clean(h.Name), "/") != entry || h.Typeflag != tar.TypeReg {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dest, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, tr); err != nil {
			f.Close()
			return fmt.Errorf("write %s from %s: %w", dest, ref, err)
		}
		return f.Close()
	}
}
