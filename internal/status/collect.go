package status

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// DefaultTimeout is the per-cluster timeout when none is given.
const DefaultTimeout = 5 * time.Second

// DefaultParallel is how many clusters are read at once when Query.Parallel is not set. Each
// read may start the context's exec credential plugin (a cloud CLI, a browser login), so a
// large kubeconfig must not start dozens of them together.
const DefaultParallel = 8

// abandonGrace is how long Collect still waits, after a cluster's deadline, for its read to
// return with its own error. Everything in a read but an exec credential plugin honours the
// context, so a read that is still busy after this is stuck where no deadline reaches.
const abandonGrace = 250 * time.Millisecond

// ErrExecPluginTimeout is the error of a context whose exec credential plugin was still running
// when the context's deadline passed.
var ErrExecPluginTimeout = errors.New("the exec credential plugin did not answer within --timeout")

// Snapshot is what one context returned: its objects, or why it could not be read.
type Snapshot struct {
	Context string
	Server  string
	// Err is set when the context could not be read; Reason classifies it.
	Err    error
	Reason string
	// Advice replaces Advice(Reason) when the cause is known more precisely than the reason.
	Advice string
	// Warnings are partial failures that leave the rest of the snapshot usable.
	Warnings []string

	Workloads      []polykubev1alpha1.Workload
	Federations    []polykubev1alpha1.Federation
	ClusterMembers []polykubev1alpha1.ClusterMember
	Deployments    []appsv1.Deployment
	// ServiceEndpoints and DatastoreBindings are read for the failures their operator reports.
	ServiceEndpoints  []polykubev1alpha1.ServiceEndpoint
	DatastoreBindings []polykubev1alpha1.DatastoreBinding

	// objs holds the Workloads and Deployments in compact form between collect and Merge, in
	// place of the two fields above (Read); Collect moves them into those fields.
	objs *reducedObjects
}

// Query says what to read in every cluster.
type Query struct {
	// Namespace restricts Workloads and Deployments; empty means all namespaces.
	Namespace string
	// Names are workload name patterns (path.Match syntax); empty means all.
	Names   []string
	Timeout time.Duration
	// Parallel is how many clusters are read at once; 0 means DefaultParallel.
	Parallel int
	// PageSize is how many objects one list request asks for; 0 means DefaultPageSize.
	PageSize int64
}

// ReaderFactory builds the Reader of a target. Collect uses NewReader unless a test swaps it.
type ReaderFactory func(t Target, timeout time.Duration) (Reader, error)

// Collect queries the targets, q.Parallel at a time and each under its own deadline, and returns
// the snapshots in target order. A cluster's deadline starts when its read starts, so a call
// takes about one timeout per q.Parallel clusters that do not answer. It never fails as a whole:
// a context that cannot be read is a Snapshot with Err and Reason. The copies of a Workload whose
// spec is the same in several clusters share the spec's slices and maps: the snapshots are
// read-only.
func Collect(ctx context.Context, targets []Target, q Query, newReader ReaderFactory) []Snapshot {
	out := collect(ctx, targets, q, newReader)
	for i := range out {
		out[i].objs.expand(&out[i])
		out[i].objs = nil
	}
	return out
}

// Read is Merge(Collect(...)) holding each cluster's Workloads and Deployments in their
// compact form only (reduced.go), never as full objects: what the CLI runs.
func Read(ctx context.Context, targets []Target, q Query, newReader ReaderFactory) Report {
	return Merge(collect(ctx, targets, q, newReader), q)
}

func collect(ctx context.Context, targets []Target, q Query, newReader ReaderFactory) []Snapshot {
	if q.Timeout <= 0 {
		q.Timeout = DefaultTimeout
	}
	if q.Parallel <= 0 {
		q.Parallel = DefaultParallel
	}
	if newReader == nil {
		newReader = func(t Target, timeout time.Duration) (Reader, error) { return NewReader(t.Config, timeout) }
	}
	sh := newSharer()
	out := make([]Snapshot, len(targets))
	eachTarget(ctx, len(targets), q.Parallel, q.Timeout, func(cctx context.Context, i int) {
		out[i] = collectWithin(cctx, targets[i], q, newReader, sh)
	}, func(i int, err error) {
		// Interrupted: the contexts not started yet are not read at all.
		t := targets[i]
		out[i] = Snapshot{Context: t.Context, Server: t.Server, Err: fmt.Errorf("not queried: %w", err), Reason: Classify(ctx, err)}
	})
	return out
}

// eachTarget runs do for targets 0..n-1, at most parallel at a time, each with a deadline of
// timeout from when it starts, and returns when all are done. Once ctx ends, the targets not
// started yet are given to skip (when set) instead. Collect, events and bundle share it.
func eachTarget(ctx context.Context, n, parallel int, timeout time.Duration, do func(context.Context, int), skip func(int, error)) {
	slots := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			if skip != nil {
				skip(i, ctx.Err())
			}
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			do(cctx, i)
		})
	}
	wg.Wait()
}

