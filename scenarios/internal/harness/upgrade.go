package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/regserver"
)

// The upgrade scenario moves the shared fleet's operators to the previous release and then,
// one cluster at a time, back to this tree's: what Git moving one cluster's entry point does
// to a real fleet. Its teardown puts every cluster back on this tree's operator, whatever
// failed, so the scenarios after it run on the operator under test.

// PreviousOperatorEnv names an operator binary of the previous release to use instead of
// building one (polykube-release previous-operator -cached).
const PreviousOperatorEnv = "POLYKUBE_PREVIOUS_OPERATOR"

// The versions a scenario names: the previous release's (release/PREVIOUS) and this tree's.
const (
	VersionPrevious = "previous"
	VersionThis     = "this"
)

var previousOperator struct {
	once sync.Once
	path string
	err  error
}

// PreviousOperatorBinary is the previous release's operator: $POLYKUBE_PREVIOUS_OPERATOR, else
// the one polykube-release keeps in the cache outside the repository, which it builds from a
// git worktree of the commit release/PREVIOUS names the first time (once per machine and
// previous release, so a cold CI run builds it once).
func PreviousOperatorBinary(ctx context.Context) (string, error) {
	previousOperator.once.Do(func() {
		if p := os.Getenv(PreviousOperatorEnv); p != "" {
			previousOperator.path, previousOperator.err = filepath.Abs(p)
			return
		}
		root, err := repoRoot(ctx)
		if err != nil {
			previousOperator.err = err
			return
		}
		cmd := exec.CommandContext(ctx, "go", "run", "./cmd/polykube-release", "previous-operator", "-cached")
		cmd.Dir = root
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			previousOperator.err = fmt.Errorf("build the previous release's operator (%s in %s): %w\n%s(or set %s to a binary of it)",
				strings.Join(cmd.Args, " "), root, err, stderr.String(), PreviousOperatorEnv)
			return
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		previousOperator.path = lines[len(lines)-1]
	})
	return previousOperator.path, previousOperator.err
}

// repoRoot is the directory of the main module's go.mod (the repository's root).
func repoRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("the scenarios run outside the Polykube module: run them from the repository (go test ./scenarios/)")
	}
	return filepath.Dir(mod), nil
}

// binaryVersion is the version an operator binary reports with --version
// ("polykube-operator vX.Y.Z (commit …), go…, os/arch", or "polykube-operator dev, go…" when
// built without a version or commit), which is what it writes to its ClusterMember's
// status.operatorVersion.
func binaryVersion(ctx context.Context, bin string) (string, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w\n%s", bin, err, out)
	}
	f := strings.Fields(string(out))
	if len(f) < 2 || f[0] != "polykube-operator" {
		return "", fmt.Errorf("%s --version printed %q, not \"polykube-operator VERSION …\"", bin, out)
	}
	return strings.TrimSuffix(f[1], ","), nil
}

// upgrade is what the upgrade scenario knows about the two operators.
type upgrade struct {
	binary  map[string]string // by VersionPrevious, VersionThis (the host bed's)
	git     *gitOperators     // where the operators run in the clusters
	version map[string]string
	running map[string]string // cluster → VersionPrevious or VersionThis
	fleet   map[string]ObjectSnapshot
}

func (sc *Scenario) operatorBinaries() (testbed.OperatorBinaries, error) {
	ob, ok := sc.Fed.Faults().(testbed.OperatorBinaries)
	if !ok {
		return nil, fmt.Errorf("the %s test bed cannot run another operator binary per cluster: its operators run in the clusters", sc.Fed.Provider())
	}
	return ob, nil
}

