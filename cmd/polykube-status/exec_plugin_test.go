package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
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
	// Plugins run through the CLI's own binary (status.GuardExecPlugins): one that answers still
	// works, and one that fails is named in the message, not the binary that ran it.
	kc.AuthInfos["plugin"] = &clientcmdapi.AuthInfo{Exec: fleettest.ExecStanza(fleettest.TokenPlugin(t, dir, "from-plugin"))}
	broken := filepath.Join(dir, "broken.sh")
	g.Expect(os.WriteFile(broken, []byte("#!/bin/sh\necho 'log in first' >&2\nexit 3\n"), 0o755)).To(Succeed())
	kc.AuthInfos["broken"] = &clientcmdapi.AuthInfo{Exec: fleettest.ExecStanza(broken)}
	for _, n := range []string{"token", "hung", "plugin", "broken"} {
		kc.Contexts[n] = &clientcmdapi.Context{Cluster: "fleet", AuthInfo: n, Namespace: "default"}
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*kc, kcPath)).To(Succeed())

	res := runCLI("--kubeconfig", kcPath, "--context", "hung", "--context", "token", "--context", "plugin", "--context", "broken",
		"--timeout", "1s", "--parallel", "1", "-o", "json")
	// The plugin sleeps 60 s. With --parallel 1 the token context waits for the hung one, so
	// this also shows that an abandoned read gives its slot back.
	g.Expect(res.elapsed).To(BeNumerically("<", 10*time.Second), "a hung exec plugin must not hold the run past --timeout")
	g.Expect(res.code).To(Equal(status.ExitUnreachable), "stderr: %s", res.stderr)
	// The plugins' own stderr goes to the process's (the broken one's message shows in go test's
	// output), never into what run prints.
	g.Expect(res.stderr).To(BeEmpty())
	rep := res.report(g)
	g.Expect(rep.Clusters).To(HaveLen(4))
	hung, token, plugin, failed := rep.Clusters[0], rep.Clusters[1], rep.Clusters[2], rep.Clusters[3]
	g.Expect(hung.Reachable).To(BeFalse())
	g.Expect(hung.Reason).To(Equal(status.ReasonTimeout))
	g.Expect(hung.Message).To(And(ContainSubstring("exec credential plugin did not answer within --timeout (1s)"),
		ContainSubstring("kubectl --context hung get --raw /version"), ContainSubstring("raise --timeout")))
	g.Expect(token.Reachable).To(BeTrue(), token.Message)
	g.Expect(plugin.Reachable).To(BeTrue(), plugin.Message)
	g.Expect(failed.Reachable).To(BeFalse())
	self, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(failed.Message).To(And(ContainSubstring(broken), ContainSubstring("exit code 3"), Not(ContainSubstring(self))))
	g.Expect(rep.Summary.ExitCode).To(Equal(status.ExitUnreachable))
}

// TestProcess_HungExecPluginPipedOutput runs polykube-status as a process whose stdout and
// stderr are pipes, as `polykube-status | less` or `x=$(polykube-status)` give it, with a context
// whose exec credential plugin hangs while holding the stderr it was given. The caller must get
// its end of file within --timeout plus a margin, not when the plugin exits, and no process of
// the plugin may outlive the run.
func TestProcess_HungExecPluginPipedOutput(t *testing.T) {
	g := NewWithT(t)
	srv := fleettest.EmptyListServer(t)
	dir := t.TempDir()
	plugin, pids := fleettest.HangingPluginHoldingOutput(t, dir, 30)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["fleet"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: fleettest.ServerCA(srv)}
	kc.AuthInfos["hung"] = &clientcmdapi.AuthInfo{Exec: fleettest.ExecStanza(plugin)}
	kc.Contexts["hung"] = &clientcmdapi.Context{Cluster: "fleet", AuthInfo: "hung", Namespace: "default"}
	kcPath := filepath.Join(dir, "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*kc, kcPath)).To(Succeed())

	self, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(self, "--kubeconfig", kcPath, "--context", "hung", "--timeout", "1s")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	// Buffers, not files: os/exec then hands the process pipes and Wait returns only once every
	// holder of their write ends has closed them, as a shell's command substitution does.
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	elapsed := time.Since(start)

	g.Expect(elapsed).To(BeNumerically("<", 8*time.Second),
		"with --timeout 1s the caller reading the pipes waited %s (the plugin sleeps 30 s); stderr: %s", elapsed, errOut.String())
	var exitErr *exec.ExitError
	g.Expect(errors.As(err, &exitErr)).To(BeTrue(), "run: %v", err)
	g.Expect(exitErr.ExitCode()).To(Equal(status.ExitUnreachable), "stdout: %s\nstderr: %s", out.String(), errOut.String())
	g.Expect(out.String()).To(ContainSubstring("exec credential plugin did not answer within --timeout (1s)"))
	g.Expect(pids()).To(HaveLen(2), "the plugin should have started and forked its child")
	for _, pid := range pids() {
		g.Eventually(func() bool { return fleettest.Running(pid) }).WithTimeout(5*time.Second).WithPolling(50*time.Millisecond).
			Should(BeFalse(), "plugin process %d outlived the run", pid)
	}
}

// TestRun_ExecPluginLeavingAChild: a plugin that answers and leaves a child holding its stderr
// (an agent it starts, say) still gives its credentials: the shim reports the plugin's exit.
func TestRun_ExecPluginLeavingAChild(t *testing.T) {
	g := NewWithT(t)
	srv := fleettest.EmptyListServer(t)
	dir := t.TempDir()
	plugin := filepath.Join(dir, "agent.sh")
	pids := filepath.Join(dir, "agent.pids")
	g.Expect(os.WriteFile(plugin, []byte("#!/bin/sh\nsleep 30 >/dev/null &\necho $! >> "+pids+"\n"+
		`echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t"}}'`+"\n"), 0o755)).To(Succeed())
	t.Cleanup(func() {
		raw, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	kc := clientcmdapi.NewConfig()
	kc.Clusters["fleet"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: fleettest.ServerCA(srv)}
	kc.AuthInfos["agent"] = &clientcmdapi.AuthInfo{Exec: fleettest.ExecStanza(plugin)}
	kc.Contexts["agent"] = &clientcmdapi.Context{Cluster: "fleet", AuthInfo: "agent", Namespace: "default"}
	kcPath := filepath.Join(dir, "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*kc, kcPath)).To(Succeed())

	res := runCLI("--kubeconfig", kcPath, "--context", "agent", "--timeout", "5s", "-o", "json")
	rep := res.report(g)
	g.Expect(rep.Clusters[0].Reachable).To(BeTrue(), rep.Clusters[0].Message)
	g.Expect(res.elapsed).To(BeNumerically("<", 5*time.Second))
}
