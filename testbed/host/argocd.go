package host

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Argo CD delivery (Topology.Delivery argocd) is shape (b) of issue 37: every cluster runs an
// Argo CD of its own (application-controller, repo-server and a Redis, as processes beside the
// cluster, like Flux's) that holds that cluster's credentials only and delivers to it alone.
// In a pod that is Argo CD's in-cluster destination, which takes the pod's ServiceAccount;
// off-cluster there is none, so the one cluster is registered by a cluster Secret with its
// address and the credentials Flux would run with, and in-cluster is turned off. Two
// Applications stand where Flux's two Kustomizations stand: polykube-operator (operator/) and
// polykube (clusters/<name>/).

// ArgoCDPorts are the loopback ports of a cluster's Argo CD processes; the ApplicationSet
// ones only beside the hub of delivery argocd-central.
type ArgoCDPorts struct {
	Redis, RepoServer, RepoServerMetrics, ControllerMetrics int
	AppSetMetrics, AppSetWebhook                            int `json:",omitempty"`
}

func redisProc(cluster string) string      { return cluster + "-argocd-redis" }
func repoServerProc(cluster string) string { return cluster + "-argocd-repo-server" }
func appControllerProc(cluster string) string {
	return cluster + "-argocd-application-controller"
}
func appSetControllerProc(cluster string) string {
	return cluster + "-argocd-applicationset-controller"
}

// upArgoCD installs Argo CD in every cluster: its CRDs, settings and project, the processes,
// then the two Applications; it returns when every cluster synced the seeded revision.
func (tb *Testbed) upArgoCD(ctx context.Context) error {
	tc, err := tb.toolchain()
	if err != nil {
		return err
	}
	crdDir, err := tc.ArgoCDCRDs(ctx)
	if err != nil {
		return err
	}
	wrapper, err := tc.ArgoCDGitVerifyWrapper(ctx)
	if err != nil {
		return err
	}
	if err := tb.installGitVerifyWrapper(wrapper); err != nil {
		return err
	}
	src, err := tb.sourceDir()
	if err != nil {
		return err
	}
	health, err := testbed.LoadArgoCDHealthChecks(filepath.Join(src, testbed.ArgoCDHealthChecks))
	if err != nil {
		return err
	}
	if tb.state.Topology.Delivery == topology.DeliveryArgoCDCentral {
		return tb.upArgoCDCentral(ctx, src, crdDir, health)
	}
	return tb.forEachCluster(func(c topology.Cluster) error {
		cl, err := tb.Client(c.Name)
		if err != nil {
			return err
		}
		if err := testbed.ApplyCRDDir(ctx, cl, crdDir, tb.wait(topology.WaitCRDs)); err != nil {
			return err
		}
		if err := applyArgoCDSettings(ctx, cl, health, tb.wait(topology.WaitCRDs)); err != nil {
			return err
		}
		if err := tb.applyClusterSecret(ctx, cl, c.Name, nil); err != nil {
			return err
		}
		if err := tb.startArgoCD(ctx, c.Name); err != nil {
			return err
		}
		if err := tb.applyApplications(ctx, cl, c.Name); err != nil {
			return err
		}
		return tb.waitSynced(ctx, c.Name, tb.state.Git.Seeded, tb.wait(topology.WaitFluxReady))
	})
}

