package status

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The support bundle: what someone helping with a Polykube fleet needs to see, read from real
// clusters with the same read-only client as the fleet view, in one tar.gz.
//
// What never enters it is decided here, not left to whoever reads it later:
//   - Secrets: the bundle's client has no Secret kind at all (reader_wide.go), so it cannot
//     even ask for one.
//   - ConfigMaps: only kube-system/cilium-config is read, and only its cluster-name, cluster-id
//     and clustermesh keys are kept.
//   - Values of environment variables: every `env` list in every object (pod templates of
//     Workloads and Deployments, pods, Argo CD plugin env) has each `value` replaced by
//     <redacted>; `valueFrom` references stay, since they name a Secret key, not its value.
//   - Values of Flux post-build substitutions and Argo CD Helm values and parameters: redacted
//     for the same reason.
//   - kubectl's last-applied-configuration annotation (a full copy of the object as applied,
//     env values included) and managedFields are dropped.
// Container args and commands are kept: they are how the operator was configured, and a
// secret passed on a command line is already visible to anyone who can list pods.

// Redacted replaces every value the bundle must not carry.
const Redacted = "<redacted>"

// Bundle defaults.
const (
	DefaultBundleTail        = 500
	DefaultOperatorNamespace = "polykube-system"
	// OperatorPodSelector selects the operator's pods (gitops/operator).
	OperatorPodSelector = "app.kubernetes.io/name=polykube-operator"
	// CiliumConfigNamespace and CiliumConfigName locate Cilium's settings.
	CiliumConfigNamespace = "kube-system"
	CiliumConfigName      = "cilium-config"
)

// BundleOptions say what the bundle reads.
type BundleOptions struct {
	// Namespace restricts the namespaced Polykube objects, managed objects and events; empty
	// means all namespaces.
	Namespace string
	// Tail is how many of the last log lines of each operator container to keep.
	Tail int64
	// OperatorNamespace is where the operator runs.
	OperatorNamespace string
	Timeout           time.Duration
	Parallel          int
	// Now is written into the index; zero means time.Now().
	Now time.Time
}

// BundleIndex is index.json: what each cluster's part of the bundle holds and what it lacks.
type BundleIndex struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Created    string          `json:"created"`
	Namespace  string          `json:"namespace,omitempty"`
	Tail       int64           `json:"tail"`
	Clusters   []BundleCluster `json:"clusters"`
	// ExitCode is 0 when every section of every cluster was read (or is absent there, like
	// Flux CRDs in a cluster without Flux), 3 otherwise.
	ExitCode int `json:"exitCode"`
}

// BundleCluster is one context's part of the bundle.
type BundleCluster struct {
	Context string          `json:"context"`
	Cluster string          `json:"cluster"`
	Server  string          `json:"server,omitempty"`
	Reason  string          `json:"reason"`
	Message string          `json:"message,omitempty"`
	Entries []BundleSection `json:"entries"`
}

// BundleSection is one file of the bundle, or why it is not there.
type BundleSection struct {
	// File is the path inside the archive; empty when nothing was written.
	File string `json:"file,omitempty"`
	// What the file holds ("workloads.polykube.kismet.io", "logs of polykube-system/pod/container").
	What string `json:"what"`
	// Items is how many objects the file holds (0 for logs).
	Items int `json:"items"`
	// Status is Written, NotInstalled (the kind's CRD is not in the cluster), NotFound or Failed.
	Status string `json:"status"`
	// Note says why it is missing.
	Note string `json:"note,omitempty"`
}

// Section statuses.
const (
	SectionWritten      = "Written"
	SectionNotInstalled = "NotInstalled"
	SectionNotFound     = "NotFound"
	SectionFailed       = "Failed"
)

// KindBundleIndex is the kind of index.json.
const KindBundleIndex = "SupportBundleIndex"

// bundleFile is one file to be written into the archive.
type bundleFile struct {
	name string
	data []byte
}

