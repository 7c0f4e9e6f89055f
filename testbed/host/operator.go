package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/internal/gobuild"
	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/topology"
)

// operatorTokenSeconds is how long an operator's ServiceAccount token lives (a day: longer
// than any test-bed session; `up` issues a fresh one when it restarts an operator).
const operatorTokenSeconds = 24 * 60 * 60

func operatorProc(cluster string) string { return cluster + "-operator" }

// upOperators builds the operator once and runs it once per cluster with a token of the
// operator's ServiceAccount, which Flux created from the operator base.
func (tb *Testbed) upOperators(ctx context.Context) error {
	src, err := tb.sourceDir()
	if err != nil {
		return err
	}
	bin, err := gobuild.Build(ctx, src, "./operator", tb.binDir())
	if err != nil {
		return fmt.Errorf("the operator add-on runs the operator built from this checkout: %w", err)
	}
	tb.state.Operator.Binary = bin
	if err := tb.saveState(); err != nil {
		return err
	}
	return tb.forEachCluster(func(c topology.Cluster) error { return tb.startOperator(ctx, c.Name, true) })
}

// startOperator (re)issues the operator's token when asked or when it has none, and starts
// its process unless it runs.
func (tb *Testbed) startOperator(ctx context.Context, cluster string, freshToken bool) error {
	tb.mu.Lock()
	cs := tb.state.Clusters[cluster]
	tb.mu.Unlock()
	if cs == nil {
		return fmt.Errorf("cluster %s is not up", cluster)
	}
	if _, running := tb.procs.Running(operatorProc(cluster)); running {
		return nil
	}
	if cs.Operator.Health == 0 {
		p, err := ports.Free(2)
		if err != nil {
			return err
		}
		tb.mu.Lock()
		cs.Operator.Metrics, cs.Operator.Health = p[0], p[1]
		tb.mu.Unlock()
	}
	if freshToken || cs.Operator.Kubeconfig == "" {
		path, err := tb.writeOperatorKubeconfig(ctx, cluster)
		if err != nil {
			return err
		}
		tb.mu.Lock()
		cs.Operator.Kubeconfig = path
		tb.mu.Unlock()
	}
	if err := tb.saveState(); err != nil {
		return err
	}
	return tb.startProc(ctx, proc.Spec{
		Name:      operatorProc(cluster),
		Path:      tb.operatorBinary(cs),
		Args:      tb.clusterOperatorArgs(cluster, cs),
		Env:       []string{"KUBECONFIG=" + cs.Operator.Kubeconfig},
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/healthz", cs.Operator.Health),
	})
}

// operatorArgs are the arguments of the operator of a cluster, started as clusterName on the
// given metrics and health ports; with leader election, as gitops/operator runs it, holding
// its Lease in leaseNamespace (the operator's own, named explicitly: a process outside the
// cluster has no in-cluster namespace to default to).
func operatorArgs(clusterName string, metrics, health int, leaderElect bool, leaseNamespace string) []string {
	args := []string{
		"--cluster-name=" + clusterName,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metrics),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", health),
	}
	if leaderElect {
		args = append(args, "--leader-elect", "--leader-election-namespace="+leaseNamespace)
	}
	return args
}

// clusterOperatorArgs are the arguments of the cluster's own operator process.
func (tb *Testbed) clusterOperatorArgs(cluster string, cs *ClusterState) []string {
	return operatorArgs(cluster, cs.Operator.Metrics, cs.Operator.Health, cs.Operator.LeaderElect, tb.state.Operator.ServiceAccount.Namespace)
}

// StartOperatorAs runs the cluster's operator once with another --cluster-name, with the
// cluster's own credentials, as a Flux entry point copied from another cluster would start
// it, and returns what it printed when it refused to run. It is an error (wrapping
// ErrOperatorRan) when it is still running after the process wait, or exited without an
// error; it is then stopped. The cluster's own operator must be stopped first (the ports are
// its own).
func (tb *Testbed) StartOperatorAs(ctx context.Context, cluster, clusterName string) (string, error) {
	return tb.runOperatorAs(ctx, cluster, clusterName, false)
}

// StartReplicaAs runs one more replica of the cluster's operator, beside the running one and
// on ports of its own, with another --cluster-name: as a rollout of the operator Deployment
// with a CLUSTER_NAME copied from another cluster starts a new pod while the old one still
// runs. It returns what the replica printed when it refused to run, and wraps ErrOperatorRan
// as StartOperatorAs does. The cluster's own operator must be running.
func (tb *Testbed) StartReplicaAs(ctx context.Context, cluster, clusterName string) (string, error) {
	return tb.runOperatorAs(ctx, cluster, clusterName, true)
}