// applyArgoCDSettings creates the namespace, argocd-cm (with the health checks),
// argocd-secret and the default AppProject, which Argo CD's API server would create and
// which the test bed does not run.
func applyArgoCDSettings(ctx context.Context, cl client.Client, health map[string]string, w topology.Wait) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testbed.ArgoCDNamespace}}
	if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", testbed.ArgoCDNamespace, err)
	}
	labels := map[string]string{"app.kubernetes.io/part-of": "argocd"}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "argocd-cm", Namespace: testbed.ArgoCDNamespace, Labels: labels},
		Data:       map[string]string{},
	}
	for k, v := range health {
		cm.Data[k] = v
	}
	// The cluster is registered by its address (applyClusterSecret): nothing may deliver
	// through a pod's ServiceAccount, which a process beside the cluster does not have.
	cm.Data["cluster.inClusterEnabled"] = "false"
	if err := cl.Patch(ctx, cm, client.Apply, testbed.FieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("apply ConfigMap %s/argocd-cm: %w", testbed.ArgoCDNamespace, err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "argocd-secret", Namespace: testbed.ArgoCDNamespace, Labels: labels},
		Data: map[string][]byte{"server.secretkey": []byte(base64.StdEncoding.EncodeToString(key))}}
	if err := cl.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s/argocd-secret: %w", testbed.ArgoCDNamespace, err)
	}
	project := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
		"metadata": map[string]any{"name": "default", "namespace": testbed.ArgoCDNamespace},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	// The CRDs are established, but a loaded API server may serve the kind a moment later
	// (the client finds no REST mapping): apply again within the wait. Other errors fail at once.
	var applyErr error
	if err := wait.For(ctx, w, "the AppProject kind to be served", func(ctx context.Context) error {
		applyErr = cl.Patch(ctx, project, client.Apply, testbed.FieldOwner, client.ForceOwnership)
		if applyErr != nil && !apimeta.IsNoMatchError(applyErr) {
			return wait.Stop(applyErr)
		}
		return applyErr
	}); err != nil {
		if applyErr == nil {
			applyErr = err
		}
		return fmt.Errorf("apply AppProject %s/default: %w", testbed.ArgoCDNamespace, applyErr)
	}
	return nil
}

