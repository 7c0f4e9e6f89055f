package main

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
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/polykube/polykube/internal/status"
)

// TestRun_HungExecPlugin: a context whose exec credential plugin never answers costs --timeout,
// is reported as a Timeout that says what to do, and leaves the exit code at 3; the context
// beside it is read as usual.
func TestRun_HungExecPlugin(t *testing.T) {
	g := NewWithT(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kinds := map[string]string{"workloads": "WorkloadList", "federations": "FederationList", "clustermembers": "ClusterMemberList"}
		gv := "polykube.kismet.io/v1alpha1"
		kind, ok := kinds[path.Base(r.URL.Path)]
		if !ok {
			gv, kind = "apps/v1", "DeploymentList"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"apiVersion":%q,"kind":%q,"items":[]}`, gv, kind)
	}))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	// https: clientcmd attaches credentials, exec plugins included, only to TLS servers.
	kc.Clusters["fleet"] = &clientcmdapi.Cluster{
		Server: srv.URL, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
	}
	kc.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: "static"}
	kc.AuthInfos["hung"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: hangingPlugin(t, dir), InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}}
	for _, n := range []string{"token", "hung"} {
		kc.Contexts[n] = &clientcmdapi.Context{Cluster: "fleet", AuthInfo: n, Namespace: "default"}
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*kc, kcPath)).To(Succeed())

	res := runCLI("--kubeconfig", kcPath, "--context", "hung", "--context", "token", "--timeout", "1s", "--parallel", "1", "-o", "json")
	// The plugin sleeps 60 s. With --parallel 1 the token context waits for the hung one, so
	// this also shows that an abandoned read gives its slot back.
	g.Expect(res.elapsed).To(BeNumerically("<", 10*time.Second), "a hung exec plugin must not hold the run past --timeout")
	g.Expect(res.code).To(Equal(status.ExitUnreachable), "stderr: %s", res.stderr)
	g.Expect(res.stderr).To(BeEmpty())
	rep := res.report(g)
	g.Expect(rep.Clusters).To(HaveLen(2))
	hung, token := rep.Clusters[0], rep.Clusters[1]
	g.Expect(hung.Reachable).To(BeFalse())
	g.Expect(hung.Reason).To(Equal(status.ReasonTimeout))
	g.Expect(hung.Message).To(And(ContainSubstring("exec credential plugin did not answer within --timeout (1s)"),
		ContainSubstring("kubectl --context hung get --raw /version"), ContainSubstring("raise --timeout")))
	g.Expect(token.Reachable).To(BeTrue(), token.Message)
	g.Expect(rep.Summary.ExitCode).To(Equal(status.ExitUnreachable))
}

// hangingPlugin writes an exec credential plugin that never answers (it sleeps 60 s) and kills
// every copy of it that ran when the test ends: the CLI abandons such a plugin but cannot stop it.
func hangingPlugin(t *testing.T, dir string) string {
	t.Helper()
	pids := filepath.Join(dir, "hang.pids")
	script := filepath.Join(dir, "hang.sh")
	// exec keeps the PID, and the redirections keep the sleep off the test binary's stderr, which
	// go test would otherwise wait on.
	body := fmt.Sprintf("#!/bin/sh\necho $$ >> %q\nexec sleep 60 </dev/null >/dev/null 2>&1\n", pids)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
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