// RunPreviousOperators moves every cluster to the previous release's operator and waits until
// each reports its version on its ClusterMember. The teardown moves every cluster back to this
// tree's operator. On the host bed an operator is a process, and moving it starts the other
// binary; where the operators run in the clusters, it is a commit (upgradegit.go).
func (sc *Scenario) RunPreviousOperators(ctx context.Context) error {
	prev, err := PreviousOperatorBinary(ctx)
	if err != nil {
		return err
	}
	u := &upgrade{binary: map[string]string{VersionPrevious: prev}, version: map[string]string{}, running: map[string]string{}}
	if u.version[VersionPrevious], err = binaryVersion(ctx, prev); err != nil {
		return err
	}
	first := sc.Fed.Clusters()[0]
	ob, host := sc.hostOperators()
	if host {
		this, own := ob.OperatorBinary(first)
		if !own {
			return fmt.Errorf("cluster %s does not run this tree's operator but %s: an earlier scenario did not restore it", first, this)
		}
		u.binary[VersionThis] = this
		if u.version[VersionThis], err = binaryVersion(ctx, this); err != nil {
			return err
		}
	} else {
		// The Deployment Git's operator/ runs, rolled out (not one an earlier scenario installed).
		if err := sc.awaitOperatorRollout(ctx, WaitConverge, first, ""); err != nil {
			return err
		}
		ctr, err := sc.appliedOperatorContainer(ctx, first)
		if err != nil {
			return err
		}
		if u.version[VersionThis], err = imageVersion(ctx, ctr.Image); err != nil {
			return err
		}
		if u.git, err = sc.previousInGit(ctx, prev, u.version[VersionPrevious], ctr.Image); err != nil {
			return err
		}
	}
	if u.version[VersionPrevious] == u.version[VersionThis] {
		return fmt.Errorf("the previous release's operator %s and this tree's both report version %s: a skew would not show", prev, u.version[VersionThis])
	}
	sc.upgrade = u
	sc.OnTeardown("move every cluster back to this tree's operator", func(ctx context.Context) error {
		if u.git != nil {
			return sc.restoreOperatorsInGit(ctx, u.git, u.version[VersionThis])
		}
		var errs []error
		for _, cl := range sc.Fed.Clusters() {
			if _, own := ob.OperatorBinary(cl); !own {
				errs = append(errs, ob.UseOperator(ctx, cl, ""))
			}
		}
		return errors.Join(errs...)
	})
	for _, cl := range sc.Fed.Clusters() {
		if err := sc.MoveOperator(ctx, cl, VersionPrevious); err != nil {
			return err
		}
	}
	return nil
}