// collectWithin reads t in a goroutine of its own and stops waiting for it shortly after ctx
// ends. client-go runs a kubeconfig's exec credential plugin (users[].user.exec) with
// exec.Command, without a context, before the request that needs the credentials: neither ctx
// nor rest.Config.Timeout reaches it, and a plugin that hangs would hold the read, and the
// whole run, for as long as it hangs.
//
// An abandoned read leaks its goroutine until the plugin exits or the process ends. That is
// acceptable in a CLI that exits right after the report; the plugin process itself is ended
// with the run when the CLI wrapped it (GuardExecPlugins). The abandoned read also gives back
// its slot, so the plugins still running may exceed q.Parallel: holding the slot would let a
// few hung plugins stall every cluster behind them.
func collectWithin(ctx context.Context, t Target, q Query, newReader ReaderFactory, sh *sharer) Snapshot {
	// Buffered, so that an abandoned read can still deliver its snapshot and end.
	done := make(chan Snapshot, 1)
	go func() { done <- collectOne(ctx, t, q, newReader, sh) }()
	select {
	case s := <-done:
		return s
	case <-ctx.Done():
	}
	grace := time.NewTimer(abandonGrace)
	defer grace.Stop()
	select {
	case s := <-done:
		return s
	case <-grace.C:
		return abandoned(ctx, t, q)
	}
}

// abandoned is the snapshot of a read that did not return after its deadline.
func abandoned(ctx context.Context, t Target, q Query) Snapshot {
	s := Snapshot{Context: t.Context, Server: t.Server, Reason: Classify(ctx, ctx.Err())}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.Err = fmt.Errorf("read abandoned: %w", ctx.Err())
		return s
	}
	if t.Config != nil && t.Config.ExecProvider != nil {
		s.Err = fmt.Errorf("%w (%s): command %q of the context's user was still running: %w",
			ErrExecPluginTimeout, q.Timeout, ExecPluginCommand(t.Config), ctx.Err())
		s.Advice = fmt.Sprintf("run `kubectl --context %s get --raw /version` to see whether the plugin hangs or waits for a login, "+
			"then log in again or fix users[].user.exec in the kubeconfig, or raise --timeout", t.Context)
		if t.execShim == "" {
			s.Advice += "; polykube-status stopped waiting, but the plugin process may keep running after it exits"
		}
		return s
	}
	s.Err = fmt.Errorf("the read did not return within --timeout (%s), even after it was cancelled: %w", q.Timeout, ctx.Err())
	return s
}