// startArgoCD starts the cluster's Redis, repo-server and application-controller (those not
// running), with ports recorded on first start so that a restart reuses them.
func (tb *Testbed) startArgoCD(ctx context.Context, cluster string) error {
	tb.mu.Lock()
	cs := tb.state.Clusters[cluster]
	tb.mu.Unlock()
	if cs == nil {
		return fmt.Errorf("cluster %s is not up", cluster)
	}
	central := tb.state.Topology.Delivery == topology.DeliveryArgoCDCentral
	if cs.ArgoCD.Redis == 0 {
		p, err := ports.Free(6)
		if err != nil {
			return err
		}
		tb.mu.Lock()
		cs.ArgoCD = ArgoCDPorts{p[0], p[1], p[2], p[3], 0, 0}
		if central {
			cs.ArgoCD.AppSetMetrics, cs.ArgoCD.AppSetWebhook = p[4], p[5]
		}
		tb.mu.Unlock()
		if err := tb.saveState(); err != nil {
			return err
		}
	}
	redis, err := exec.LookPath("redis-server")
	if err != nil {
		return errNoRedis
	}
	bins, err := tb.argoCDBinaries(cluster)
	if err != nil {
		return err
	}
	dir := filepath.Join(tb.dir, "argocd", cluster)
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	redisAddr := fmt.Sprintf("127.0.0.1:%d", cs.ArgoCD.Redis)
	if err := tb.startProc(ctx, proc.Spec{
		Name: redisProc(cluster), Path: redis, Dir: dir,
		Args: []string{"--bind", "127.0.0.1", "--port", fmt.Sprint(cs.ArgoCD.Redis), "--save", "", "--appendonly", "no", "--dir", dir},
	}); err != nil {
		return err
	}
	if err := wait.For(ctx, tb.wait(topology.WaitProcess), redisProc(cluster)+" to accept connections on "+redisAddr, func(ctx context.Context) error {
		if _, ok := tb.procs.Running(redisProc(cluster)); !ok {
			return wait.Stop(fmt.Errorf("%s exited; see its log %s", redisProc(cluster), tb.procs.LogPath(redisProc(cluster))))
		}
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", redisAddr)
		if err == nil {
			_ = c.Close()
		}
		return err
	}); err != nil {
		return err
	}
	interval := fmt.Sprint(int(tb.state.Topology.Flux.Interval.Seconds()))
	// Argo CD reads its namespace from the kubeconfig's context or --namespace; kustomize is
	// looked up in PATH; the repo-server keeps its clones under TMPDIR (one per cluster).
	env := []string{"KUBECONFIG=" + cs.Kubeconfig, "PATH=" + bins.path, "TMPDIR=" + tmp, "ARGOCD_GPG_ENABLED=false"}
	if err := tb.startProc(ctx, proc.Spec{
		Name: repoServerProc(cluster), Path: bins.repoServer, Env: env, Dir: dir,
		Args: []string{
			"--address=127.0.0.1", fmt.Sprintf("--port=%d", cs.ArgoCD.RepoServer),
			"--metrics-address=127.0.0.1", fmt.Sprintf("--metrics-port=%d", cs.ArgoCD.RepoServerMetrics),
			"--disable-tls", "--client-ca-path=", "--redis=" + redisAddr,
			// The branch's head is cached this long; Fetch asks for a fresh look anyway.
			"--revision-cache-expiration=" + interval + "s",
			"--logformat=text",
		},
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/healthz", cs.ArgoCD.RepoServerMetrics),
	}); err != nil {
		return err
	}
	if err := tb.startProc(ctx, proc.Spec{
		Name: appControllerProc(cluster), Path: bins.controller, Env: env, Dir: dir,
		Args: []string{
			"--namespace=" + testbed.ArgoCDNamespace,
			fmt.Sprintf("--repo-server=127.0.0.1:%d", cs.ArgoCD.RepoServer), "--repo-server-plaintext",
			fmt.Sprintf("--metrics-port=%d", cs.ArgoCD.ControllerMetrics),
			"--redis=" + redisAddr,
			"--app-resync=" + interval,
			// Argo CD 3 keeps each resource's health in Redis only; the Application's status
			// should show it (status.resources[].health), as users read it.
			"--persist-resource-health=true",
			"--logformat=text",
		},
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/healthz", cs.ArgoCD.ControllerMetrics),
	}); err != nil || !central {
		return err
	}
	// The hub's ApplicationSet controller: it reads the ApplicationSets and cluster Secrets of
	// the argocd namespace (the kubeconfig's context has none: --namespace) and writes the
	// Applications. Its webhook server, which this bed does not call, listens on loopback. It
	// registers no health check (its probe server answers 404): it counts as up once its
	// metrics answer, and the probe server is off.
	return tb.startProc(ctx, proc.Spec{
		Name: appSetControllerProc(cluster), Path: bins.appSetController, Env: env, Dir: dir,
		Args: []string{
			"--namespace=" + testbed.ArgoCDNamespace,
			fmt.Sprintf("--argocd-repo-server=127.0.0.1:%d", cs.ArgoCD.RepoServer), "--repo-server-plaintext",
			fmt.Sprintf("--metrics-addr=127.0.0.1:%d", cs.ArgoCD.AppSetMetrics),
			"--probe-addr=0",
			fmt.Sprintf("--webhook-addr=127.0.0.1:%d", cs.ArgoCD.AppSetWebhook),
			"--logformat=text",
		},
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", cs.ArgoCD.AppSetMetrics),
	})
}

var errNoRedis = errors.New("delivery argocd runs a Redis per cluster, and redis-server is not in PATH: install it (Debian: apt-get install -y --no-install-recommends redis-server)")

// installGitVerifyWrapper puts Argo CD's git-verify-wrapper.sh, executable, in the directory
// of the Argo CD links, which the repo-server has first in PATH.
func (tb *Testbed) installGitVerifyWrapper(src string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read Argo CD's git-verify-wrapper.sh: %w", err)
	}
	dir := tb.argoCDBinDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "git-verify-wrapper.sh"), data, 0o755)
}

func (tb *Testbed) argoCDBinDir() string { return filepath.Join(tb.dir, "argocd", "bin") }

type argoCDBins struct{ repoServer, controller, appSetController, path string }