// imageVersion is the version the operator binary of an image reports (--version): the image
// is pulled from its registry and its entrypoint run here. A ClusterMember's status cannot say
// it: after an earlier scenario installed another release, it shows that release's version
// until the restored operator's leader writes its own (k0s run, 2026-12-07: the upgrade then
// expected v0.0.0-testbed.1 of this tree's operator, which reports dev).
func imageVersion(ctx context.Context, image string) (string, error) {
	dir, err := os.MkdirTemp("", "polykube-operator-version-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "polykube-operator")
	if err := regserver.PullEntrypoint(ctx, image, "linux", runtime.GOARCH, bin); err != nil {
		return "", fmt.Errorf("pull the operator of %s to ask its version: %w", image, err)
	}
	return binaryVersion(ctx, bin)
}

// MoveOperator moves the cluster's operator to the previous release's or this tree's (which),
// and waits until the new operator reports its version on the cluster's ClusterMember.
func (sc *Scenario) MoveOperator(ctx context.Context, cluster, which string) error {
	u, err := sc.upgradeState()
	if err != nil {
		return err
	}
	if _, ok := u.version[which]; !ok {
		return fmt.Errorf("no operator release %q: %q or %q", which, VersionPrevious, VersionThis)
	}
	if u.git != nil {
		if err := sc.moveInGit(ctx, u.git, cluster, which); err != nil {
			return err
		}
	} else {
		ob, err := sc.operatorBinaries()
		if err != nil {
			return err
		}
		bin := u.binary[which]
		if which == VersionThis {
			bin = "" // the run's own
		}
		if err := ob.UseOperator(ctx, cluster, bin); err != nil {
			return fmt.Errorf("move cluster %q to the %s operator: %w", cluster, which, err)
		}
	}
	u.running[cluster] = which
	return sc.AwaitOperatorVersion(ctx, cluster, u.version[which])
}

// AwaitOperatorVersion waits until the cluster's own ClusterMember reports version in
// status.operatorVersion: its operator started and wrote status.
func (sc *Scenario) AwaitOperatorVersion(ctx context.Context, cluster, version string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	return Await(ctx, sc.Config.Wait(WaitConverge), fmt.Sprintf("the ClusterMember %s to report operator version %s", cluster, version), func(ctx context.Context) error {
		cm := &polykubev1alpha1.ClusterMember{}
		if err := c.Get(ctx, client.ObjectKey{Name: cluster}, cm); err != nil {
			return err
		}
		if cm.Status.OperatorVersion != version {
			return fmt.Errorf("status.operatorVersion %q", cm.Status.OperatorVersion)
		}
		return nil
	})
}

func (sc *Scenario) upgradeState() (*upgrade, error) {
	if sc.upgrade == nil {
		return nil, errors.New("the fleet was not started on the previous release: add \"Given every cluster runs the operator of the previous release\"")
	}
	return sc.upgrade, nil
}

// RememberFleet records, in every cluster, every pod's UID and every managed object's UID and
// generation (the scenario's Deployments, Services, HPAs, Polykube objects and Secrets, and
// the ClusterMembers and Federations): what an upgrade must leave as it is.
func (sc *Scenario) RememberFleet(ctx context.Context) error {
	u, err := sc.upgradeState()
	if err != nil {
		return err
	}
	// A Deployment still rolling out (a DatastoreBinding applied a moment ago changes its
	// template) would delete its old pods after the record, and the first move would be
	// blamed for it: record a fleet at rest.
	if err := Await(ctx, sc.Config.Wait(WaitConverge), "every Deployment of the scenario to have rolled out in every cluster", func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			deploys := &appsv1.DeploymentList{}
			if err := c.List(ctx, deploys, client.InNamespace(sc.Namespace)); err != nil {
				return err
			}
			pods := &corev1.PodList{}
			if err := c.List(ctx, pods, client.InNamespace(sc.Namespace)); err != nil {
				return err
			}
			return fleetAtRest(deploys.Items, pods.Items)
		})
	}); err != nil {
		return err
	}
	u.fleet = map[string]ObjectSnapshot{}
	pods := 0
	for _, cl := range sc.Fed.Clusters() {
		snap, err := sc.fleetSnapshot(ctx, cl)
		if err != nil {
			return err
		}
		for k := range snap {
			if strings.HasPrefix(k, "Pod ") {
				pods++
			}
		}
		u.fleet[cl] = snap
	}
	if pods == 0 {
		return errors.New("no pod runs in any cluster: the Workloads have not converged, so an upgrade would have nothing to restart")
	}
	return nil
}

// fleetAtRest says whether every Deployment has rolled out (its current template observed, every
// replica of it updated and available, no replica of an older one left) and no pod of the
// namespace is terminating (nil when all holds).
func fleetAtRest(deploys []appsv1.Deployment, pods []corev1.Pod) error {
	var errs []error
	for _, d := range deploys {
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.AvailableReplicas != want || st.Replicas != want {
			errs = append(errs, fmt.Errorf("Deployment %s rolling out: generation %d observed %d, %d replicas wanted, %d updated, %d available, %d in all",
				d.Name, d.Generation, st.ObservedGeneration, want, st.UpdatedReplicas, st.AvailableReplicas, st.Replicas))
		}
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			errs = append(errs, fmt.Errorf("pod %s is terminating", p.Name))
		}
	}
	return errors.Join(errs...)
}

// CheckFleetKept checks, for the hold wait, that every cluster still has exactly the pods and
// objects RememberFleet saw, with the same UIDs and generations: no pod restarted, nothing
// deleted, replaced or rewritten (a changed pod template raises a Deployment's generation even
// on kwok, where no pod would roll).
func (sc *Scenario) CheckFleetKept(ctx context.Context) error {
	u, err := sc.upgradeState()
	if err != nil {
		return err
	}
	if u.fleet == nil {
		return errors.New("the fleet's pods and objects were not recorded: add \"And I record every pod and every managed object in every cluster\"")
	}
	return Hold(ctx, sc.Config.Wait(WaitHold), "every pod and managed object of the fleet", func(ctx context.Context) error {
		var errs []error
		for _, cl := range sc.Fed.Clusters() {
			now, err := sc.fleetSnapshot(ctx, cl)
			if err != nil {
				return err
			}
			if d := diffSnapshots(u.fleet[cl], now); d != "" {
				errs = append(errs, fmt.Errorf("cluster %q (%s): %s", cl, u.describe(), d))
			}
		}
		return errors.Join(errs...)
	})
}

