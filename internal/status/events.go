package status

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status/render"
)

// `polykube-status events`: what happened to Polykube objects lately, across the clusters, in
// one timeline. An event is about Polykube when the object it regards is of the group
// polykube.kismet.io, or is a Deployment, Service or HorizontalPodAutoscaler labelled as
// managed by Polykube (what the operator writes, and what Kubernetes' own controllers then say
// about it: a rollout stuck on an image pull, an HPA that cannot read metrics).

// KindFleetEvents is the document kind `polykube-status events -o json|yaml` prints.
const KindFleetEvents = "FleetEvents"

// DefaultEventsSince is how far back `events` looks by default. Kubernetes keeps events for an
// hour unless the API server's --event-ttl says otherwise.
const DefaultEventsSince = time.Hour

// EventsQuery says which events to read.
type EventsQuery struct {
	// Namespace restricts the events; empty means all namespaces.
	Namespace string
	// Since drops events last seen longer ago than this; 0 keeps all.
	Since    time.Duration
	Timeout  time.Duration
	Parallel int
	// Now is the time Since counts back from; zero means time.Now().
	Now time.Time
}

// FleetEvents is the merged timeline.
type FleetEvents struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	// Since is the --since window as a Go duration string; absent when every event is kept.
	Since string `json:"since,omitempty"`
	// Clusters has one row per context: whether its events could be read.
	Clusters []EventsCluster `json:"clusters"`
	// Events are sorted by time, oldest first; ties by context order.
	Events   []FleetEvent `json:"events"`
	ExitCode int          `json:"exitCode"`
}

// EventsCluster is one context's outcome.
type EventsCluster struct {
	Context string `json:"context"`
	Cluster string `json:"cluster"`
	// Reason is OK or why the events could not be read (the reasons of ClusterRow).
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	Events  int    `json:"events"`
}

// FleetEvent is one event, with the cluster it happened in.
type FleetEvent struct {
	// Time is when the event was last seen (events.k8s.io series, eventTime or the core/v1
	// lastTimestamp, whichever the reporter set).
	Time    metav1.Time `json:"time"`
	Context string      `json:"context"`
	Cluster string      `json:"cluster"`
	// Type is Normal or Warning.
	Type   string `json:"type"`
	Reason string `json:"reason"`
	// Object is "Kind namespace/name" of the object the event is about.
	Object  string `json:"object"`
	Message string `json:"message"`
	// Count is how many times the event was seen (1 for a single event).
	Count int32 `json:"count"`
	// Reporter is the controller that reported it.
	Reporter string `json:"reporter,omitempty"`
}

// CollectEvents reads the events of every target, --parallel at a time and each within its
// timeout, and merges them by time.
func CollectEvents(ctx context.Context, targets []Target, q EventsQuery) FleetEvents {
	if q.Parallel <= 0 {
		q.Parallel = DefaultParallel
	}
	now := q.Now
	if now.IsZero() {
		now = time.Now()
	}
	out := FleetEvents{APIVersion: APIVersion, Kind: KindFleetEvents, Namespace: q.Namespace, Events: []FleetEvent{}}
	if q.Since > 0 {
		out.Since = q.Since.String()
	}
	rows := make([]EventsCluster, len(targets))
	perCluster := make([][]FleetEvent, len(targets))
	read := func(cctx context.Context, i int) { rows[i], perCluster[i] = eventsOf(cctx, targets[i], q, now) }
	// Interrupted, the clusters not started yet are read with the ended context: each is then
	// reported unreadable rather than left out.
	eachTarget(ctx, len(targets), q.Parallel, q.Timeout, read, func(i int, _ error) { read(ctx, i) })
	out.Clusters = rows
	for i := range perCluster {
		out.Events = append(out.Events, perCluster[i]...)
	}
	order := map[string]int{}
	for i, t := range targets {
		order[t.Context] = i
	}
	sort.SliceStable(out.Events, func(a, b int) bool {
		x, y := out.Events[a], out.Events[b]
		if !x.Time.Equal(&y.Time) {
			return x.Time.Before(&y.Time)
		}
		return order[x.Context] < order[y.Context]
	})
	for _, r := range rows {
		if r.Reason != ReasonOK {
			out.ExitCode = ExitUnreachable
		}
	}
	return out
}

