package main

import (
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/fleettest"
)

// TestRun_HungExecPlugin: a context whose exec credential plugin never answers costs --timeout,
// is reported as a Timeout that says what to do, and leaves the exit code at 3; the context
// beside it is read as usual.
func TestRun_HungExecPlugin(t *testing.T) {
	g := NewWithT(t)
	srv := fleettest.EmptyListServer(t)

	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	// https: clientcmd attaches credentials, exec plugins included, only to TLS servers.
	kc.Clusters["fleet"] = &clientcmdapi.Cluster{
		Server: srv.URL, CertificateAuthorityData: fleettest.ServerCA(srv),
	}
	kc.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: "static"}
	kc.AuthInfos["hung"] = &clientcmdapi.AuthInfo{Exec: fleettest.ExecStanza(fleettest.HangingPlugin(t, dir))}
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