// WriteBundle reads every target and writes the tar.gz to w. It returns the index it wrote.
func WriteBundle(ctx context.Context, w io.Writer, targets []Target, opts BundleOptions) (BundleIndex, error) {
	if opts.Tail <= 0 {
		opts.Tail = DefaultBundleTail
	}
	if opts.OperatorNamespace == "" {
		opts.OperatorNamespace = DefaultOperatorNamespace
	}
	if opts.Parallel <= 0 {
		opts.Parallel = DefaultParallel
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	idx := BundleIndex{APIVersion: APIVersion, Kind: KindBundleIndex, Created: now.UTC().Format(time.RFC3339), Namespace: opts.Namespace, Tail: opts.Tail}
	parts := make([]BundleCluster, len(targets))
	files := make([][]bundleFile, len(targets))
	read := func(cctx context.Context, i int) {
		parts[i], files[i] = bundleOf(cctx, targets[i], opts, dirName(targets[i].Context, i))
	}
	// Interrupted, the clusters not started yet are read with the ended context (they fail
	// at once), and the bundle is refused below.
	eachTarget(ctx, len(targets), opts.Parallel, opts.Timeout, read, func(i int, _ error) { read(ctx, i) })
	if err := ctx.Err(); err != nil {
		return idx, fmt.Errorf("interrupted: %w", err)
	}
	idx.Clusters = parts
	for _, p := range parts {
		if p.Reason != ReasonOK {
			idx.ExitCode = ExitUnreachable
		}
		for _, e := range p.Entries {
			if e.Status == SectionFailed {
				idx.ExitCode = ExitUnreachable
			}
		}
	}

	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	add := func(name string, data []byte) error {
		h := &tar.Header{Name: "polykube-bundle/" + name, Mode: 0o644, Size: int64(len(data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := add("README.txt", []byte(bundleReadme(idx))); err != nil {
		return idx, err
	}
	ij, err := yaml.Marshal(idx)
	if err != nil {
		return idx, err
	}
	if err := add("index.yaml", ij); err != nil {
		return idx, err
	}
	for _, fs := range files {
		for _, f := range fs {
			if err := add(f.name, f.data); err != nil {
				return idx, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return idx, err
	}
	return idx, gz.Close()
}

var unsafePath = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// dirName is a context's directory in the archive: its name made safe as a path element, with
// its position so that two contexts never share one.
func dirName(context string, i int) string {
	return fmt.Sprintf("%02d-%s", i+1, unsafePath.ReplaceAllString(context, "_"))
}

// collector gathers one cluster's files and index entries.
type collector struct {
	dir     string
	part    *BundleCluster
	files   []bundleFile
	fatal   error
	context context.Context
}

func (c *collector) write(file, what string, items int, data []byte) {
	name := path.Join(c.dir, file)
	c.files = append(c.files, bundleFile{name: name, data: data})
	c.part.Entries = append(c.part.Entries, BundleSection{File: name, What: what, Items: items, Status: SectionWritten})
}

func (c *collector) missing(what, status, note string) {
	c.part.Entries = append(c.part.Entries, BundleSection{What: what, Status: status, Note: note})
}

// failed records a failed read; an unreachable or unauthorised cluster fails everything after.
func (c *collector) failed(what string, err error) {
	reason := Classify(c.context, err)
	note := fmt.Sprintf("%s: %v", reason, err)
	if reason == ReasonForbidden {
		note += "; bind the user to the current polykube-status-reader ClusterRole and the polykube-status-operator-logs Role (gitops/status-reader/operator-logs)"
	}
	c.missing(what, SectionFailed, note)
	switch reason {
	case ReasonUnreachable, ReasonTimeout, ReasonUnauthorized, ReasonConfigError:
		if c.fatal == nil {
			c.fatal = err
			c.part.Reason, c.part.Message = reason, err.Error()
			if a := Advice(reason); a != "" {
				c.part.Message += "; " + a
			}
		}
	}
}

// objects writes a list of objects, sanitized, as one YAML document.
func (c *collector) objects(file, what string, list client.ObjectList, r Reader, opts ...client.ListOption) {
	if c.fatal != nil {
		c.missing(what, SectionFailed, "not read: "+c.part.Reason)
		return
	}
	if err := r.List(c.context, list, opts...); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			c.missing(what, SectionNotInstalled, "the API is not served in this cluster (its CRD is not installed): skipped")
			return
		}
		c.failed(what, err)
		return
	}
	items, err := sanitizedItems(list)
	if err != nil {
		c.failed(what, err)
		return
	}
	c.writeItems(file, what, items)
}

func (c *collector) writeItems(file, what string, items []map[string]any) {
	data, err := yaml.Marshal(map[string]any{"items": items})
	if err != nil {
		c.failed(what, err)
		return
	}
	c.write(file, what, len(items), data)
}

// bundleOf reads one cluster.
func bundleOf(ctx context.Context, t Target, opts BundleOptions, dir string) (BundleCluster, []bundleFile) {
	part := BundleCluster{Context: t.Context, Cluster: t.Context, Server: t.Server, Reason: ReasonOK}
	if t.ConfigErr != nil {
		part.Reason, part.Message = ReasonConfigError, t.ConfigErr.Error()
		return part, nil
	}
	r, err := newWideReader(t.Config, opts.Timeout)
	if err != nil {
		part.Reason, part.Message = ReasonConfigError, err.Error()
		return part, nil
	}
	c := &collector{dir: dir, part: &part, context: ctx}
	var ns []client.ListOption
	if opts.Namespace != "" {
		ns = append(ns, client.InNamespace(opts.Namespace))
	}

	// The Polykube objects first: if the cluster cannot be read, that shows here.
	c.objects("polykube/workloads.yaml", "workloads.polykube.kismet.io", &polykubev1alpha1.WorkloadList{}, r, ns...)
	c.objects("polykube/federations.yaml", "federations.polykube.kismet.io", &polykubev1alpha1.FederationList{}, r)
	c.objects("polykube/clustermembers.yaml", "clustermembers.polykube.kismet.io", &polykubev1alpha1.ClusterMemberList{}, r)
	c.objects("polykube/serviceendpoints.yaml", "serviceendpoints.polykube.kismet.io", &polykubev1alpha1.ServiceEndpointList{}, r, ns...)
	c.objects("polykube/datastorebindings.yaml", "datastorebindings.polykube.kismet.io", &polykubev1alpha1.DatastoreBindingList{}, r, ns...)
	if c.fatal == nil {
		part.Cluster = clusterNameOf(ctx, r, t.Context)
	}

	managed := append(append([]client.ListOption(nil), ns...), client.MatchingLabels{polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue})
	c.objects("managed/deployments.yaml", "deployments.apps managed by Polykube", &appsv1.DeploymentList{}, r, managed...)
	c.objects("managed/services.yaml", "services managed by Polykube", &corev1.ServiceList{}, r, managed...)
	c.objects("managed/horizontalpodautoscalers.yaml", "horizontalpodautoscalers.autoscaling managed by Polykube", &autoscalingv2.HorizontalPodAutoscalerList{}, r, managed...)

	c.events(t, r, opts)
	c.operator(t, r, opts)
	c.delivery(r, opts)
	c.cilium(r)
	return part, c.files
}

func (c *collector) events(t Target, r Reader, opts BundleOptions) {
	const what = "events about Polykube objects and the objects it manages"
	if c.fatal != nil {
		c.missing(what, SectionFailed, "not read: "+c.part.Reason)
		return
	}
	row, evs := eventsOf(c.context, t, EventsQuery{Namespace: opts.Namespace, Timeout: opts.Timeout}, time.Now())
	if row.Reason != ReasonOK {
		c.missing(what, SectionFailed, row.Reason+": "+row.Message)
		return
	}
	sort.SliceStable(evs, func(a, b int) bool { return evs[a].Time.Before(&evs[b].Time) })
	data, err := yaml.Marshal(map[string]any{"items": evs})
	if err != nil {
		c.failed(what, err)
		return
	}
	c.write("events.yaml", what, len(evs), data)
}

// operator writes the operator's pods (redacted like every object) and the last lines of
// each of their containers' logs.
func (c *collector) operator(t Target, r Reader, opts BundleOptions) {
	what := fmt.Sprintf("operator pods in %s (%s)", opts.OperatorNamespace, OperatorPodSelector)
	if c.fatal != nil {
		c.missing(what, SectionFailed, "not read: "+c.part.Reason)
		return
	}
	sel, err := labelsSelector(OperatorPodSelector)
	if err != nil {
		c.failed(what, err)
		return
	}
	var pods corev1.PodList
	if err := r.List(c.context, &pods, client.InNamespace(opts.OperatorNamespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		c.failed(what, err)
		return
	}
	items, err := sanitizedItems(&pods)
	if err != nil {
		c.failed(what, err)
		return
	}
	c.writeItems("operator/pods.yaml", what, items)
	if len(pods.Items) == 0 {
		c.missing("operator logs", SectionNotFound, fmt.Sprintf("no pod in %s matches %s: the operator does not run in this cluster, or runs elsewhere", opts.OperatorNamespace, OperatorPodSelector))
		return
	}
	// Logs are a subresource the controller-runtime client does not read; client-go's typed
	// client does, through the same read-only transport (a log request is a GET).
	cs, err := kubernetes.NewForConfig(ReadOnlyConfig(t.Config, opts.Timeout))
	if err != nil {
		c.failed("operator logs", err)
		return
	}
	tail := opts.Tail
	for _, p := range pods.Items {
		for _, ctr := range p.Spec.Containers {
			lw := fmt.Sprintf("last %d log lines of %s/%s container %s", tail, p.Namespace, p.Name, ctr.Name)
			data, err := cs.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: ctr.Name, TailLines: &tail}).DoRaw(c.context)
			if err != nil {
				// A pod without a running container has no log yet: that is a finding, not a
				// failure of the bundle, unless the API refused or was unreachable.
				reason := Classify(c.context, err)
				if reason == ReasonForbidden || reason == ReasonUnreachable || reason == ReasonTimeout || reason == ReasonUnauthorized {
					c.failed(lw, err)
				} else {
					c.missing(lw, SectionNotFound, fmt.Sprintf("no log: %v", err))
				}
				continue
			}
			c.write(fmt.Sprintf("operator/logs/%s_%s.log", unsafePath.ReplaceAllString(p.Name, "_"), unsafePath.ReplaceAllString(ctr.Name, "_")), lw, 0, data)
		}
	}
}

// delivery writes the Flux and Argo CD objects that deliver Polykube: the Kustomizations whose
// inventory holds a Polykube object (or that are named after it) with the sources they use,
// and the Argo CD Applications whose resources do. A cluster without these CRDs is noted.
func (c *collector) delivery(r Reader, opts BundleOptions) {
	ks, ok := c.unstructuredList(r, FluxKustomizationGVK, "kustomizations.kustomize.toolkit.fluxcd.io")
	sources := map[string]bool{}
	if ok {
		var keep []map[string]any
		for _, k := range ks {
			if !deliversPolykube(k, opts.OperatorNamespace) {
				continue
			}
			kind, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "kind")
			name, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "name")
			ns, _, _ := unstructured.NestedString(k.Object, "spec", "sourceRef", "namespace")
			if ns == "" {
				ns = k.GetNamespace()
			}
			sources[kind+"/"+ns+"/"+name] = true
			keep = append(keep, sanitize(k.Object))
		}
		c.writeItems("delivery/flux-kustomizations.yaml", "Flux Kustomizations delivering Polykube", keep)
	}
	for _, src := range []struct {
		gvk  schema.GroupVersionKind
		what string
		file string
	}{
		{FluxGitRepositoryGVK, "gitrepositories.source.toolkit.fluxcd.io", "delivery/flux-gitrepositories.yaml"},
		{FluxOCIRepositoryGVK, "ocirepositories.source.toolkit.fluxcd.io", "delivery/flux-ocirepositories.yaml"},
	} {
		list, ok := c.unstructuredList(r, src.gvk, src.what)
		if !ok {
			continue
		}
		var keep []map[string]any
		for _, s := range list {
			if sources[src.gvk.Kind+"/"+s.GetNamespace()+"/"+s.GetName()] {
				keep = append(keep, sanitize(s.Object))
			}
		}
		c.writeItems(src.file, "Flux "+src.gvk.Kind+"s the Kustomizations above use", keep)
	}
	apps, ok := c.unstructuredList(r, ArgoApplicationGVK, "applications.argoproj.io")
	if ok {
		var keep []map[string]any
		for _, a := range apps {
			if deliversPolykube(a, opts.OperatorNamespace) {
				keep = append(keep, sanitize(a.Object))
			}
		}
		c.writeItems("delivery/argocd-applications.yaml", "Argo CD Applications delivering Polykube", keep)
	}
}

func (c *collector) unstructuredList(r Reader, gvk schema.GroupVersionKind, what string) ([]unstructured.Unstructured, bool) {
	if c.fatal != nil {
		c.missing(what, SectionFailed, "not read: "+c.part.Reason)
		return nil, false
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := r.List(c.context, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			c.missing(what, SectionNotInstalled, "the CRD is not installed in this cluster: skipped")
			return nil, false
		}
		c.failed(what, err)
		return nil, false
	}
	return list.Items, true
}

// deliversPolykube: a Flux Kustomization's inventory or an Argo CD Application's resources name
// a Polykube object, an object in the operator's namespace or a Polykube CRD; or the object is
// named after Polykube.
func deliversPolykube(u unstructured.Unstructured, operatorNS string) bool {
	group := polykubev1alpha1.GroupVersion.Group
	if strings.Contains(strings.ToLower(u.GetName()), "polykube") {
		return true
	}
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "inventory", "entries")
	for _, e := range entries {
		m, _ := e.(map[string]any)
		id, _ := m["id"].(string)
		// Flux inventory ids are namespace_name_group_kind.
		if strings.Contains(id, "_"+group+"_") || strings.HasPrefix(id, operatorNS+"_") || strings.Contains(id, "."+group+"_apiextensions.k8s.io_") {
			return true
		}
	}
	resources, _, _ := unstructured.NestedSlice(u.Object, "status", "resources")
	for _, e := range resources {
		m, _ := e.(map[string]any)
		g, _ := m["group"].(string)
		ns, _ := m["namespace"].(string)
		name, _ := m["name"].(string)
		if g == group || ns == operatorNS || strings.HasSuffix(name, "."+group) {
			return true
		}
	}
	return false
}

// cilium writes Cilium's cluster name, cluster ID and clustermesh settings, and nothing else of
// its ConfigMap.
func (c *collector) cilium(r Reader) {
	const what = "Cilium cluster-name, cluster-id and clustermesh settings (kube-system/cilium-config)"
	if c.fatal != nil {
		c.missing(what, SectionFailed, "not read: "+c.part.Reason)
		return
	}
	var cm corev1.ConfigMap
	if err := r.Get(c.context, client.ObjectKey{Namespace: CiliumConfigNamespace, Name: CiliumConfigName}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			c.missing(what, SectionNotFound, "no ConfigMap kube-system/cilium-config: Cilium is not installed here, or not from its chart")
			return
		}
		c.failed(what, err)
		return
	}
	kept := map[string]string{}
	for k, v := range cm.Data {
		if ciliumKeyKept(k) {
			kept[k] = v
		}
	}
	data, err := yaml.Marshal(map[string]any{"configMap": CiliumConfigNamespace + "/" + CiliumConfigName, "data": kept})
	if err != nil {
		c.failed(what, err)
		return
	}
	c.write("cilium.yaml", what, len(kept), data)
}