func collectOne(ctx context.Context, t Target, q Query, newReader ReaderFactory, sh *sharer) Snapshot {
	s := Snapshot{Context: t.Context, Server: t.Server}
	if t.ConfigErr != nil {
		s.Err, s.Reason = t.ConfigErr, ReasonConfigError
		return s
	}
	r, err := newReader(t, q.Timeout)
	if err != nil {
		s.Err, s.Reason = err, ReasonConfigError
		return s
	}
	objs := &reducedObjects{}
	fail := func(what string, err error) Snapshot {
		s.Reason = Classify(ctx, err)
		s.Err = fmt.Errorf("list %s: %w", what, nameThePlugin(t, err))
		s.Federations, s.ClusterMembers = nil, nil
		return s
	}
	var nsOpts []client.ListOption
	if q.Namespace != "" {
		nsOpts = append(nsOpts, client.InNamespace(q.Namespace))
	}
	l := pagedLister{r: r, pageSize: q.PageSize}

	err = l.polykubeItems(ctx, "workloads", q.Namespace, func() client.ObjectList { return &polykubev1alpha1.WorkloadList{} }, nsOpts,
		func(raw []byte) error {
			c, err := workloadCopyOf(raw, sh)
			if err == nil {
				objs.workloads = append(objs.workloads, c)
			}
			return err
		}, func(o runtime.Object) {
			w := o.(*polykubev1alpha1.Workload)
			spec := w.Spec
			objs.workloads = append(objs.workloads, workloadCopy{meta: reducedMeta(w.ObjectMeta), spec: &spec, status: w.Status})
		}, func() { objs.workloads = nil })
	if err != nil {
		return fail("workloads.polykube.kismet.io", err)
	}
	err = polykubeKind(ctx, l, "federations", "", func() client.ObjectList { return &polykubev1alpha1.FederationList{} }, nil,
		func(f *polykubev1alpha1.Federation) {
			f.ObjectMeta = reducedMeta(f.ObjectMeta)
			s.Federations = append(s.Federations, *f)
		}, func() { s.Federations = nil })
	if err != nil {
		return fail("federations.polykube.kismet.io", err)
	}
	err = polykubeKind(ctx, l, "clustermembers", "", func() client.ObjectList { return &polykubev1alpha1.ClusterMemberList{} }, nil,
		func(cm *polykubev1alpha1.ClusterMember) {
			cm.ObjectMeta = reducedMeta(cm.ObjectMeta)
			s.ClusterMembers = append(s.ClusterMembers, *cm)
		}, func() { s.ClusterMembers = nil })
	if err != nil {
		return fail("clustermembers.polykube.kismet.io", err)
	}

	// ServiceEndpoints and DatastoreBindings have nothing but their conditions to show: a
	// cluster where they cannot be read is reported incomplete, like one without Deployments.
	err = polykubeKind(ctx, l, "serviceendpoints", q.Namespace, func() client.ObjectList { return &polykubev1alpha1.ServiceEndpointList{} }, nsOpts,
		func(se *polykubev1alpha1.ServiceEndpoint) {
			se.ObjectMeta = reducedMeta(se.ObjectMeta)
			s.ServiceEndpoints = append(s.ServiceEndpoints, *se)
		}, func() { s.ServiceEndpoints = nil })
	if err != nil {
		s.ServiceEndpoints = nil
		s.Warnings = append(s.Warnings, fmt.Sprintf("list serviceendpoints.polykube.kismet.io: %s: %v (their failures are not shown; bind the current polykube-status-reader ClusterRole)", Classify(ctx, err), err))
	}
	err = polykubeKind(ctx, l, "datastorebindings", q.Namespace, func() client.ObjectList { return &polykubev1alpha1.DatastoreBindingList{} }, nsOpts,
		func(db *polykubev1alpha1.DatastoreBinding) {
			db.ObjectMeta = reducedMeta(db.ObjectMeta)
			s.DatastoreBindings = append(s.DatastoreBindings, *db)
		}, func() { s.DatastoreBindings = nil })
	if err != nil {
		s.DatastoreBindings = nil
		s.Warnings = append(s.Warnings, fmt.Sprintf("list datastorebindings.polykube.kismet.io: %s: %v (their failures are not shown; bind the current polykube-status-reader ClusterRole)", Classify(ctx, err), err))
	}

	// Deployments only sharpen the untargeted-replicas check; without them the rest stands.
	// They are read through the typed client, which asks for protobuf.
	managed, _ := labels.NewRequirement(polykubev1alpha1.ManagedByLabel, selection.Equals, []string{polykubev1alpha1.ManagedByValue})
	hasWorkload, _ := labels.NewRequirement(polykubev1alpha1.WorkloadNameLabel, selection.Exists, nil)
	depOpts := append(append([]client.ListOption(nil), nsOpts...), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*managed, *hasWorkload)})
	err = l.each(ctx, func() client.ObjectList { return &appsv1.DeploymentList{} }, depOpts, func(o runtime.Object) {
		objs.deployments = append(objs.deployments, deploymentCopyOf(o.(*appsv1.Deployment), sh))
	}, func() { objs.deployments = nil })
	if err != nil {
		objs.deployments = nil
		s.Warnings = append(s.Warnings, fmt.Sprintf("list deployments.apps: %s: %v (untargeted replicas are checked from Workload status only)", Classify(ctx, err), err))
	}
	s.objs = objs
	return s
}

// Classify names why a request failed: Timeout, Unauthorized, Forbidden, CRDsMissing,
// Unreachable or Error.
func Classify(ctx context.Context, err error) string {
	var netErr net.Error
	switch {
	case err == nil:
		return ReasonOK
	case errors.Is(err, context.DeadlineExceeded), ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded),
		apierrors.IsTimeout(err), apierrors.IsServerTimeout(err),
		errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout
	case apierrors.IsUnauthorized(err):
		return ReasonUnauthorized
	case apierrors.IsForbidden(err):
		return ReasonForbidden
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err):
		return ReasonCRDsMissing
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return ReasonError
	}
	var certErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var opErr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &certErr) || errors.As(err, &hostErr) || errors.As(err, &opErr) || errors.As(err, &dnsErr) ||
		strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "EOF") {
		return ReasonUnreachable
	}
	return ReasonError
}

// Advice is what to do about a reason, appended to the message of an unreadable cluster.
func Advice(reason string) string {
	switch reason {
	case ReasonUnreachable:
		return "check that the cluster is running and that the context's server address is reachable from here"
	case ReasonTimeout:
		return "the API server did not answer in time: check the network path, or raise --timeout"
	case ReasonUnauthorized:
		return "the API server rejected the credentials: refresh the context's credentials (an expired token or certificate?)"
	case ReasonForbidden:
		return "bind the context's user to the ClusterRole polykube-status-reader (gitops/status-reader)"
	case ReasonCRDsMissing:
		return "the polykube.kismet.io CRDs are not installed: this cluster does not run Polykube yet, or the context points at the wrong cluster"
	case ReasonConfigError:
		return "fix the context in the kubeconfig (kubectl config view --minify --context NAME)"
	default:
		return ""
	}
}
