// Package contract loads the upgrade contract's corpus (placement/testdata/contract/): the
// Workloads, the roster they are placed over and the failover deficits to plan for, and computes
// the figures of it that two operator versions running side by side must agree on
// (docs/upgrading.md). The figures are pinned as golden files by placement's
// TestContract_Allocation; the objects the operator renders from the same corpus are pinned by
// operator/reconcilers/workload's TestContract_RenderedObjects.
//
// It is a package rather than test code so that both tests read the corpus the same way.
package contract

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// The files of a corpus directory.
const (
	WorkloadsFile = "workloads.yaml" // Workloads, one YAML document each
	RosterFile    = "roster.yaml"    // ClusterMembers, one YAML document each
	FailoverFile  = "failover.yaml"  // namespace/name → case name → cluster → deficit
	BindingsFile  = "bindings.yaml"  // DatastoreBindings, one YAML document each
)

// Corpus is a set of Workloads and the roster they are placed over.
type Corpus struct {
	Workloads []polykubev1alpha1.Workload
	Roster    []polykubev1alpha1.ClusterMember
	// Failover holds, per Workload (namespace/name), named deficit cases to plan failover for.
	Failover map[string]map[string]placement.Deficits
	// Bindings are DatastoreBindings of the Workloads, in the order they were established.
	Bindings []polykubev1alpha1.DatastoreBinding
}

// Load reads the corpus in dir.
func Load(dir string) (Corpus, error) {
	var c Corpus
	if err := readDocs(filepath.Join(dir, WorkloadsFile), func(b []byte) error {
		var w polykubev1alpha1.Workload
		if err := yaml.UnmarshalStrict(b, &w); err != nil {
			return err
		}
		c.Workloads = append(c.Workloads, w)
		return nil
	}); err != nil {
		return c, err
	}
	if err := readDocs(filepath.Join(dir, RosterFile), func(b []byte) error {
		var m polykubev1alpha1.ClusterMember
		if err := yaml.UnmarshalStrict(b, &m); err != nil {
			return err
		}
		c.Roster = append(c.Roster, m)
		return nil
	}); err != nil {
		return c, err
	}
	if err := readDocs(filepath.Join(dir, BindingsFile), func(b []byte) error {
		var db polykubev1alpha1.DatastoreBinding
		if err := yaml.UnmarshalStrict(b, &db); err != nil {
			return err
		}
		c.Bindings = append(c.Bindings, db)
		return nil
	}); err != nil {
		return c, err
	}
	b, err := os.ReadFile(filepath.Join(dir, FailoverFile))
	if err != nil {
		return c, err
	}
	if err := yaml.UnmarshalStrict(b, &c.Failover); err != nil {
		return c, fmt.Errorf("%s: %w", FailoverFile, err)
	}
	known := map[string]bool{}
	for _, w := range c.Workloads {
		key := w.Namespace + "/" + w.Name
		if known[key] {
			return c, fmt.Errorf("%s: Workload %s appears twice", WorkloadsFile, key)
		}
		known[key] = true
	}
	for _, db := range c.Bindings {
		if key := db.Namespace + "/" + db.Spec.WorkloadRef.Name; !known[key] {
			return c, fmt.Errorf("%s: DatastoreBinding %s/%s binds Workload %s, which %s does not hold", BindingsFile, db.Namespace, db.Name, key, WorkloadsFile)
		}
	}
	for key := range c.Failover {
		if !known[key] {
			return c, fmt.Errorf("%s names Workload %s, which %s does not hold", FailoverFile, key, WorkloadsFile)
		}
	}
	return c, nil
}

func readDocs(path string, each func([]byte) error) error {
	f, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(f)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		if err := each(doc); err != nil {
			return fmt.Errorf("%s: document %d: %w", path, i, err)
		}
	}
}

// Member returns the roster's ClusterMember named name, or nil.
func (c Corpus) Member(name string) *polykubev1alpha1.ClusterMember {
	for i := range c.Roster {
		if c.Roster[i].Name == name {
			return &c.Roster[i]
		}
	}
	return nil
}

// Figures are what every operator computes for one Workload and its peers compare, or would
// act on differently if two versions disagreed.
type Figures struct {
	Workload string `json:"workload"`
	// SpecHash is status.specHash (placement.SpecHash).
	SpecHash string `json:"specHash"`
	// Clusters holds every target of the Workload in the roster.
	Clusters map[string]ClusterFigures `json:"clusters"`
	// Failover holds the plan for each named deficit case of the corpus.
	Failover map[string]FailoverFigures `json:"failover,omitempty"`
}

