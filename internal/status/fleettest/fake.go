package fleettest

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fakes for the tests of polykube-status that need no real API server: a server answering
// every list with an empty one, and exec credential plugins.

// listKinds maps the resources polykube-status lists to their list kinds and group versions.
var listKinds = map[string][2]string{
	"workloads": {"polykube.kismet.io/v1alpha1", "WorkloadList"}, "federations": {"polykube.kismet.io/v1alpha1", "FederationList"},
	"clustermembers": {"polykube.kismet.io/v1alpha1", "ClusterMemberList"}, "serviceendpoints": {"polykube.kismet.io/v1alpha1", "ServiceEndpointList"},
	"datastorebindings": {"polykube.kismet.io/v1alpha1", "DatastoreBindingList"}, "deployments": {"apps/v1", "DeploymentList"},
}

// EmptyLists answers every list polykube-status sends with an empty list of the right kind.
func EmptyLists() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeList(w, r, nil) })
}

func writeList(w http.ResponseWriter, r *http.Request, items []any) { writePage(w, r, items, "") }

// writePage answers with a list of items whose metadata.continue is next ("" on the last page).
func writePage(w http.ResponseWriter, r *http.Request, items []any, next string) {
	k, ok := listKinds[path.Base(r.URL.Path)]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if items == nil {
		items = []any{}
	}
	list := map[string]any{"apiVersion": k[0], "kind": k[1], "items": items}
	if next != "" {
		list["metadata"] = map[string]any{"continue": next}
	}
	body, err := json.Marshal(list)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// FakeCluster is a TLS server that answers polykube-status's lists with the objects a test sets,
// whatever the namespace asked for, and counts the Workload lists it answered: enough to run the
// CLI against a fleet whose state the test changes while the CLI reads it, without API servers.
// It pages as kube-apiserver does: a list with ?limit=N answers N items and a continue token
// for the rest.
type FakeCluster struct {
	Server         *httptest.Server
	mu             sync.Mutex
	items          map[string][]any
	workloadLists  int
	requests       []string
	expireContinue bool
}

// NewFakeCluster starts a FakeCluster that lists nothing yet; it is closed when the test ends.
func NewFakeCluster(t *testing.T) *FakeCluster {
	t.Helper()
	c := &FakeCluster{items: map[string][]any{}}
	c.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		c.mu.Lock()
		res := path.Base(r.URL.Path)
		items := c.items[res]
		if res == "workloads" && q.Get("continue") == "" {
			c.workloadLists++
		}
		c.requests = append(c.requests, res+"?"+r.URL.RawQuery)
		expire := c.expireContinue
		c.mu.Unlock()
		start := 0
		if tok := q.Get("continue"); tok != "" {
			if expire {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusGone)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"The provided continue parameter is too old to display a consistent list result.","reason":"Expired","code":410}`))
				return
			}
			var err error
			if start, err = strconv.Atoi(tok); err != nil || start > len(items) {
				http.Error(w, "bad continue token", http.StatusBadRequest)
				return
			}
		}
		end, next := len(items), ""
		if limit, _ := strconv.Atoi(q.Get("limit")); limit > 0 && start+limit < len(items) {
			end, next = start+limit, strconv.Itoa(start+limit)
		}
		writePage(w, r, items[start:end], next)
	}))
	t.Cleanup(c.Server.Close)
	return c
}

// Requests lists the requests answered, as resource?query, in order.
func (c *FakeCluster) Requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.requests...)
}

// ExpireContinue makes the cluster answer every request for a next page with 410 Expired, as
// an API server does when etcd compacted the list's revision between two pages.
func (c *FakeCluster) ExpireContinue(expire bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireContinue = expire
}

// Set makes the cluster list items for resource (workloads, serviceendpoints, ...) from now on.
func (c *FakeCluster) Set(resource string, items ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items[resource] = items
}

// WorkloadLists is how many Workload lists the cluster answered.
func (c *FakeCluster) WorkloadLists() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.workloadLists
}

// FakeKubeconfig writes a kubeconfig with one context per named FakeCluster (a static token
// each) and returns its path.
func FakeKubeconfig(t *testing.T, clusters map[string]*FakeCluster) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for name, c := range clusters {
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: c.Server.URL, CertificateAuthorityData: ServerCA(c.Server)}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "token-" + name}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// EmptyListServer is a TLS server of EmptyLists, closed when the test ends. (clientcmd attaches
// credentials, exec plugins included, only to TLS servers.)
func EmptyListServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(EmptyLists())
	t.Cleanup(srv.Close)
	return srv
}

// ServerCA is the PEM of a TLS test server's certificate, for a kubeconfig cluster.
func ServerCA(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// ExecStanza is a kubeconfig exec credential stanza running command, never interactive.
func ExecStanza(command string) *clientcmdapi.ExecConfig {
	return &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: command, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}
}

// HangingPlugin writes an exec credential plugin that never answers (it sleeps 60 s) and kills
// every copy of it that ran when the test ends: polykube-status abandons such a plugin, and
// ends it only when the CLI wrapped it and exits (status.GuardExecPlugins).
func HangingPlugin(t *testing.T, dir string) string {
	t.Helper()
	pids := filepath.Join(dir, "hang.pids")
	// exec keeps the PID, and the redirections keep the sleep off the test binary's stderr, which
	// go test would otherwise wait on.
	script := filepath.Join(dir, "hang.sh")
	writeScript(t, script, fmt.Sprintf("echo $$ >> %q\nexec sleep 60 </dev/null >/dev/null 2>&1\n", pids))
	t.Cleanup(func() {
		raw, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return script
}

// TokenPlugin writes an exec credential plugin that answers at once with token.
func TokenPlugin(t *testing.T, dir, token string) string {
	t.Helper()
	script := filepath.Join(dir, "token.sh")
	writeScript(t, script, fmt.Sprintf(`echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":%q}}'`+"\n", token))
	return script
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// HangingPluginHoldingOutput writes an exec credential plugin that never answers and, unlike
// HangingPlugin, keeps the streams it was given: it sleeps for seconds with the stderr it
// inherited, beside a child of its own that does the same, as a cloud CLI waiting for a login
// does. It returns the script and a function that lists the PIDs of both once they started.
func HangingPluginHoldingOutput(t *testing.T, dir string, seconds int) (string, func() []int) {
	t.Helper()
	pids := filepath.Join(dir, "hold.pids")
	script := filepath.Join(dir, "hold.sh")
	writeScript(t, script, fmt.Sprintf("sleep %d &\necho $! >> %q\necho $$ >> %q\nexec sleep %d\n", seconds, pids, pids, seconds))
	read := func() []int {
		raw, _ := os.ReadFile(pids)
		var out []int
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
		return out
	}
	t.Cleanup(func() {
		for _, pid := range read() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return script, read
}

// Running reports whether pid is a live process: one that exists and is not a zombie waiting
// for its parent (in a container, the orphan's new parent may never reap it).
func Running(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		// No /proc (not Linux): the signal test is all there is.
		return true
	}
	// The state follows the command name in parentheses, which may itself hold spaces.
	s := string(raw)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}