// argoCDBinaries links Argo CD's one binary under the names it dispatches on (argv[0]), and
// returns a PATH that holds the pinned kustomize and git-verify-wrapper.sh first.
func (tb *Testbed) argoCDBinaries(cluster string) (argoCDBins, error) {
	argocd, err := tb.binary(toolchain.ArgoCD)
	if err != nil {
		return argoCDBins{}, err
	}
	kustomize, err := tb.binary(toolchain.Kustomize)
	if err != nil {
		return argoCDBins{}, err
	}
	dir := tb.argoCDBinDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return argoCDBins{}, err
	}
	link := func(target, name string) (string, error) {
		p := filepath.Join(dir, name)
		if cur, err := os.Readlink(p); err == nil && cur == target {
			return p, nil
		}
		_ = os.Remove(p)
		return p, os.Symlink(target, p)
	}
	var b argoCDBins
	if b.repoServer, err = link(argocd, "argocd-repo-server"); err != nil {
		return b, err
	}
	if b.controller, err = link(argocd, "argocd-application-controller"); err != nil {
		return b, err
	}
	if b.appSetController, err = link(argocd, "argocd-applicationset-controller"); err != nil {
		return b, err
	}
	if _, err = link(kustomize, "kustomize"); err != nil {
		return b, err
	}
	b.path = dir + string(os.PathListSeparator) + os.Getenv("PATH")
	return b, nil
}

// applyClusterSecret registers the cluster with the Argo CD of cl (its own, or the hub of
// delivery argocd-central): a cluster Secret named after it, with the labels given, its API
// server's address and the credentials of its kubeconfig (client certificates or a token, as
// Argo CD's cluster config takes them).
func (tb *Testbed) applyClusterSecret(ctx context.Context, cl client.Client, cluster string, labels map[string]string) error {
	c, err := tb.Cluster(cluster)
	if err != nil {
		return err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return fmt.Errorf("read the TLS files of %s's kubeconfig: %w", cluster, err)
	}
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil || (cfg.BearerToken == "" && len(cfg.CertData) == 0) {
		return fmt.Errorf("cluster %s: delivery argocd registers the cluster with Argo CD by the credentials of its kubeconfig, which must be client certificates or a token (not an exec or auth plugin)", cluster)
	}
	type tlsConfig struct {
		Insecure bool   `json:"insecure,omitempty"`
		CAData   []byte `json:"caData,omitempty"`
		CertData []byte `json:"certData,omitempty"`
		KeyData  []byte `json:"keyData,omitempty"`
	}
	config, err := json.Marshal(struct {
		BearerToken string    `json:"bearerToken,omitempty"`
		TLS         tlsConfig `json:"tlsClientConfig"`
	}{cfg.BearerToken, tlsConfig{cfg.Insecure, cfg.CAData, cfg.CertData, cfg.KeyData}})
	if err != nil {
		return err
	}
	all := map[string]string{"argocd.argoproj.io/secret-type": "cluster"}
	for k, v := range labels {
		all[k] = v
	}
	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-" + cluster, Namespace: testbed.ArgoCDNamespace,
			Labels: all},
		StringData: map[string]string{"name": cluster, "server": cfg.Host, "config": string(config)},
	}
	if err := cl.Patch(ctx, secret, client.Apply, testbed.FieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("apply the cluster Secret %s/%s: %w", testbed.ArgoCDNamespace, secret.Name, err)
	}
	return nil
}

// applyApplications creates or updates the cluster's Applications.
func (tb *Testbed) applyApplications(ctx context.Context, cl client.Client, cluster string) error {
	for _, a := range testbed.Applications(tb.GitURL(), cluster, tb.state.Operator.Deployment) {
		if err := cl.Patch(ctx, a, client.Apply, testbed.FieldOwner, client.ForceOwnership); err != nil {
			return fmt.Errorf("apply Application %s/%s: %w", testbed.ArgoCDNamespace, a.GetName(), err)
		}
	}
	return nil
}

