// Package plan is polykube-status's offline view (`polykube-status plan`): the allocation of
// every Workload found in manifests (files, directories, kustomizations) and the difference
// between two versions, without any cluster access. It is a package of its own because it
// pulls in kustomize, which the fleet reader (internal/status) does not need.
package plan

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/render"
	"github.com/polykube/polykube/placement"
)

// PlanReport is the allocation of every Workload found in manifests, computed with
// placement.ForWorkloadIn over the ClusterMembers found in the same manifests, without any
// cluster access.
type PlanReport struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Sources are the files and directories read.
	Sources []string `json:"sources"`
	// Cluster, when set, restricts the view to that cluster's replicas and its rendered Deployments.
	Cluster string `json:"cluster,omitempty"`
	// AssumeDown are the clusters the failover preview assumes down (--assume-down).
	AssumeDown []string `json:"assumeDown,omitempty"`
	// Roster names the ClusterMembers found in the manifests, which distribution.targetSelectors
	// select from.
	Roster    []string          `json:"roster,omitempty"`
	Workloads []PlannedWorkload `json:"workloads"`
	Invalid   []InvalidManifest `json:"invalid"`
	ExitCode  int               `json:"exitCode"`
}

// PlannedWorkload is one Workload's allocation.
type PlannedWorkload struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Source is file:document (1-based) the Workload was read from.
	Source     string         `json:"source"`
	Strategy   string         `json:"strategy"`
	Total      int64          `json:"total"`
	Allocation []status.Share `json:"allocation"`
	// Targets are the targets resolved over the roster (explicit targets and those the
	// targetSelectors select), set when the Workload has targetSelectors.
	Targets []string `json:"targets,omitempty"`
	// Replicas is the allocation of PlanReport.Cluster (with its extra under --assume-down);
	// Targeted says whether it is a target.
	Replicas *int32 `json:"replicas,omitempty"`
	Targeted *bool  `json:"targeted,omitempty"`
	// Deployment is the Deployment PlanReport.Cluster runs, when it is a target; NotRendered
	// says why there is none although it is.
	Deployment  *RenderedDeployment `json:"deployment,omitempty"`
	NotRendered string              `json:"notRendered,omitempty"`
	// Service is the ClusterIP Service PlanReport.Cluster runs beside the Deployment, when
	// the Workload declares ports and its Deployment is rendered.
	Service *corev1.Service `json:"service,omitempty"`
	// Failover is the preview of --assume-down, when the Workload targets a cluster assumed down.
	Failover *PlannedFailover `json:"failover,omitempty"`
}

// InvalidManifest is a Workload document that could not be read or allocated.
type InvalidManifest struct {
	Source string `json:"source"`
	Name   string `json:"name,omitempty"`
	Reason string `json:"reason"`
}

// PlanDiff shows what moves per workload per cluster between two sets of manifests.
type PlanDiff struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Old        []string          `json:"old"`
	New        []string          `json:"new"`
	Changes    []Change          `json:"changes"`
	Invalid    []InvalidManifest `json:"invalid"`
	ExitCode   int               `json:"exitCode"`
}

// Change is one cluster's replica change of one workload. Old or New is nil when the cluster is
// not a target on that side (or the Workload does not exist there).
type Change struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Cluster   string `json:"cluster"`
	Old       *int32 `json:"old,omitempty"`
	New       *int32 `json:"new,omitempty"`
	Delta     int32  `json:"delta"`
	// Note is "Workload added", "Workload removed", "new target" or "no longer a target".
	Note string `json:"note,omitempty"`
}

// LoadOptions tune how manifests are read.
type LoadOptions struct {
	// DefaultNamespace is used for Workloads without metadata.namespace (the allocation's
	// tie-break depends on namespace/name, so it matters).
	DefaultNamespace string
	// Kustomize renders every path as a kustomization directory (kustomize build) before
	// reading it, as Flux's kustomize-controller would. Flux post-build substitution is not done.
	Kustomize bool
	// Log, when set, is told what a kustomize build reads outside its directory and which
	// remote repositories it clones (the CLI passes its stderr).
	Log io.Writer
}