func (tb *Testbed) runOperatorAs(ctx context.Context, cluster, clusterName string, beside bool) (string, error) {
	tb.mu.Lock()
	cs := tb.state.Clusters[cluster]
	tb.mu.Unlock()
	if cs == nil || cs.Operator.Kubeconfig == "" || tb.state.Operator.Binary == "" {
		return "", fmt.Errorf("cluster %s runs no operator: was the operator add-on brought up?", cluster)
	}
	_, running := tb.procs.Running(operatorProc(cluster))
	metrics, health := cs.Operator.Metrics, cs.Operator.Health
	switch {
	case running && !beside:
		return "", fmt.Errorf("the operator of cluster %s is running: stop it first (fault stop operator)", cluster)
	case !running && beside:
		return "", fmt.Errorf("the operator of cluster %s is not running, so no replica can start beside it: start it first (fault start operator)", cluster)
	case beside:
		p, err := ports.Free(2)
		if err != nil {
			return "", err
		}
		metrics, health = p[0], p[1]
	}
	w := tb.wait(topology.WaitProcess)
	runCtx, cancel := context.WithTimeout(ctx, w.Timeout.Duration)
	defer cancel()
	args := operatorArgs(clusterName, metrics, health, cs.Operator.LeaderElect, tb.state.Operator.ServiceAccount.Namespace)
	cmd := exec.CommandContext(runCtx, tb.operatorBinary(cs), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cs.Operator.Kubeconfig)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case runCtx.Err() != nil:
		return string(out), fmt.Errorf("%w: started as %q in cluster %s, it was still running after %s", testbed.ErrOperatorRan, clusterName, cluster, w.Timeout.Duration)
	case errors.As(err, &exit):
		return string(out), nil
	case err != nil:
		return "", fmt.Errorf("run the operator of cluster %s as %q: %w", cluster, clusterName, err)
	}
	return string(out), fmt.Errorf("%w: started as %q in cluster %s, it exited without an error", testbed.ErrOperatorRan, clusterName, cluster)
}

// SetOperatorLeaderElection runs the cluster's operator with leader election on or off. The
// operator of gitops/operator elects a leader among its two replicas through a Lease in its
// namespace; the test bed runs one process per cluster and, by default, without it: a
// leader whose API server stops loses the Lease after its renew deadline and exits, and
// nothing on the host restarts it as the kubelet would, so the scenarios that stop an API
// server would lose that cluster's operator. Turned on, the setting is recorded in the run's
// state (the operator fault keeps it) and the process is restarted gracefully (SIGTERM, as
// the kubelet sends), so that a leader gives its Lease up (ReleaseOnCancel) and the next
// process takes it at once. It returns once the new process answers its health probe.
func (tb *Testbed) SetOperatorLeaderElection(ctx context.Context, cluster string, on bool) error {
	tb.mu.Lock()
	cs := tb.state.Clusters[cluster]
	own := tb.state.Operator.Binary
	tb.mu.Unlock()
	if cs == nil {
		return fmt.Errorf("cluster %s is not up", cluster)
	}
	if own == "" {
		return fmt.Errorf("the run has no operator add-on: bring it up with the operator add-on before turning leader election on in cluster %s", cluster)
	}
	_, running := tb.procs.Running(operatorProc(cluster))
	if cs.Operator.LeaderElect == on && running {
		return nil
	}
	return tb.restartOperator(ctx, cluster, fmt.Sprintf("leader election %t", on), func(op *OpState) { op.LeaderElect = on })
}

// restartOperator stops the cluster's operator process, applies change to what the run's state
// records of it (so that `up` and the operator fault start it the same way), saves the state
// and starts the process again, returning once it answers its health probe. what names the
// change in an error.
func (tb *Testbed) restartOperator(ctx context.Context, cluster, what string, change func(*OpState)) error {
	if err := tb.procs.Stop(ctx, operatorProc(cluster), false, tb.wait(topology.WaitProcess)); err != nil {
		return fmt.Errorf("stop the operator of cluster %s: %w", cluster, err)
	}
	tb.mu.Lock()
	cs := tb.state.Clusters[cluster]
	change(&cs.Operator)
	tb.mu.Unlock()
	if err := tb.saveState(); err != nil {
		return err
	}
	if err := tb.startOperator(ctx, cluster, true); err != nil {
		return fmt.Errorf("start the operator %s of cluster %s (%s): %w", tb.operatorBinary(cs), cluster, what, err)
	}
	return nil
}

// OperatorKubeconfig is the path of the kubeconfig the cluster's operator runs with.
func (tb *Testbed) OperatorKubeconfig(cluster string) string {
	if cs := tb.state.Clusters[cluster]; cs != nil {
		return cs.Operator.Kubeconfig
	}
	return ""
}

// writeOperatorKubeconfig requests a token for the operator's ServiceAccount (TokenRequest
// API) and writes a kubeconfig holding only that token and the cluster's CA.
func (tb *Testbed) writeOperatorKubeconfig(ctx context.Context, cluster string) (string, error) {
	sa := tb.state.Operator.ServiceAccount
	if sa.Name == "" {
		return "", fmt.Errorf("the operator base named no ServiceAccount; was the Git add-on run?")
	}
	cl, err := tb.Cluster(cluster)
	if err != nil {
		return "", err
	}
	cfg, err := cl.RESTConfig()
	if err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(operatorTokenSeconds))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for ServiceAccount %s/%s in %s: %w", sa.Namespace, sa.Name, cluster, err)
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return "", err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[cluster] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[sa.Name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: sa.Name, Namespace: sa.Namespace}
	kc.CurrentContext = cluster
	path := filepath.Join(tb.dir, "kubeconfigs", cluster+"-operator.kubeconfig")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o600)
}