// ciliumKeyKept: the keys that say which cluster this is in the mesh and how the mesh is set up.
func ciliumKeyKept(k string) bool {
	return k == "cluster-name" || k == "cluster-id" || strings.Contains(k, "clustermesh") || strings.Contains(k, "cluster-mesh")
}

// sanitizedItems converts a typed list's items to maps and sanitizes each.
func sanitizedItems(list client.ObjectList) ([]map[string]any, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(objs))
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		out = append(out, sanitize(m))
	}
	return out, nil
}

// lastApplied is kubectl's copy of the object as applied: env values and all.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// sanitize removes from obj what the bundle must not carry (see the top of this file) and
// returns it.
func sanitize(obj map[string]any) map[string]any {
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, lastApplied)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	// Flux post-build substitutions and Argo CD Helm values may hold anything.
	if subst, ok, _ := unstructured.NestedMap(obj, "spec", "postBuild", "substitute"); ok {
		for k := range subst {
			subst[k] = Redacted
		}
		_ = unstructured.SetNestedMap(obj, subst, "spec", "postBuild", "substitute")
	}
	redactHelm(obj, "spec", "source")
	if sources, ok, _ := unstructured.NestedSlice(obj, "spec", "sources"); ok {
		for _, s := range sources {
			if m, ok := s.(map[string]any); ok {
				redactHelm(m)
			}
		}
		_ = unstructured.SetNestedSlice(obj, sources, "spec", "sources")
	}
	redactEnv(obj)
	return obj
}

