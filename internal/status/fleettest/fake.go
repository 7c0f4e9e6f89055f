package fleettest

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fakes for the tests of polykube-status that need no real API server: a server answering
// every list with an empty one, and exec credential plugins.

// EmptyLists answers every list polykube-status sends with an empty list of the right kind.
func EmptyLists() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kinds := map[string]string{"workloads": "WorkloadList", "federations": "FederationList", "clustermembers": "ClusterMemberList",
			"serviceendpoints": "ServiceEndpointList", "datastorebindings": "DatastoreBindingList"}
		gv := "polykube.kismet.io/v1alpha1"
		kind, ok := kinds[path.Base(r.URL.Path)]
		if !ok {
			gv, kind = "apps/v1", "DeploymentList"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"apiVersion":%q,"kind":%q,"items":[]}`, gv, kind)
	})
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
