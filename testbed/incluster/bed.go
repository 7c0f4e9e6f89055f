package incluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// The in-cluster bed is a testbed.Bed: the scenario harness and `down --all` use it
// through that interface, as they use the host bed (testbed/host).
var _ testbed.Bed = (*Bed)(nil)

// operatorTokenSeconds is how long an operator token from OperatorConfig lives: longer than
// any suite run.
const operatorTokenSeconds = 24 * 60 * 60

func init() {
	testbed.RegisterBed(provider.AddonsInCluster, openBed)
}

// openBed opens the in-cluster run of o. Without a topology it opens the run's recorded one,
// or, when nothing is recorded, the default topology (Exists is then false), as the host bed
// does. A dry run plans against the run's recorded state when there is one, else against
// the default topology with placeholders for what only a real run knows.
func openBed(o testbed.BedOptions) (testbed.Bed, error) {
	if o.BuildTools {
		// Nothing to refuse: the in-cluster bed builds what it needs (images, Cilium) anyway.
		o.BuildTools = false
	}
	root := o.StateRoot
	if root == "" {
		var err error
		if root, err = testbed.DefaultStateRoot(); err != nil {
			return nil, err
		}
	}
	top := o.Topology
	run := o.Run
	if run == "" {
		run = "polykube"
		if top != nil {
			run = top.Name
		}
	}
	if o.Dir == "" {
		o.Dir = testbed.RunDir(root, run, o.Provider, provider.AddonsInCluster)
	}
	rec, err := recordedState(o.Dir)
	if err != nil {
		return nil, err
	}
	asked := o.Topology
	if top == nil && (rec == nil || o.DryRun) {
		top = topology.Default()
		if rec != nil {
			top, o.K0sHosts = rec.Topology, rec.K0sHosts
		}
	}
	o.Topology = top
	b, err := Open(o)
	if err != nil || !o.DryRun || asked != nil {
		return b, err
	}
	// A dry run of a command on a run (fault, git commit) reads what the run recorded.
	if rec != nil {
		b.state.GitAddr, b.state.Seeded, b.state.Operator, b.state.ServiceAccount = rec.GitAddr, rec.Seeded, rec.Operator, rec.ServiceAccount
		b.state.RegistryAddr, b.state.RegistryImage = rec.RegistryAddr, rec.RegistryImage
		b.env.Image = rec.RegistryImage
		return b, nil
	}
	// No run: the Git server's address is not known; the operator is the one Up would seed.
	b.state.GitAddr = "<git-server>"
	seed, err := datapath.Seed(b.state.Topology, gitrepo.SourcesIn(b.opts.SourceDir), datapath.Image)
	if err != nil {
		return nil, err
	}
	b.state.Operator, b.state.ServiceAccount = seed.Deployment, seed.ServiceAccount
	return b, nil
}

// recordedState reads the state an in-cluster run recorded in dir; nil when there is none.
func recordedState(dir string) (*State, error) {
	return testbed.ReadRecorded[State](statePath(dir))
}

// Stop puts a fault in effect (see faults), announced on a status line.
func (b *Bed) Stop(ctx context.Context, f testbed.Fault, cluster string) error {
	return b.env.Step(faultStep("stop", f, cluster), func() error { return faults.Inject(ctx, b, b.faultRun(), true, f, cluster) })
}

// Start ends a fault (see Stop).
func (b *Bed) Start(ctx context.Context, f testbed.Fault, cluster string) error {
	return b.env.Step(faultStep("start", f, cluster), func() error { return faults.Inject(ctx, b, b.faultRun(), false, f, cluster) })
}

func (b *Bed) faultRun() testbed.FaultRun {
	return testbed.FaultRun{Provider: b.prov.Name(), Cluster: func(name string) error {
		_, err := b.env.Member(name)
		return err
	}}
}

func faultStep(action string, f testbed.Fault, cluster string) string {
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", action, f, cluster))
}