// ClusterFigures are one target cluster's figures.
type ClusterFigures struct {
	// Replicas is the cluster's allocation (for an autoscaled Workload, its HPA minimum).
	Replicas int32 `json:"replicas"`
	// Autoscaling is the cluster's bounds, for an autoscaled Workload.
	Autoscaling *BoundsFig `json:"autoscaling,omitempty"`
	// TemplateHash is status.effectiveTemplateHash: the hash of the cluster's effective template.
	TemplateHash string `json:"templateHash"`
	// AppliedOverrides is status.appliedOverrides.
	AppliedOverrides []string `json:"appliedOverrides,omitempty"`
}

// BoundsFig is a cluster's autoscaling bounds (placement.Bounds).
type BoundsFig struct {
	MinShare int32 `json:"minShare"`
	Min      int32 `json:"min"`
	Max      int32 `json:"max"`
}

// FailoverFigures are the failover plan for one set of deficits.
type FailoverFigures struct {
	Deficits placement.Deficits          `json:"deficits"`
	MaxSurge string                      `json:"maxSurge"`
	Deficit  int64                       `json:"deficit"`
	Absorbed int64                       `json:"absorbed"`
	Clusters map[string]FailoverShareFig `json:"clusters"`
}

// FailoverShareFig is one cluster's share of a failover plan.
type FailoverShareFig struct {
	Base    int32 `json:"base"`
	Deficit int32 `json:"deficit"`
	Extra   int32 `json:"extra"`
}

// Compute returns the figures of the Workload w of the corpus.
func (c Corpus) Compute(w *polykubev1alpha1.Workload) (Figures, error) {
	key := w.Namespace + "/" + w.Name
	f := Figures{Workload: key, SpecHash: placement.SpecHash(w.Spec), Clusters: map[string]ClusterFigures{}}
	alloc, err := placement.ForWorkloadIn(w, c.Roster)
	if err != nil {
		return f, fmt.Errorf("allocate %s: %w", key, err)
	}
	bounds, autoscaled, err := placement.BoundsForWorkloadIn(w, c.Roster)
	if err != nil {
		return f, fmt.Errorf("autoscaling bounds of %s: %w", key, err)
	}
	for _, s := range alloc {
		member := c.Member(s.Cluster)
		if member == nil {
			return f, fmt.Errorf("%s targets cluster %q, which is not in %s: add it to the roster", key, s.Cluster, RosterFile)
		}
		tmpl, applied, err := placement.EffectiveTemplate(w.Spec, member)
		if err != nil {
			return f, fmt.Errorf("effective template of %s in %s: %w", key, s.Cluster, err)
		}
		cf := ClusterFigures{Replicas: s.Replicas, TemplateHash: placement.TemplateHash(tmpl), AppliedOverrides: applied}
		if autoscaled {
			b, _ := bounds.For(s.Cluster)
			cf.Autoscaling = &BoundsFig{MinShare: b.MinShare, Min: b.Min, Max: b.Max}
		}
		f.Clusters[s.Cluster] = cf
	}
	cases := c.Failover[key]
	if len(cases) == 0 {
		return f, nil
	}
	cfg, ok, err := placement.FailoverFromWorkload(w)
	if err != nil || !ok {
		return f, fmt.Errorf("%s lists failover cases for %s, which does not opt into failover (%v)", FailoverFile, key, err)
	}
	spec, err := placement.SpecFromWorkloadIn(w, c.Roster)
	if err != nil {
		return f, err
	}
	f.Failover = map[string]FailoverFigures{}
	for name, deficits := range cases {
		plan, err := placement.PlanFailover(spec, deficits, cfg.MaxSurge)
		if err != nil {
			return f, fmt.Errorf("failover of %s, case %s: %w", key, name, err)
		}
		ff := FailoverFigures{Deficits: deficits, MaxSurge: cfg.MaxSurge.String(), Deficit: plan.Deficit, Absorbed: plan.Absorbed,
			Clusters: map[string]FailoverShareFig{}}
		for _, s := range plan.Shares {
			ff.Clusters[s.Cluster] = FailoverShareFig{Base: s.Base, Deficit: s.Deficit, Extra: s.Extra}
		}
		f.Failover[name] = ff
	}
	return f, nil
}