// redactHelm redacts the Helm values and parameter values of the Argo CD source at path.
func redactHelm(obj map[string]any, at ...string) {
	src := obj
	if len(at) > 0 {
		m, ok, _ := unstructured.NestedMap(obj, at...)
		if !ok {
			return
		}
		defer func() { _ = unstructured.SetNestedMap(obj, m, at...) }()
		src = m
	}
	helm, ok := src["helm"].(map[string]any)
	if !ok {
		return
	}
	for _, k := range []string{"values", "valuesObject"} {
		if _, ok := helm[k]; ok {
			helm[k] = Redacted
		}
	}
	for _, k := range []string{"parameters", "fileParameters"} {
		if ps, ok := helm[k].([]any); ok {
			for _, p := range ps {
				if m, ok := p.(map[string]any); ok {
					if _, ok := m["value"]; ok {
						m["value"] = Redacted
					}
				}
			}
		}
	}
}

// redactEnv walks v and replaces the value of every entry of every `env` list.
func redactEnv(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if k == "env" {
				if list, ok := child.([]any); ok {
					for _, e := range list {
						if m, ok := e.(map[string]any); ok {
							if _, has := m["value"]; has {
								m["value"] = Redacted
							}
						}
					}
				}
			}
			redactEnv(child)
		}
	case []any:
		for _, child := range x {
			redactEnv(child)
		}
	}
}

