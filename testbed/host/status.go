package host

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

func healthOf(err error, okDetail string) testbed.Health {
	if err != nil {
		return testbed.Health{Detail: err.Error()}
	}
	return testbed.Health{OK: true, Detail: okDetail}
}

// Status checks every cluster and add-on of the run.
func (tb *Testbed) Status(ctx context.Context) *testbed.Report {
	top := tb.state.Topology
	r := &testbed.Report{Run: filepath.Base(tb.dir), Dir: tb.dir, Provider: top.Provider}
	if top.HasAddon(topology.AddonGit) {
		rev, err := "", error(nil)
		if tb.GitURL() == "" {
			err = fmt.Errorf("not started")
		} else {
			rev, err = gitrepo.Head(ctx, tb.GitURL())
		}
		h := healthOf(err, tb.GitURL())
		r.Git, r.Revision = &h, rev
	}
	if top.HasAddon(topology.AddonMeshMirror) {
		st, err := tb.MeshMirrorStatus(ctx)
		detail := ""
		if err == nil {
			var unreachable []string
			for _, c := range top.ClusterNames() {
				if !st.Clusters[c].Reachable {
					unreachable = append(unreachable, c)
				}
			}
			detail = fmt.Sprintf("standing in for Cilium's endpoint-slice synchronisation, every %s, cache TTL %s; %d passes", st.Interval, st.CacheTTL, st.Passes)
			if len(unreachable) > 0 {
				detail += "; cannot read " + strings.Join(unreachable, ", ")
			}
		}
		h := healthOf(err, detail)
		r.MeshMirror = &h
	}
	r.Clusters = make([]testbed.ClusterReport, len(top.Clusters))
	_ = tb.forEachCluster(func(c topology.Cluster) error {
		i := indexOf(top, c.Name)
		cr := testbed.ClusterReport{Name: c.Name}
		if cs := tb.state.Clusters[c.Name]; cs != nil {
			cr.Context, cr.Kubeconfig = cs.Context, cs.Kubeconfig
		}
		cr.APIServer = healthOf(tb.apiReachable(ctx, c.Name), "ready")
		if top.HasAddon(topology.AddonFlux) {
			h := healthOf(tb.fluxHealth(ctx, c.Name, r.Revision), "")
			if h.OK {
				h.Detail = "applied " + r.Revision
			}
			cr.Flux = &h
		}
		if top.HasAddon(topology.AddonArgoCD) {
			h := healthOf(tb.argoCDHealth(ctx, c.Name, r.Revision), "")
			if h.OK {
				h.Detail = "synced " + r.Revision
			}
			cr.ArgoCD = &h
		}
		if top.HasAddon(topology.AddonOperator) {
			h := healthOf(tb.operatorHealth(ctx, c.Name), "healthy")
			cr.Operator = &h
		}
		r.Clusters[i] = cr
		return nil
	})
	return r
}

func indexOf(top *topology.Topology, name string) int {
	for i, c := range top.Clusters {
		if c.Name == name {
			return i
		}
	}
	return -1
}

func (tb *Testbed) fluxHealth(ctx context.Context, cluster, revision string) error {
	for _, p := range []string{sourceProc(cluster), kustomizeProc(cluster)} {
		if _, ok := tb.procs.Running(p); !ok {
			return fmt.Errorf("%s is not running", p)
		}
	}
	cl, err := tb.Client(cluster)
	if err != nil {
		return err
	}
	ks := &kustomizev1.Kustomization{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: testbed.FluxObjectName}, ks); err != nil {
		return err
	}
	ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		if ready == nil {
			return fmt.Errorf("Kustomization has no Ready condition")
		}
		return fmt.Errorf("Kustomization not Ready: %s: %s", ready.Reason, ready.Message)
	}
	if revision != "" && ks.Status.LastAppliedRevision != revision {
		return fmt.Errorf("applied %s, Git is at %s", ks.Status.LastAppliedRevision, revision)
	}
	return nil
}

func (tb *Testbed) operatorHealth(ctx context.Context, cluster string) error {
	if _, ok := tb.procs.Running(operatorProc(cluster)); !ok {
		return fmt.Errorf("%s is not running", operatorProc(cluster))
	}
	cs := tb.state.Clusters[cluster]
	return wait.HTTPOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", cs.Operator.Health))(ctx)
}