// eventsOf reads one cluster's Polykube events.
func eventsOf(ctx context.Context, t Target, q EventsQuery, now time.Time) (EventsCluster, []FleetEvent) {
	row := EventsCluster{Context: t.Context, Cluster: t.Context, Reason: ReasonOK}
	failed := func(what string, err error) (EventsCluster, []FleetEvent) {
		row.Reason = Classify(ctx, err)
		row.Message = fmt.Sprintf("%s: %v", what, nameThePlugin(t, err))
		if a := Advice(row.Reason); a != "" {
			row.Message += "; " + a
		}
		return row, nil
	}
	if t.ConfigErr != nil {
		row.Reason, row.Message = ReasonConfigError, t.ConfigErr.Error()
		return row, nil
	}
	r, err := newWideReader(t.Config, q.Timeout)
	if err != nil {
		row.Reason, row.Message = ReasonConfigError, err.Error()
		return row, nil
	}
	row.Cluster = clusterNameOf(ctx, r, t.Context)
	managed, err := managedObjects(ctx, r, q.Namespace)
	if err != nil {
		return failed("list the objects Polykube manages", err)
	}
	evs, err := readEvents(ctx, r, q.Namespace)
	if err != nil {
		return failed("list events", err)
	}
	var out []FleetEvent
	for _, e := range evs {
		if !aboutPolykube(e.regarding, managed) {
			continue
		}
		if q.Since > 0 && e.Time.Time.Before(now.Add(-q.Since)) {
			continue
		}
		e.Context, e.Cluster = t.Context, row.Cluster
		out = append(out, e.FleetEvent)
	}
	row.Events = len(out)
	return row, out
}

// clusterNameOf is the cluster name the operator wrote into a Federation, or the context name.
func clusterNameOf(ctx context.Context, r Reader, context string) string {
	var feds polykubev1alpha1.FederationList
	if err := r.List(ctx, &feds); err == nil {
		for _, f := range feds.Items {
			if f.Status.LocalCluster != "" {
				return f.Status.LocalCluster
			}
		}
	}
	return context
}

// objectRef names an object for matching events to it.
type objectRef struct{ group, kind, namespace, name string }

// managedObjects are the Deployments, Services and HPAs labelled as managed by Polykube.
func managedObjects(ctx context.Context, r Reader, ns string) (map[objectRef]bool, error) {
	opts := []client.ListOption{client.MatchingLabels{polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue}}
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	out := map[objectRef]bool{}
	var deps appsv1.DeploymentList
	if err := r.List(ctx, &deps, opts...); err != nil {
		return nil, fmt.Errorf("deployments.apps: %w", err)
	}
	for _, d := range deps.Items {
		out[objectRef{"apps", "Deployment", d.Namespace, d.Name}] = true
	}
	var svcs corev1.ServiceList
	if err := r.List(ctx, &svcs, opts...); err != nil {
		return nil, fmt.Errorf("services: %w", err)
	}
	for _, s := range svcs.Items {
		out[objectRef{"", "Service", s.Namespace, s.Name}] = true
	}
	var hpas autoscalingv2.HorizontalPodAutoscalerList
	if err := r.List(ctx, &hpas, opts...); err != nil {
		return nil, fmt.Errorf("horizontalpodautoscalers.autoscaling: %w", err)
	}
	for _, h := range hpas.Items {
		out[objectRef{"autoscaling", "HorizontalPodAutoscaler", h.Namespace, h.Name}] = true
	}
	return out, nil
}

func aboutPolykube(ref objectRef, managed map[objectRef]bool) bool {
	return ref.group == polykubev1alpha1.GroupVersion.Group || managed[ref]
}

// readEvent is an event with the object it regards.
type readEvent struct {
	FleetEvent
	regarding objectRef
}

// readEvents lists events.k8s.io/v1 Events, or core/v1 Events where that API is not served.
// Both are views of the same objects, so one of them is enough.
func readEvents(ctx context.Context, r Reader, ns string) ([]readEvent, error) {
	var opts []client.ListOption
	if ns != "" {
		opts = append(opts, client.InNamespace(ns))
	}
	var list eventsv1.EventList
	err := r.List(ctx, &list, opts...)
	if apierrors.IsNotFound(err) {
		var core corev1.EventList
		if err := r.List(ctx, &core, opts...); err != nil {
			return nil, err
		}
		out := make([]readEvent, 0, len(core.Items))
		for _, e := range core.Items {
			out = append(out, fromCoreEvent(e))
		}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]readEvent, 0, len(list.Items))
	for _, e := range list.Items {
		out = append(out, fromEvent(e))
	}
	return out, nil
}