// refreshArgoCD asks Argo CD in every reachable cluster to look at Git now (the
// argocd.argoproj.io/refresh annotation, as `argocd app get --refresh` sets it); automated
// sync then applies a new revision at once.
func (tb *Testbed) refreshArgoCD(ctx context.Context) {
	patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`)
	_ = tb.forEachCluster(func(c topology.Cluster) error {
		hub, names := tb.argoCDApplications(c.Name)
		cl, err := tb.Client(hub)
		if err != nil {
			return err
		}
		for _, name := range names {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(testbed.ApplicationGVK)
			u.SetNamespace(testbed.ArgoCDNamespace)
			u.SetName(name)
			if err := cl.Patch(ctx, u, client.RawPatch("application/merge-patch+json", patch)); err != nil {
				return err
			}
		}
		return nil
	})
}

// argoCDApplications returns the cluster that holds the Applications delivering to the
// cluster (the cluster itself, or the hub) and their names.
func (tb *Testbed) argoCDApplications(cluster string) (string, []string) {
	top := tb.state.Topology
	if top.Delivery == topology.DeliveryArgoCDCentral {
		return top.ArgoCDHub(cluster), []string{testbed.CentralApplicationName(cluster)}
	}
	var names []string
	for _, a := range testbed.Applications(tb.GitURL(), cluster, tb.state.Operator.Deployment) {
		names = append(names, a.GetName())
	}
	return cluster, names
}

// waitSynced waits until every Application delivering to the cluster synced the revision.
func (tb *Testbed) waitSynced(ctx context.Context, cluster, revision string, w topology.Wait) error {
	commit := testbed.ArgoCDCommit(revision)
	hub, names := tb.argoCDApplications(cluster)
	cl, err := tb.Client(hub)
	if err != nil {
		return err
	}
	return wait.For(ctx, w, fmt.Sprintf("Argo CD in %s to sync %s to %s", hub, revision, cluster), func(ctx context.Context) error {
		for _, name := range names {
			app := &unstructured.Unstructured{}
			app.SetGroupVersionKind(testbed.ApplicationGVK)
			if err := cl.Get(ctx, client.ObjectKey{Namespace: testbed.ArgoCDNamespace, Name: name}, app); err != nil {
				return err
			}
			if err := testbed.AppSynced(app, commit); err != nil {
				return err
			}
		}
		return nil
	})
}

// stopArgoCD stops the cluster's Argo CD controllers (the flux fault, when Argo CD delivers);
// Redis keeps running, as a cache outliving its clients would. The hub of argocd-central
// delivers to every cluster: stopping it for one is not this fault.
func (tb *Testbed) stopArgoCD(ctx context.Context, cluster string) error {
	if tb.state.Topology.Delivery == topology.DeliveryArgoCDCentral {
		return errCentralFault
	}
	return errors.Join(
		tb.procs.Stop(ctx, appControllerProc(cluster), false, tb.wait(topology.WaitProcess)),
		tb.procs.Stop(ctx, repoServerProc(cluster), false, tb.wait(topology.WaitProcess)))
}

// argoCDHealth checks the Argo CD processes delivering to the cluster (its own, or the hub's)
// and that its Applications synced the revision.
func (tb *Testbed) argoCDHealth(ctx context.Context, cluster, revision string) error {
	hub, names := tb.argoCDApplications(cluster)
	procs := []string{redisProc(hub), repoServerProc(hub), appControllerProc(hub)}
	if tb.state.Topology.Delivery == topology.DeliveryArgoCDCentral {
		procs = append(procs, appSetControllerProc(hub))
	}
	for _, p := range procs {
		if _, ok := tb.procs.Running(p); !ok {
			return fmt.Errorf("%s is not running", p)
		}
	}
	cl, err := tb.Client(hub)
	if err != nil {
		return err
	}
	for _, name := range names {
		app := &unstructured.Unstructured{}
		app.SetGroupVersionKind(testbed.ApplicationGVK)
		if err := cl.Get(ctx, client.ObjectKey{Namespace: testbed.ArgoCDNamespace, Name: name}, app); err != nil {
			return err
		}
		if revision == "" {
			continue
		}
		if err := testbed.AppSynced(app, testbed.ArgoCDCommit(revision)); err != nil {
			return err
		}
	}
	return nil
}