// bundleReadme is README.txt: what the bundle is, what it holds per cluster, and what it
// leaves out on purpose.
func bundleReadme(idx BundleIndex) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Polykube support bundle, made by polykube-status bundle at %s.\n\n", idx.Created)
	fmt.Fprintln(&b, "It was read with a read-only client (GET requests only). It never holds Secrets, nor")
	fmt.Fprintln(&b, "the value of any environment variable (each env[].value reads <redacted>; valueFrom")
	fmt.Fprintln(&b, "references are kept), nor Flux post-build substitutions or Argo CD Helm values, nor any")
	fmt.Fprintln(&b, "ConfigMap data except Cilium's cluster-name, cluster-id and clustermesh keys. kubectl's")
	fmt.Fprintln(&b, "last-applied-configuration annotation and managedFields are dropped. Container args and")
	fmt.Fprintln(&b, "commands, events and the operator's log lines are kept as they are: read them before")
	fmt.Fprintln(&b, "you share the bundle.")
	fmt.Fprintln(&b)
	ns := idx.Namespace
	if ns == "" {
		ns = "all namespaces"
	}
	fmt.Fprintf(&b, "Namespace: %s. Operator logs: the last %d lines of each container.\n", ns, idx.Tail)
	fmt.Fprintln(&b, "index.yaml lists the same in machine-readable form.")
	for _, c := range idx.Clusters {
		fmt.Fprintf(&b, "\n== context %s (cluster %s) %s: %s\n", c.Context, c.Cluster, c.Server, c.Reason)
		if c.Message != "" {
			fmt.Fprintf(&b, "   %s\n", c.Message)
		}
		for _, e := range c.Entries {
			switch e.Status {
			case SectionWritten:
				fmt.Fprintf(&b, "   %-60s %s (%d items)\n", e.File, e.What, e.Items)
			default:
				fmt.Fprintf(&b, "   %-60s %s: %s\n", "("+e.Status+")", e.What, e.Note)
			}
		}
	}
	return b.String()
}

func labelsSelector(s string) (labels.Selector, error) { return labels.Parse(s) }

// BundleSummary is what the CLI prints after writing the bundle to file: the README's list.
func BundleSummary(idx BundleIndex, file string) string {
	return fmt.Sprintf("Wrote %s.\n\n%s", file, bundleReadme(idx))
}