func refOf(apiVersion, kind, ns, name string) objectRef {
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return objectRef{gv.Group, kind, ns, name}
}

func fromEvent(e eventsv1.Event) readEvent {
	t := e.DeprecatedLastTimestamp.Time
	count := e.DeprecatedCount
	if s := e.Series; s != nil {
		t, count = s.LastObservedTime.Time, s.Count
	}
	if t.IsZero() {
		t = e.EventTime.Time
	}
	if t.IsZero() {
		t = e.CreationTimestamp.Time
	}
	if count == 0 {
		count = 1
	}
	reporter := e.ReportingController
	if reporter == "" {
		reporter = e.DeprecatedSource.Component
	}
	reg := e.Regarding
	return readEvent{
		FleetEvent: FleetEvent{Time: metav1.NewTime(t.UTC()), Type: e.Type, Reason: e.Reason, Object: objectName(reg.Kind, reg.Namespace, reg.Name),
			Message: e.Note, Count: count, Reporter: reporter},
		regarding: refOf(reg.APIVersion, reg.Kind, reg.Namespace, reg.Name),
	}
}

// fromCoreEvent reads a core/v1 Event (clusters that do not serve events.k8s.io) as the
// events.k8s.io one it mirrors.
func fromCoreEvent(e corev1.Event) readEvent {
	ev := eventsv1.Event{
		ObjectMeta: e.ObjectMeta, EventTime: e.EventTime, ReportingController: e.ReportingController,
		Reason: e.Reason, Regarding: e.InvolvedObject, Note: e.Message, Type: e.Type,
		DeprecatedSource: e.Source, DeprecatedLastTimestamp: e.LastTimestamp, DeprecatedCount: e.Count,
	}
	if e.Series != nil {
		ev.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return fromEvent(ev)
}

func objectName(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// PrintEvents renders ev as a table, JSON or YAML.
func PrintEvents(w io.Writer, ev FleetEvents, format string, opts PrintOptions) error {
	switch format {
	case FormatJSON:
		return render.JSON(w, ev)
	case FormatYAML:
		return render.YAML(w, ev)
	case FormatTable, "":
	default:
		return ValidateFormat(format)
	}
	if len(ev.Events) == 0 {
		fmt.Fprintln(w, "No Polykube events in the clusters read.")
	} else {
		rows := [][]render.Cell{render.Header("TIME", "CLUSTER", "TYPE", "REASON", "OBJECT", "COUNT", "MESSAGE")}
		for _, e := range ev.Events {
			typ := render.Text(e.Type)
			if e.Type == corev1.EventTypeWarning {
				typ = render.Colored(e.Type, render.Yellow)
			}
			rows = append(rows, []render.Cell{render.Text(e.Time.UTC().Format(time.RFC3339)), render.Text(e.Cluster), typ,
				render.Text(e.Reason), render.Text(e.Object), render.Text(fmt.Sprint(e.Count)), render.Text(strings.TrimSpace(e.Message))})
		}
		if err := render.Table(w, rows, opts.Color); err != nil {
			return err
		}
	}
	var bad []string
	for _, c := range ev.Clusters {
		if c.Reason != ReasonOK {
			bad = append(bad, fmt.Sprintf("%s: %s: %s", c.Context, c.Reason, c.Message))
		}
	}
	if len(bad) > 0 {
		fmt.Fprintln(w)
		rows := [][]render.Cell{render.Header("CONTEXT NOT READ", "REASON", "MESSAGE")}
		for _, c := range ev.Clusters {
			if c.Reason != ReasonOK {
				rows = append(rows, []render.Cell{render.Text(c.Context), render.Colored(c.Reason, render.Red), render.Text(c.Message)})
			}
		}
		if err := render.Table(w, rows, opts.Color); err != nil {
			return err
		}
	}
	return nil
}