// describe says which cluster runs which operator.
func (u *upgrade) describe() string {
	var parts []string
	for _, cl := range sortedKeys(u.running) {
		parts = append(parts, cl+" on "+u.version[u.running[cl]])
	}
	return strings.Join(parts, ", ")
}

// fleetSnapshot is Snapshot plus the scenario's pods (by UID) and HPAs in the cluster.
func (sc *Scenario) fleetSnapshot(ctx context.Context, cluster string) (ObjectSnapshot, error) {
	snap, err := sc.Snapshot(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("snapshot cluster %q: %w", cluster, err)
	}
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(sc.Namespace)); err != nil {
		return nil, fmt.Errorf("list pods in cluster %q: %w", cluster, err)
	}
	for _, p := range pods.Items {
		snap["Pod "+p.Namespace+"/"+p.Name] = "uid=" + string(p.UID)
	}
	hpas := &autoscalingv2.HorizontalPodAutoscalerList{}
	if err := c.List(ctx, hpas, client.InNamespace(sc.Namespace)); err != nil {
		return nil, fmt.Errorf("list HPAs in cluster %q: %w", cluster, err)
	}
	for _, h := range hpas.Items {
		snap["HorizontalPodAutoscaler "+h.Namespace+"/"+h.Name] = fmt.Sprintf("uid=%s generation=%d", h.UID, h.Generation)
	}
	return snap, nil
}

// diffSnapshots says what differs between two snapshots ("" when nothing).
func diffSnapshots(before, now ObjectSnapshot) string {
	if maps.Equal(before, now) {
		return ""
	}
	var diffs []string
	for _, k := range sortedKeys(before) {
		if v, ok := now[k]; !ok {
			diffs = append(diffs, "deleted "+k)
		} else if v != before[k] {
			diffs = append(diffs, fmt.Sprintf("changed %s (%s → %s)", k, before[k], v))
		}
	}
	for _, k := range sortedKeys(now) {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, "created "+k)
		}
	}
	return strings.Join(diffs, "; ")
}

// CheckVersions runs polykube-status until it shows each cluster's operator version as want
// (cluster → VersionPrevious or VersionThis) and a VersionSkew notice naming every cluster
// exactly while the versions differ.
func (sc *Scenario) CheckVersions(ctx context.Context, want map[string]string) error {
	u, err := sc.upgradeState()
	if err != nil {
		return err
	}
	if sc.Status == nil {
		if _, err := sc.RunStatus(ctx, "table"); err != nil {
			return err
		}
	}
	versions := map[string]bool{}
	for cl, which := range want {
		v, ok := u.version[which]
		if !ok {
			return fmt.Errorf("cluster %q: the version is %q or %q, not %q", cl, VersionPrevious, VersionThis, which)
		}
		versions[v] = true
	}
	skew := len(versions) > 1
	return sc.AwaitStatus(ctx, "each cluster's operator version", func(run *StatusRun) error {
		var errs []error
		for _, row := range run.Report.Clusters {
			which, ok := want[row.Context]
			if !ok {
				continue
			}
			if row.OperatorVersion != u.version[which] {
				errs = append(errs, fmt.Errorf("cluster %q shows version %q, want %s (%s)", row.Context, row.OperatorVersion, u.version[which], which))
			}
		}
		var notice *status.Notice
		for i, n := range run.Report.Notices {
			if n.Kind == status.NoticeVersionSkew {
				notice = &run.Report.Notices[i]
			}
		}
		switch {
		case skew && notice == nil:
			errs = append(errs, errors.New("no VersionSkew notice while the versions differ"))
		case skew && len(notice.Clusters) != len(want):
			errs = append(errs, fmt.Errorf("the VersionSkew notice names %v, want every cluster: %s", notice.Clusters, notice.Message))
		case !skew && notice != nil:
			errs = append(errs, fmt.Errorf("a VersionSkew notice while every cluster runs one version: %s", notice.Message))
		}
		return errors.Join(errs...)
	})
}
