package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/fleettest"
	"github.com/polykube/polykube/placement"
)

// result is one run of the CLI.
type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

func runCLI(args ...string) result {
	var out, errOut bytes.Buffer
	start := time.Now()
	code := run(context.Background(), append([]string{"polykube-status"}, args...), &out, &errOut, func(string) string { return "" })
	return result{code: code, stdout: out.String(), stderr: errOut.String(), elapsed: time.Since(start)}
}

func (r result) report(g Gomega) status.Report {
	var rep status.Report
	g.Expect(json.Unmarshal([]byte(r.stdout), &rep)).To(Succeed(), "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	return rep
}

func disagreementKinds(r status.Report) []string {
	var out []string
	for _, d := range r.Disagreements {
		out = append(out, d.Kind+" "+d.Object+" "+strings.Join(d.Clusters, ","))
	}
	return out
}

// TestFleet runs polykube-status end to end against three real API servers. The subtests run
// in order; the last ones stop a cluster and remove CRDs, so they come last.
func TestFleet(t *testing.T) {
	ctx := context.Background()
	f := fleettest.Start(t, "alpha", "beta", "gamma")
	t.Cleanup(f.Stop)
	alpha, beta, gamma := f.Cluster("alpha"), f.Cluster("beta"), f.Cluster("gamma")
	all := []string{"alpha", "beta", "gamma"}
	for _, c := range f.Clusters {
		c.CreateFederation(ctx, t, "fleet", all...)
		c.ApplyReaderRole(ctx, t, "status-reader")
		f.AddUser(t, c, "reader-"+c.Name, "status-reader")
	}
	f.AddUser(t, beta, "nobody-beta", "nobody")
	f.AddContext("badtoken-alpha", &rest.Config{Host: alpha.Env.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: alpha.Env.Config.CAData}, BearerToken: "not-a-token"})

	f.Namespace(ctx, t, "healthy")
	for _, c := range f.Clusters {
		c.CreateWorkload(ctx, t, fleettest.Weighted("healthy", "billing-api", 6, all...), nil)
		c.CreateWorkload(ctx, t, fleettest.Weighted("healthy", "web", 3, "alpha", "beta"), nil)
	}
	kc := f.Kubeconfig(t)
	admins := []string{"--kubeconfig", kc, "--context", "ctx-alpha", "--context", "ctx-beta", "--context", "ctx-gamma"}
	readers := []string{"--kubeconfig", kc, "--context", "reader-alpha", "--context", "reader-beta", "--context", "reader-gamma"}

	t.Run("healthy fleet: exit 0, one row per workload, names from the operators", func(t *testing.T) {
		g := NewWithT(t)
		res := runCLI(append(admins, "-n", "healthy", "-o", "json")...)
		g.Expect(res.code).To(Equal(status.ExitOK), "stdout: %s\nstderr: %s", res.stdout, res.stderr)
		rep := res.report(g)
		g.Expect(rep.Clusters).To(HaveEach(And(HaveField("Reachable", true), HaveField("NameSource", status.NameFromFederation))))
		g.Expect(rep.Disagreements).To(BeEmpty())
		g.Expect(rep.Workloads).To(HaveLen(2))
		g.Expect(rep.Workloads[0]).To(And(HaveField("Name", "billing-api"), HaveField("Ready", true),
			HaveField("DesiredTotal", int32(6)), HaveField("ReadyTotal", int32(6))))
		g.Expect(rep.Workloads[0].Expected).To(Equal([]status.Share{{Cluster: "alpha", Replicas: 2}, {Cluster: "beta", Replicas: 2}, {Cluster: "gamma", Replicas: 2}}))

		table := runCLI(append(admins, "-n", "healthy")...)
		g.Expect(table.code).To(Equal(status.ExitOK))
		g.Expect(table.stdout).To(MatchRegexp(`billing-api\s+healthy\s+2/2 Ready\s+2/2 Ready\s+2/2 Ready\s+6/6`))
		g.Expect(table.stdout).To(MatchRegexp(`web\s+healthy\s+\d/\d Ready\s+\d/\d Ready\s+-\s+3/3`))
		g.Expect(table.stdout).NotTo(ContainSubstring("\x1b["), "no colour when not on a terminal")

		fed := runCLI(append(admins, "federation")...)
		g.Expect(fed.code).To(Equal(status.ExitOK), fed.stderr)
		g.Expect(fed.stdout).To(MatchRegexp(`fleet\s+beta\s+ctx-beta\s+beta\s+True\s+alpha,beta,gamma\s+6 passed`))
		members := runCLI(append(admins, "members", "-o", "yaml")...)
		g.Expect(members.code).To(Equal(status.ExitOK), members.stderr)
		g.Expect(members.stdout).To(ContainSubstring("localContext: ctx-gamma"))
	})

	t.Run("the shipped polykube-status-reader role is enough to read, and cannot create", func(t *testing.T) {
		g := NewWithT(t)
		res := runCLI(append(readers, "-n", "healthy", "-o", "json")...)
		g.Expect(res.code).To(Equal(status.ExitOK), "stdout: %s\nstderr: %s", res.stdout, res.stderr)
		g.Expect(res.report(g).Workloads).To(HaveLen(2))

		// The role grants no write: the API server refuses the reader's own client.
		readerCfg := f.AddUser(t, alpha, "reader-alpha-2", "status-reader")
		s, err := fleettest.Scheme()
		g.Expect(err).NotTo(HaveOccurred())
		raw, err := client.New(readerCfg, client.Options{Scheme: s})
		g.Expect(err).NotTo(HaveOccurred())
		err = raw.Create(ctx, fleettest.Weighted("healthy", "intruder", 1, "alpha"))
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the reader role must not allow create: %v", err)
		err = raw.Delete(ctx, &polykubev1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "healthy", Name: "web"}})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the reader role must not allow delete: %v", err)

		// And the CLI's client path refuses writes even with admin credentials.
		adminViaCLI, err := client.New(status.ReadOnlyConfig(alpha.Env.Config, 5*time.Second), client.Options{Scheme: s})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(adminViaCLI.Create(ctx, fleettest.Weighted("healthy", "intruder", 1, "alpha"))).To(MatchError(status.ErrWriteRefused))
		err = alpha.Admin.Get(ctx, client.ObjectKey{Namespace: "healthy", Name: "intruder"}, &polykubev1alpha1.Workload{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing was created: %v", err)
	})

	t.Run("a forbidden and an unauthorized context are rows with the reason; the others are reported", func(t *testing.T) {
		g := NewWithT(t)
		res := runCLI("--kubeconfig", kc, "--context", "ctx-alpha", "--context", "nobody-beta", "--context", "badtoken-alpha", "--context", "ctx-gamma", "-n", "healthy", "-o", "json")
		g.Expect(res.code).To(Equal(status.ExitUnreachable), "stdout: %s\nstderr: %s", res.stdout, res.stderr)
		rep := res.report(g)
		g.Expect(rep.Clusters[1]).To(And(HaveField("Context", "nobody-beta"), HaveField("Reachable", false), HaveField("Reason", status.ReasonForbidden)))
		g.Expect(rep.Clusters[1].Message).To(And(ContainSubstring("workloads"), ContainSubstring("polykube-status-reader")))
		g.Expect(rep.Clusters[2]).To(And(HaveField("Context", "badtoken-alpha"), HaveField("Reason", status.ReasonUnauthorized)))
		g.Expect(rep.Clusters[0]).To(And(HaveField("Cluster", "alpha"), HaveField("Reachable", true)))
		g.Expect(rep.Clusters[3]).To(And(HaveField("Cluster", "gamma"), HaveField("Reachable", true)))
		g.Expect(rep.Workloads[0].Clusters[0].State).To(Equal(status.StatePresent))
		g.Expect(rep.Workloads[0].Clusters[1].State).To(Equal(status.StateUnknown))
		g.Expect(rep.Summary.Unreachable).To(Equal([]string{"nobody-beta", "badtoken-alpha"}))
	})

	t.Run("a role without Deployments leaves a usable but incomplete view", func(t *testing.T) {
		g := NewWithT(t)
		role := gamma.ApplyReaderRole(ctx, t, "status-reader")
		partial := role.DeepCopy()
		partial.ObjectMeta = metav1.ObjectMeta{Name: "reader-without-deployments"}
		partial.Rules = partial.Rules[:1]
		g.Expect(gamma.Admin.Create(ctx, partial)).To(Succeed())
		gamma.BindClusterRole(ctx, t, partial.Name, "half-reader")
		f.AddUser(t, gamma, "half-gamma", "half-reader")
		kc := f.Kubeconfig(t)

		res := runCLI("--kubeconfig", kc, "--context", "ctx-alpha", "--context", "ctx-beta", "--context", "half-gamma", "-n", "healthy", "-o", "json")
		g.Expect(res.code).To(Equal(status.ExitUnreachable), res.stderr)
		rep := res.report(g)
		g.Expect(rep.Clusters[2]).To(And(HaveField("Reachable", true), HaveField("Cluster", "gamma")))
		g.Expect(rep.Clusters[2].Warnings).To(ConsistOf(ContainSubstring("list deployments.apps: Forbidden")))
		g.Expect(rep.Disagreements).To(BeEmpty())
	})

	t.Run("disagreeing copies are flagged with the clusters involved", func(t *testing.T) {
		g := NewWithT(t)
		f.Namespace(ctx, t, "split")
		// gamma has not applied the new revision: it still holds 6 replicas where the others hold 9.
		alpha.CreateWorkload(ctx, t, fleettest.Weighted("split", "api", 9, all...), nil)
		beta.CreateWorkload(ctx, t, fleettest.Weighted("split", "api", 9, all...), nil)
		gamma.CreateWorkload(ctx, t, fleettest.Weighted("split", "api", 6, all...), nil)
		// web targets alpha and beta only, but gamma still runs a Deployment for it.
		for _, c := range f.Clusters {
			c.CreateWorkload(ctx, t, fleettest.Weighted("split", "web", 2, "alpha", "beta"), nil)
		}
		gamma.CreateDeployment(ctx, t, "split", "web", 2)
		// beta's operator, of the previous release (it writes every target's share, not a
		// digest: decision 0013), computed another split of worker than its spec gives.
		for _, c := range f.Clusters {
			var mutate func(*polykubev1alpha1.WorkloadStatus)
			if c == beta {
				mutate = func(s *polykubev1alpha1.WorkloadStatus) {
					local := *s.Local
					local.DesiredReplicas = 1
					s.Targets = []polykubev1alpha1.TargetStatus{{Cluster: "alpha", DesiredReplicas: 3}, local}
					s.Local, s.Allocation = nil, nil
				}
			}
			c.CreateWorkload(ctx, t, fleettest.Weighted("split", "worker", 4, "alpha", "beta"), mutate)
		}
		// gamma's roster of another federation lacks gamma.
		alpha.CreateFederation(ctx, t, "split-fed", all...)
		beta.CreateFederation(ctx, t, "split-fed", all...)
		gamma.CreateFederation(ctx, t, "split-fed", "alpha", "beta")
		t.Cleanup(func() {
			for _, c := range f.Clusters {
				_ = c.Admin.Delete(ctx, &polykubev1alpha1.Federation{ObjectMeta: metav1.ObjectMeta{Name: "split-fed"}})
			}
		})

		res := runCLI(append(admins, "-n", "split", "-o", "json")...)
		g.Expect(res.code).To(Equal(status.ExitDisagreement), "stdout: %s\nstderr: %s", res.stdout, res.stderr)
		rep := res.report(g)
		g.Expect(disagreementKinds(rep)).To(ConsistOf(
			"SpecMismatch Workload split/api alpha,beta,gamma",
			"AllocationMismatch Workload split/api alpha,beta,gamma", // their digests
			"UntargetedReplicas Workload split/web gamma",
			"AllocationMismatch Workload split/worker alpha,beta,gamma", // beta's list against the others' digests
			"AllocationNotAsComputed Workload split/worker beta",
			"RosterMismatch Federation split-fed alpha,beta,gamma",
		))
		table := runCLI(append(admins, "-n", "split")...)
		g.Expect(table.code).To(Equal(status.ExitDisagreement))
		g.Expect(table.stdout).To(ContainSubstring("Deployment split/web has 2 replicas"))
	})

	t.Run("a slice still rolling out: exit 5", func(t *testing.T) {
		g := NewWithT(t)
		f.Namespace(ctx, t, "rollout")
		for _, c := range f.Clusters {
			var mutate func(*polykubev1alpha1.WorkloadStatus)
			if c == beta {
				mutate = func(s *polykubev1alpha1.WorkloadStatus) {
					s.ReadyReplicas, s.Phase = 0, polykubev1alpha1.PhaseProgressing
				}
			}
			c.CreateWorkload(ctx, t, fleettest.Weighted("rollout", "api", 3, all...), mutate)
		}
		res := runCLI(append(admins, "-n", "rollout", "api")...)
		g.Expect(res.code).To(Equal(status.ExitNotReady), "stdout: %s\nstderr: %s", res.stdout, res.stderr)
		g.Expect(res.stdout).To(ContainSubstring("Workload rollout/api: beta: 0/1 ready, phase Progressing"))
		missing := runCLI(append(admins, "-n", "rollout", "nope")...)
		g.Expect(missing.code).To(Equal(status.ExitNotReady))
		g.Expect(missing.stdout).To(ContainSubstring(`no Workload matches "nope"`))
	})

	t.Run("operator failures of every kind, read with the shipped reader role: exit 7", func(t *testing.T) {
		g := NewWithT(t)
		f.Namespace(ctx, t, "failing")
		for _, c := range f.Clusters {
			var mutate func(*polykubev1alpha1.WorkloadStatus)
			if c == beta {
				// The operator recorded the generation, then failed: the slice runs as before.
				mutate = func(s *polykubev1alpha1.WorkloadStatus) {
					meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: polykubev1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
						Reason: polykubev1alpha1.ReasonReconcileFailed, Message: `invalid resource name "shop/ledger-db": [may not contain '/']`, ObservedGeneration: 1})
				}
			}
			c.CreateWorkload(ctx, t, fleettest.Weighted("failing", "ledger", 3, all...), mutate)
		}
		se := &polykubev1alpha1.ServiceEndpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: "failing", Name: "ledger"},
			Spec: polykubev1alpha1.ServiceEndpointSpec{WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "ledger"},
				Ports: []polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80}}},
		}
		g.Expect(gamma.Admin.Create(ctx, se)).To(Succeed())
		se.Status.ObservedGeneration = se.Generation
		meta.SetStatusCondition(&se.Status.Conditions, metav1.Condition{Type: polykubev1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
			Reason: polykubev1alpha1.ReasonConflict, Message: "Service failing/ledger exists and was not created by this ServiceEndpoint", ObservedGeneration: se.Generation})
		g.Expect(gamma.Admin.Status().Update(ctx, se)).To(Succeed())
		db := &polykubev1alpha1.DatastoreBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "failing", Name: "ledger-db"},
			Spec: polykubev1alpha1.DatastoreBindingSpec{WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "ledger"},
				SecretRef: polykubev1alpha1.LocalSecretReference{Name: "ledger-db"}, Env: []polykubev1alpha1.EnvFromSecretKey{{Name: "DB_URL", Key: "url"}}},
		}
		g.Expect(alpha.Admin.Create(ctx, db)).To(Succeed())
		db.Status.ObservedGeneration = db.Generation
		for _, typ := range []string{polykubev1alpha1.BoundCondition, polykubev1alpha1.ReadyCondition} {
			meta.SetStatusCondition(&db.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionFalse,
				Reason: polykubev1alpha1.ReasonSecretNotFound, Message: "Secret failing/ledger-db not found", ObservedGeneration: db.Generation})
		}
		g.Expect(alpha.Admin.Status().Update(ctx, db)).To(Succeed())

		res := runCLI(append(readers, "-n", "failing", "-o", "json")...)
		g.Expect(res.code).To(Equal(status.ExitFailing), "stdout: %s\nstderr: %s", res.stdout, res.stderr)
		rep := res.report(g)
		g.Expect(rep.Summary.Failing).To(Equal([]string{
			"DatastoreBinding failing/ledger-db in alpha: SecretNotFound",
			"ServiceEndpoint failing/ledger in gamma: Conflict",
			"Workload failing/ledger in beta: ReconcileFailed",
		}))
		for _, cl := range rep.Clusters {
			g.Expect(cl.Warnings).To(BeEmpty(), "the shipped role lists ServiceEndpoints and DatastoreBindings")
		}
		table := runCLI(append(readers, "-n", "failing")...)
		g.Expect(table.stdout).To(MatchRegexp(`ledger\s+failing\s+1/1 Ready\s+1/1 ReconcileFailed\s+1/1 Ready`))
	})

	t.Run("overrides and failover are recomputed from what each cluster reports", func(t *testing.T) {
		g := NewWithT(t)
		f.Namespace(ctx, t, "per-cluster")
		w := fleettest.Weighted("per-cluster", "api", 6, all...)
		w.Spec.Distribution.Failover = &polykubev1alpha1.Failover{}
		w.Spec.Overrides = []polykubev1alpha1.WorkloadOverride{{Name: "gamma-tag",
			ClusterSelector: polykubev1alpha1.ClusterSelector{ClusterNames: []string{"gamma"}},
			Images:          []polykubev1alpha1.ImageOverride{{Container: "app", Tag: "2"}}}}
		for _, c := range f.Clusters {
			c.CreateWorkload(ctx, t, w, nil)
			// What the operator adds, from the copy as the API server stored it (defaults applied):
			// the effective template for its ClusterMember, and the failover of a fleet whose
			// survivors alpha and beta have seen gamma short of its 2.
			stored := &polykubev1alpha1.Workload{}
			g.Expect(c.Admin.Get(ctx, client.ObjectKeyFromObject(w), stored)).To(Succeed())
			member := &polykubev1alpha1.ClusterMember{}
			g.Expect(c.Admin.Get(ctx, client.ObjectKey{Name: c.Name}, member)).To(Succeed())
			tmpl, applied, err := placement.EffectiveTemplate(stored.Spec, member)
			g.Expect(err).NotTo(HaveOccurred())
			st := &stored.Status
			st.AppliedOverrides, st.EffectiveTemplateHash = applied, placement.TemplateHash(tmpl)
			if c == beta {
				st.EffectiveTemplateHash = "0123456789abcdef0123456789abcdef"
			}
			cfg, _, err := placement.FailoverFromWorkload(stored)
			g.Expect(err).NotTo(HaveOccurred())
			state := placement.FailoverState{}
			if c != gamma {
				state.Peers = []placement.PeerFailover{{Cluster: "gamma", Absorbed: 2, ActiveSince: time.Now().Truncate(time.Second)}}
			}
			fo, err := placement.FailoverFor(placement.SpecFromWorkload(stored), c.Name, state.Deficits(), cfg.MaxSurge)
			g.Expect(err).NotTo(HaveOccurred())
			st.Failover = placement.FailoverStatusOf(state, fo)
			st.ReadyReplicas = fo.Replicas
			g.Expect(c.Admin.Status().Update(ctx, stored)).To(Succeed())
		}

		res := runCLI(append(admins, "-n", "per-cluster", "-o", "json")...)
		g.Expect(res.code).To(Equal(status.ExitDisagreement), "stdout: %s\nstderr: %s", res.stdout, res.stderr)
		rep := res.report(g)
		g.Expect(disagreementKinds(rep)).To(ConsistOf("TemplateNotAsComputed Workload per-cluster/api beta"))
		// gamma reports its own 2 ready while alpha and beta absorb them: two warnings, which
		// do not change the exit code.
		g.Expect(rep.Notices).To(HaveLen(4))
		g.Expect(rep.Notices[:2]).To(HaveEach(HaveField("Kind", status.NoticeFailoverActive)))
		g.Expect(rep.Notices[2:]).To(HaveEach(And(HaveField("Kind", status.NoticeDeficitUnconfirmed), HaveField("Level", status.LevelWarning))))
		cells := rep.Workloads[0].Clusters
		g.Expect(cells[2].Template.AppliedOverrides).To(Equal([]string{"gamma-tag"}))
		g.Expect(cells[2].Template.Images).To(Equal([]string{"app=registry.example/api:2"}))
		g.Expect(cells[0].Failover.ExtraReplicas + cells[1].Failover.ExtraReplicas).To(BeEquivalentTo(2))

		table := runCLI(append(admins, "-n", "per-cluster")...)
		g.Expect(table.stdout).To(MatchRegexp(`api\s+per-cluster\s+3/2\+1 Ready\s+3/2\+1 Ready\s+2/2 Ready\s+8/6\+2`))
		g.Expect(table.stdout).To(ContainSubstring("FailoverActive"))
	})

	t.Run("a stopped cluster is unreachable within the timeout; the others are shown", func(t *testing.T) {
		g := NewWithT(t)
		f.StopCluster(t, gamma)
		timeout := 3 * time.Second
		res := runCLI(append(admins, "-n", "healthy", "--timeout", timeout.String(), "-o", "json")...)
		g.Expect(res.code).To(Equal(status.ExitUnreachable), "stdout: %s\nstderr: %s", res.stdout, res.stderr)
		g.Expect(res.elapsed).To(BeNumerically("<", timeout+time.Second))
		rep := res.report(g)
		g.Expect(rep.Clusters[2]).To(And(HaveField("Context", "ctx-gamma"), HaveField("Reachable", false), HaveField("Reason", status.ReasonUnreachable)))
		g.Expect(rep.Clusters[0].Reachable).To(BeTrue())
		g.Expect(rep.Clusters[1].Reachable).To(BeTrue())
		g.Expect(rep.Workloads).To(HaveLen(2))
		g.Expect(rep.Workloads[0].Clusters[0]).To(And(HaveField("State", status.StatePresent), HaveField("Ready", int32(2))))
		g.Expect(disagreementKinds(rep)).To(ConsistOf("UnreportedSlice Workload healthy/billing-api gamma"))
	})

	t.Run("a cluster without the CRDs says so", func(t *testing.T) {
		g := NewWithT(t)
		for _, crd := range []string{"workloads", "federations", "clustermembers"} {
			g.Expect(beta.Admin.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: crd + ".polykube.kismet.io"}})).To(Succeed())
		}
		g.Eventually(func(g Gomega) {
			res := runCLI("--kubeconfig", kc, "--context", "ctx-alpha", "--context", "ctx-beta", "-n", "healthy", "-o", "json")
			g.Expect(res.code).To(Equal(status.ExitUnreachable), res.stderr)
			rep := res.report(g)
			g.Expect(rep.Clusters[1].Reason).To(Equal(status.ReasonCRDsMissing))
			g.Expect(rep.Clusters[1].Message).To(ContainSubstring("CRDs are not installed"))
			g.Expect(rep.Clusters[0].Reachable).To(BeTrue())
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	})
}