// Capabilities are the provider's.
func (b *Bed) Capabilities() []provider.Capability { return b.prov.Capabilities() }

// AdminConfig reads the cluster's kubeconfig context each time: a restarted kind node gets
// its kubeconfig written again.
func (b *Bed) AdminConfig(cluster string) (*rest.Config, error) {
	m, err := b.env.Member(cluster)
	if err != nil {
		return nil, err
	}
	return provider.RESTConfig(m.Kubeconfig, m.Context)
}

// OperatorConfig is a token of the operator's ServiceAccount in the cluster (TokenRequest),
// requested once per cluster and ServiceAccount: what the operator's pod runs with.
func (b *Bed) OperatorConfig(ctx context.Context, cluster string) (*rest.Config, error) {
	b.opMu.Lock()
	defer b.opMu.Unlock()
	sa := b.state.ServiceAccount
	if sa.Name == "" {
		return nil, fmt.Errorf("this run of the in-cluster bed knows no operator ServiceAccount; was it brought up (polykube-testbed up --provider %s)?", b.state.Topology.Provider)
	}
	admin, err := b.AdminConfig(cluster)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	oc, err := operatorToken(ctx, cs, admin, sa.Namespace, sa.Name, b.opConfigs[cluster])
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", cluster, err)
	}
	if b.opConfigs == nil {
		b.opConfigs = map[string]operatorConfig{}
	}
	b.opConfigs[cluster] = oc
	return oc.cfg, nil
}

// operatorConfig is an operator configuration OperatorConfig issued: a token of the
// ServiceAccount of that UID. A token dies with its ServiceAccount: a `helm uninstall` deletes
// it, and Flux, delivering the operator again, makes a new one (a new UID).
type operatorConfig struct {
	uid types.UID
	cfg *rest.Config
}

// operatorToken is the issued configuration when its ServiceAccount is still the cluster's,
// else a new token of the ServiceAccount (TokenRequest), as a client of the admin's server.
func operatorToken(ctx context.Context, cs kubernetes.Interface, admin *rest.Config, namespace, name string, issued operatorConfig) (operatorConfig, error) {
	cur, err := cs.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return operatorConfig{}, fmt.Errorf("get the operator's ServiceAccount %s/%s: %w", namespace, name, err)
	}
	if issued.cfg != nil && issued.uid == cur.UID {
		return issued, nil
	}
	expiry := int64(operatorTokenSeconds)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return operatorConfig{}, fmt.Errorf("request a token for the operator's ServiceAccount %s/%s: %w", namespace, name, err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	return operatorConfig{uid: cur.UID, cfg: cfg}, nil
}

// MeshReady waits until every member's Cilium reports every remote cluster connected.
func (b *Bed) MeshReady(ctx context.Context) error { return datapath.MeshStatus(ctx, b.env) }

// EchoTemplate is the bed's echo server, from the image the bed built and loaded.
func (b *Bed) EchoTemplate() corev1.PodTemplateSpec { return datapath.EchoTemplate(b.image()) }

// Backends is how many active backends the cluster's Cilium agents hold for the Service.
func (b *Bed) Backends(ctx context.Context, cluster, namespace, service string, port int32) (int, error) {
	return datapath.ServiceBackends(ctx, b.env, cluster, namespace, service, port)
}

// CallPayload runs the bed's probe in the cluster, each answer carrying bytes bytes, and returns
// every call's record.
func (b *Bed) CallPayload(ctx context.Context, cluster, namespace, service string, n int, bytes int64) ([]datapath.CallRecord, error) {
	return datapath.CallPayload(ctx, b.env, cluster, namespace, service, n, bytes)
}

// Call runs the bed's probe in the cluster and returns who answered each call.
func (b *Bed) Call(ctx context.Context, cluster, namespace, service string, n int) ([]string, error) {
	return datapath.Call(ctx, b.env, cluster, namespace, service, n)
}