// LoadWorkloads reads every .yaml, .yml and .json file under paths (directories recursively,
// multi-document files) and returns the Workloads, ignoring documents of other kinds. Documents
// that look like Workloads but cannot be decoded are returned as InvalidManifests; a path that
// cannot be read at all is an error.
func LoadWorkloads(paths []string, opts LoadOptions) ([]PlannedWorkloadSource, []InvalidManifest, error) {
	wls, _, invalid, err := loadManifests(paths, opts)
	return wls, invalid, err
}

// loadManifests is LoadWorkloads that also returns the ClusterMembers found (the roster that
// distribution.targetSelectors select from), sorted by name.
func loadManifests(paths []string, opts LoadOptions) ([]PlannedWorkloadSource, []polykubev1alpha1.ClusterMember, []InvalidManifest, error) {
	if opts.DefaultNamespace == "" {
		opts.DefaultNamespace = "default"
	}
	var roster []polykubev1alpha1.ClusterMember
	var wls []PlannedWorkloadSource
	var invalid []InvalidManifest
	var err error
	if opts.Kustomize {
		wls, invalid, err = loadKustomizations(paths, opts, &roster)
	} else {
		wls, invalid, err = loadFiles(paths, opts, &roster)
	}
	sort.SliceStable(roster, func(i, j int) bool { return roster[i].Name < roster[j].Name })
	return wls, roster, invalid, err
}

func loadFiles(paths []string, opts LoadOptions, roster *[]polykubev1alpha1.ClusterMember) ([]PlannedWorkloadSource, []InvalidManifest, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, status.Usagef("read %s: %v", p, err)
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if f != p && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			switch strings.ToLower(filepath.Ext(f)) {
			case ".yaml", ".yml", ".json":
				files = append(files, f)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("walk %s: %w", p, err)
		}
	}
	sort.Strings(files)

	var out []PlannedWorkloadSource
	var invalid []InvalidManifest
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", f, err)
		}
		wls, bad := decodeWorkloads(f, data, opts, roster)
		out = append(out, wls...)
		invalid = append(invalid, bad...)
	}
	return out, invalid, nil
}

// PlannedWorkloadSource is a decoded Workload and where it came from.
type PlannedWorkloadSource struct {
	Source   string
	Workload *polykubev1alpha1.Workload
}

func decodeWorkloads(file string, data []byte, opts LoadOptions, roster *[]polykubev1alpha1.ClusterMember) ([]PlannedWorkloadSource, []InvalidManifest) {
	var out []PlannedWorkloadSource
	var invalid []InvalidManifest
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		source := fmt.Sprintf("%s:%d", file, doc)
		if err != nil {
			invalid = append(invalid, InvalidManifest{Source: source, Reason: fmt.Sprintf("not valid YAML: %v", err)})
			break
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			doc--
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(raw, &tm); err != nil {
			invalid = append(invalid, InvalidManifest{Source: source, Reason: fmt.Sprintf("not a Kubernetes object: %v", err)})
			continue
		}
		if tm.Kind == "ClusterMember" && tm.APIVersion == polykubev1alpha1.GroupVersion.String() {
			// The roster targetSelectors select from; a member that cannot be decoded is the
			// API server's to reject, not the plan's.
			m := polykubev1alpha1.ClusterMember{}
			if err := yaml.Unmarshal(raw, &m); err == nil && m.Name != "" && roster != nil {
				*roster = append(*roster, m)
			}
			continue
		}
		if tm.Kind != "Workload" || !strings.HasPrefix(tm.APIVersion, polykubev1alpha1.GroupVersion.Group+"/") {
			continue
		}
		if tm.APIVersion != polykubev1alpha1.GroupVersion.String() {
			invalid = append(invalid, InvalidManifest{Source: source, Reason: fmt.Sprintf("apiVersion %s is not supported: use %s", tm.APIVersion, polykubev1alpha1.GroupVersion)})
			continue
		}
		w := &polykubev1alpha1.Workload{}
		if err := yaml.UnmarshalStrict(raw, w); err != nil {
			var meta struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			_ = yaml.Unmarshal(raw, &meta)
			name := ""
			if meta.Metadata.Name != "" {
				name = orDefault(meta.Metadata.Namespace, opts.DefaultNamespace) + "/" + meta.Metadata.Name
			}
			invalid = append(invalid, InvalidManifest{Source: source, Name: name, Reason: fmt.Sprintf("cannot decode the Workload: %v", err)})
			continue
		}
		if w.Name == "" {
			invalid = append(invalid, InvalidManifest{Source: source, Reason: "metadata.name is missing"})
			continue
		}
		if w.Namespace == "" {
			w.Namespace = opts.DefaultNamespace
		}
		out = append(out, PlannedWorkloadSource{Source: source, Workload: w})
	}
	return out, invalid
}

// Scope is what Plan shows beyond the allocation.
type Scope struct {
	// Cluster, when set, adds that cluster's replicas and rendered Deployment to every row.
	Cluster string
	// AssumeDown previews failover as if these clusters ran none of their share.
	AssumeDown []string
}

// Plan computes the allocation of every Workload under paths. cluster, when set, adds that
// cluster's replicas and rendered Deployment to every row.
func Plan(paths []string, cluster string, opts LoadOptions) (PlanReport, error) {
	return PlanScoped(paths, Scope{Cluster: cluster}, opts)
}

// PlanScoped is Plan with a failover preview: with scope.AssumeDown, every Workload that targets
// one of those clusters gets the replicas each survivor would run (placement.PlanFailover).
func PlanScoped(paths []string, scope Scope, opts LoadOptions) (PlanReport, error) {
	cluster := scope.Cluster
	wls, roster, invalid, err := loadManifests(paths, opts)
	if err != nil {
		return PlanReport{}, err
	}
	down := uniqueSorted(scope.AssumeDown)
	rep := PlanReport{APIVersion: status.APIVersion, Kind: status.KindPlan, Sources: paths, Cluster: cluster, AssumeDown: down,
		Workloads: []PlannedWorkload{}, Invalid: []InvalidManifest{}}
	known := map[string]bool{}
	for _, m := range roster {
		known[m.Name] = true
	}
	for _, m := range roster {
		rep.Roster = append(rep.Roster, m.Name)
	}
	rep.Invalid = append(rep.Invalid, invalid...)
	seen := map[string]string{}
	for _, s := range wls {
		w := s.Workload
		key := w.Namespace + "/" + w.Name
		if first, dup := seen[key]; dup {
			rep.Invalid = append(rep.Invalid, InvalidManifest{Source: s.Source, Name: key,
				Reason: fmt.Sprintf("Workload %s is defined twice (first in %s): keep one", key, first)})
			continue
		}
		seen[key] = s.Source
		alloc, err := placement.ForWorkloadIn(w, roster)
		if err != nil {
			reason := err.Error()
			if errors.Is(err, placement.ErrNoTargets) {
				reason += "; the plan resolves targetSelectors over the ClusterMembers in the paths given: add the roster's manifests"
			}
			rep.Invalid = append(rep.Invalid, InvalidManifest{Source: s.Source, Name: key, Reason: reason})
			continue
		}
		if err := checkOverrides(w); err != nil {
			rep.Invalid = append(rep.Invalid, InvalidManifest{Source: s.Source, Name: key, Reason: err.Error()})
			continue
		}
		if _, _, err := placement.FailoverFromWorkload(w); err != nil {
			rep.Invalid = append(rep.Invalid, InvalidManifest{Source: s.Source, Name: key, Reason: err.Error() + "; fix the Workload"})
			continue
		}
		p := PlannedWorkload{Namespace: w.Namespace, Name: w.Name, Source: s.Source,
			Strategy: w.Spec.Distribution.Strategy, Total: alloc.Total(), Allocation: status.SharesOf(alloc)}
		for _, sh := range alloc {
			known[sh.Cluster] = true
		}
		if placement.UsesRoster(w) {
			resolved, _ := placement.ResolveTargets(w.Spec.Distribution, roster)
			for _, t := range resolved {
				p.Targets = append(p.Targets, t.Cluster)
			}
		}
		if len(down) > 0 {
			if p.Failover, err = planFailover(w, roster, down); err != nil {
				// The allocation of the same spec succeeded: only a broken invariant gets here.
				return PlanReport{}, fmt.Errorf("preview the failover of Workload %s: %w", key, err)
			}
		}
		if cluster != "" {
			r, ok := alloc.For(cluster)
			if sh, inPreview := p.Failover.For(cluster); inPreview {
				r = sh.Replicas
			}
			p.Replicas, p.Targeted = &r, &ok
			if ok {
				p.Deployment, p.NotRendered = renderFor(w, roster, cluster, r)
				if p.Deployment != nil {
					p.Service = renderService(w, cluster)
				}
			}
		}
		rep.Workloads = append(rep.Workloads, p)
	}
	if err := checkAssumeDown(down, cluster, known); err != nil {
		return PlanReport{}, status.Usagef("%v", err)
	}
	sort.Slice(rep.Workloads, func(i, j int) bool {
		a, b := rep.Workloads[i], rep.Workloads[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	sortInvalid(rep.Invalid)
	if len(rep.Invalid) > 0 {
		rep.ExitCode = status.ExitInvalidManifest
	}
	return rep, nil
}

// Diff compares the plans of two sets of manifests (for example two git checkouts).
func Diff(oldPaths, newPaths []string, opts LoadOptions) (PlanDiff, error) {
	oldPlan, err := Plan(oldPaths, "", opts)
	if err != nil {
		return PlanDiff{}, fmt.Errorf("old side: %w", err)
	}
	newPlan, err := Plan(newPaths, "", opts)
	if err != nil {
		return PlanDiff{}, fmt.Errorf("new side: %w", err)
	}
	d := PlanDiff{APIVersion: status.APIVersion, Kind: status.KindPlanDiff, Old: oldPaths, New: newPaths, Changes: []Change{}, Invalid: []InvalidManifest{}}
	for _, iv := range oldPlan.Invalid {
		iv.Source = "old: " + iv.Source
		d.Invalid = append(d.Invalid, iv)
	}
	for _, iv := range newPlan.Invalid {
		iv.Source = "new: " + iv.Source
		d.Invalid = append(d.Invalid, iv)
	}

	type side struct {
		old, new     map[string]int32
		inOld, inNew bool
	}
	byKey := map[[2]string]*side{}
	get := func(ns, name string) *side {
		k := [2]string{ns, name}
		if byKey[k] == nil {
			byKey[k] = &side{old: map[string]int32{}, new: map[string]int32{}}
		}
		return byKey[k]
	}
	for _, p := range oldPlan.Workloads {
		s := get(p.Namespace, p.Name)
		s.inOld = true
		for _, sh := range p.Allocation {
			s.old[sh.Cluster] = sh.Replicas
		}
	}
	for _, p := range newPlan.Workloads {
		s := get(p.Namespace, p.Name)
		s.inNew = true
		for _, sh := range p.Allocation {
			s.new[sh.Cluster] = sh.Replicas
		}
	}
	keys := make([][2]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	for _, k := range keys {
		s := byKey[k]
		clusters := map[string]bool{}
		for c := range s.old {
			clusters[c] = true
		}
		for c := range s.new {
			clusters[c] = true
		}
		for _, cl := range sortedMapKeys(clusters) {
			o, inOld := s.old[cl]
			n, inNew := s.new[cl]
			if inOld == inNew && o == n {
				continue
			}
			ch := Change{Namespace: k[0], Name: k[1], Cluster: cl, Delta: n - o}
			switch {
			case !s.inOld:
				ch.Note = "Workload added"
			case !s.inNew:
				ch.Note = "Workload removed"
			case !inOld:
				ch.Note = "new target"
			case !inNew:
				ch.Note = "no longer a target"
			}
			if inOld {
				ch.Old = &o
			}
			if inNew {
				ch.New = &n
			}
			d.Changes = append(d.Changes, ch)
		}
	}
	if len(d.Invalid) > 0 {
		d.ExitCode = status.ExitInvalidManifest
	}
	return d, nil
}

// PrintPlan renders a PlanReport.
func PrintPlan(w io.Writer, p PlanReport, format string, opts status.PrintOptions) error {
	switch format {
	case status.FormatJSON:
		return render.JSON(w, p)
	case status.FormatYAML:
		return render.YAML(w, p)
	case status.FormatTable, "":
	default:
		return status.ValidateFormat(format)
	}
	if len(p.Workloads) == 0 {
		if _, err := io.WriteString(w, "No valid Workloads found.\n"); err != nil {
			return err
		}
	} else if p.Cluster != "" {
		head := []string{"WORKLOAD", "NAMESPACE", "STRATEGY", strings.ToUpper(p.Cluster), "TOTAL", "OVERRIDES", "IMAGES"}
		if len(p.AssumeDown) > 0 {
			head = append(head, "FAILOVER")
		}
		rows := [][]render.Cell{render.Header(append(head, "SOURCE")...)}
		for _, wl := range p.Workloads {
			mine := render.Colored("not a target", render.None)
			overrides, images := render.Text("-"), render.Text("-")
			if *wl.Targeted {
				text := fmt.Sprint(*wl.Replicas)
				if cell, ok := failoverCell(wl.Failover, p.Cluster); ok {
					text = cell
				}
				mine = render.Colored(text, render.Green)
				switch d := wl.Deployment; {
				case d == nil:
					overrides, images = render.Colored("not rendered", render.Yellow), render.Colored("not rendered", render.Yellow)
				default:
					overrides = render.Text(orDash(strings.Join(d.AppliedOverrides, ",")))
					images = render.Text(strings.Join(d.Images, " "))
				}
			}
			row := []render.Cell{render.Text(wl.Name), render.Text(wl.Namespace), render.Text(wl.Strategy), mine, render.Text(fmt.Sprint(wl.Total)), overrides, images}
			if len(p.AssumeDown) > 0 {
				row = append(row, render.Text(failoverSummary(wl.Failover)))
			}
			rows = append(rows, append(row, render.Text(wl.Source)))
		}
		if err := render.Table(w, rows, opts.Color); err != nil {
			return err
		}
		if err := printNotRendered(w, p, opts); err != nil {
			return err
		}
	} else {
		clusters := map[string]bool{}
		for _, wl := range p.Workloads {
			for _, s := range wl.Allocation {
				clusters[s.Cluster] = true
			}
		}
		names := sortedMapKeys(clusters)
		head := []string{"WORKLOAD", "NAMESPACE", "STRATEGY"}
		for _, n := range names {
			head = append(head, strings.ToUpper(n))
		}
		head = append(head, "TOTAL")
		if len(p.AssumeDown) > 0 {
			head = append(head, "FAILOVER")
		}
		rows := [][]render.Cell{render.Header(append(head, "SOURCE")...)}
		for _, wl := range p.Workloads {
			row := []render.Cell{render.Text(wl.Name), render.Text(wl.Namespace), render.Text(wl.Strategy)}
			for _, n := range names {
				text := replicasOrDash(wl.Allocation, n)
				if cell, ok := failoverCell(wl.Failover, n); ok {
					text = cell
				}
				row = append(row, render.Text(text))
			}
			row = append(row, render.Text(fmt.Sprint(wl.Total)))
			if len(p.AssumeDown) > 0 {
				row = append(row, render.Text(failoverSummary(wl.Failover)))
			}
			rows = append(rows, append(row, render.Text(wl.Source)))
		}
		if err := render.Table(w, rows, opts.Color); err != nil {
			return err
		}
	}
	return printInvalid(w, p.Invalid, opts)
}

// printNotRendered lists the rows of a --cluster plan whose Deployment could not be rendered.
func printNotRendered(w io.Writer, p PlanReport, opts status.PrintOptions) error {
	rows := [][]render.Cell{render.Header("NOT RENDERED", "WORKLOAD", "REASON")}
	for _, wl := range p.Workloads {
		if wl.NotRendered != "" {
			rows = append(rows, []render.Cell{render.Colored(wl.Source, render.Yellow), render.Text(wl.Namespace + "/" + wl.Name), render.Text(wl.NotRendered)})
		}
	}
	if len(rows) == 1 {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return render.Table(w, rows, opts.Color)
}

func replicasOrDash(s []status.Share, cluster string) string {
	for _, x := range s {
		if x.Cluster == cluster {
			return fmt.Sprint(x.Replicas)
		}
	}
	return "-"
}

func printInvalid(w io.Writer, invalid []InvalidManifest, opts status.PrintOptions) error {
	if len(invalid) == 0 {
		return nil
	}
	rows := [][]render.Cell{render.Header("INVALID", "WORKLOAD", "REASON")}
	for _, iv := range invalid {
		rows = append(rows, []render.Cell{render.Colored(iv.Source, render.Red), render.Text(orDash(iv.Name)), render.Text(iv.Reason)})
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return render.Table(w, rows, opts.Color)
}

// PrintDiff renders a PlanDiff.
func PrintDiff(w io.Writer, d PlanDiff, format string, opts status.PrintOptions) error {
	switch format {
	case status.FormatJSON:
		return render.JSON(w, d)
	case status.FormatYAML:
		return render.YAML(w, d)
	case status.FormatTable, "":
	default:
		return status.ValidateFormat(format)
	}
	if len(d.Changes) == 0 {
		if _, err := io.WriteString(w, "No replica moves.\n"); err != nil {
			return err
		}
	} else {
		rows := [][]render.Cell{render.Header("WORKLOAD", "NAMESPACE", "CLUSTER", "OLD", "NEW", "CHANGE")}
		for _, ch := range d.Changes {
			change := fmt.Sprintf("%+d", ch.Delta)
			if ch.Note != "" {
				change += " (" + ch.Note + ")"
			}
			cl := render.Green
			if ch.Delta < 0 {
				cl = render.Red
			}
			rows = append(rows, []render.Cell{render.Text(ch.Name), render.Text(ch.Namespace), render.Text(ch.Cluster), render.Text(ptrOrDash(ch.Old)), render.Text(ptrOrDash(ch.New)), render.Colored(change, cl)})
		}
		if err := render.Table(w, rows, opts.Color); err != nil {
			return err
		}
	}
	return printInvalid(w, d.Invalid, opts)
}

func ptrOrDash(p *int32) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprint(*p)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sortInvalid orders findings by file, then document number.
func sortInvalid(iv []InvalidManifest) {
	split := func(src string) (string, int) {
		i := strings.LastIndexByte(src, ':')
		if i < 0 {
			return src, 0
		}
		n, err := strconv.Atoi(src[i+1:])
		if err != nil {
			return src, 0
		}
		return src[:i], n
	}
	sort.SliceStable(iv, func(a, b int) bool {
		fa, da := split(iv[a].Source)
		fb, db := split(iv[b].Source)
		if fa != fb {
			return fa < fb
		}
		return da < db
	})
}

// loadKustomizations renders each path with kustomize and reads the Workloads of the result.
func loadKustomizations(paths []string, opts LoadOptions, roster *[]polykubev1alpha1.ClusterMember) ([]PlannedWorkloadSource, []InvalidManifest, error) {
	var out []PlannedWorkloadSource
	var invalid []InvalidManifest
	// Like Flux's kustomize-controller: files may come from outside the kustomization root.
	ko := krusty.MakeDefaultOptions()
	ko.LoadRestrictions = kustypes.LoadRestrictionsNone
	k := krusty.MakeKustomizer(ko)
	for _, p := range paths {
		if info, err := os.Stat(p); err != nil || !info.IsDir() {
			return nil, nil, status.Usagef("--kustomize needs kustomization directories; %s is not one", p)
		}
		fs := newReadsLog(p)
		res, err := k.Run(fs, p)
		if opts.Log != nil {
			fs.report(opts.Log, p)
		}
		if err != nil {
			return nil, nil, status.Usagef("kustomize build %s: %v", p, err)
		}
		data, err := res.AsYaml()
		if err != nil {
			return nil, nil, fmt.Errorf("render kustomize build %s: %w", p, err)
		}
		wls, bad := decodeWorkloads(p+" (kustomize build)", data, opts, roster)
		out = append(out, wls...)
		invalid = append(invalid, bad...)
	}
	return out, invalid, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func uniqueSorted(s []string) []string {
	set := map[string]bool{}
	for _, v := range s {
		set[v] = true
	}
	if len(set) == 0 {
		return nil
	}
	return sortedMapKeys(set)
}
