package status

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// mirrored is api (6 replicas over alpha, beta and gamma, image registry.example/api:1.5.0) with
// two overrides: eu-mirror pulls from mirror.eu.example in region eu, gamma-tag runs tag 1.5.1
// on gamma.
func mirrored() polykubev1alpha1.Workload {
	w := weighted("shop", "api", 6, fleetClusters...)
	w.Spec.Template = corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "registry.example/api:1.5.0"}}}}
	w.Spec.Overrides = []polykubev1alpha1.WorkloadOverride{
		{Name: "eu-mirror",
			ClusterSelector: polykubev1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{polykubev1alpha1.RegionLabel: "eu"}}},
			Images:          []polykubev1alpha1.ImageOverride{{Container: "api", Registry: "mirror.eu.example"}}},
		{Name: "gamma-tag",
			ClusterSelector: polykubev1alpha1.ClusterSelector{ClusterNames: []string{"gamma"}},
			Images:          []polykubev1alpha1.ImageOverride{{Container: "api", Tag: "1.5.1"}}},
	}
	return w
}

// rendered is w as the operator of cluster writes it, its effective template rendered for its
// ClusterMember in roster, and the Deployment it runs from that template.
func rendered(w polykubev1alpha1.Workload, cluster string, roster []polykubev1alpha1.ClusterMember) (polykubev1alpha1.Workload, appsv1.Deployment) {
	w = operated(w, cluster)
	tmpl, applied, err := placement.EffectiveTemplate(w.Spec, memberNamed(roster, cluster))
	if err != nil {
		panic(err)
	}
	w.Status.AppliedOverrides, w.Status.EffectiveTemplateHash = applied, placement.TemplateHash(tmpl)
	d := deployment(w.Namespace, w.Name, w.Status.DesiredReplicas)
	d.Labels[polykubev1alpha1.ClusterLabel] = cluster
	d.Spec.Template = *tmpl.DeepCopy()
	d.Spec.Template.Labels = map[string]string{polykubev1alpha1.WorkloadNameLabel: w.Name}
	// What the API server defaults does not matter to the comparison.
	d.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	return w, d
}

// mirroredFleet is the healthy fleet with alpha in region eu in every roster, and api rendered
// by each operator from its own roster.
func mirroredFleet() []Snapshot {
	snaps := healthyFleet()
	for i, c := range fleetClusters {
		for j := range snaps[i].ClusterMembers {
			if snaps[i].ClusterMembers[j].Name == "alpha" {
				snaps[i].ClusterMembers[j].Spec.Region = "eu"
			}
		}
		w, d := rendered(mirrored(), c, snaps[i].ClusterMembers)
		snaps[i].Workloads = append(snaps[i].Workloads, w)
		snaps[i].Deployments = append(snaps[i].Deployments, d)
	}
	return snaps
}

func TestMerge_Overrides_RecomputedPerCluster(t *testing.T) {
	g := NewWithT(t)
	r := Merge(mirroredFleet(), Query{Timeout: 5 * time.Second})

	g.Expect(kinds(r)).To(BeEmpty())
	g.Expect(r.Summary.ExitCode).To(Equal(ExitOK))
	row := workloadRow(r, "api")
	want := map[string][]string{"alpha": {"eu-mirror"}, "beta": nil, "gamma": {"gamma-tag"}}
	images := map[string]string{"alpha": "api=mirror.eu.example/api:1.5.0", "beta": "api=registry.example/api:1.5.0", "gamma": "api=registry.example/api:1.5.1"}
	for _, c := range row.Clusters {
		g.Expect(c.Template).NotTo(BeNil(), c.Cluster)
		g.Expect(c.Template.AppliedOverrides).To(Equal(want[c.Cluster]), c.Cluster)
		g.Expect(c.Template.ExpectedOverrides).To(Equal(want[c.Cluster]), c.Cluster)
		g.Expect(c.Template.ExpectedTemplateHash).To(Equal(c.Template.EffectiveTemplateHash), c.Cluster)
		g.Expect(c.Template.Images).To(Equal([]string{images[c.Cluster]}), c.Cluster)
	}
	g.Expect(row.Clusters[0].Template.EffectiveTemplateHash).NotTo(Equal(row.Clusters[1].Template.EffectiveTemplateHash))
	// Workloads without overrides whose status reports no hash show no template.
	g.Expect(workloadRow(r, "billing-api").Clusters[0].Template).To(BeNil())
}

func TestMerge_Overrides_Disagreements(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(s []Snapshot)
		want    []string
		message string
	}{
		{
			name: "an operator that hashes the template differently",
			mutate: func(s []Snapshot) {
				findWorkload(&s[1], "api").Status.EffectiveTemplateHash = "0123456789abcdef"
			},
			want:    []string{"TemplateNotAsComputed:Workload shop/api:beta"},
			message: "beta reports overrides [] and effectiveTemplateHash 0123456789abcdef, but rendering its spec for its ClusterMember beta gives overrides [] and ",
		},
		{
			name: "a cluster whose ClusterMember changed since its operator rendered",
			mutate: func(s []Snapshot) {
				w := findWorkload(&s[0], "api")
				w.Status.AppliedOverrides = nil
				w.Status.EffectiveTemplateHash = placement.TemplateHash(w.Spec.Template)
			},
			want:    []string{"TemplateNotAsComputed:Workload shop/api:alpha"},
			message: "its ClusterMember alpha changed since the operator's last reconcile",
		},
		{
			name: "an operator that predates overrides",
			mutate: func(s []Snapshot) {
				w := findWorkload(&s[2], "api")
				w.Status.AppliedOverrides, w.Status.EffectiveTemplateHash = nil, ""
			},
			want:    []string{"TemplateNotAsComputed:Workload shop/api:gamma"},
			message: "overrides [gamma-tag] select it: its operator predates spec.overrides",
		},
		{
			name: "a Deployment whose image was edited by hand",
			mutate: func(s []Snapshot) {
				s[0].Deployments[len(s[0].Deployments)-1].Spec.Template.Spec.Containers[0].Image = "registry.example/api:debug"
			},
			want:    []string{"TemplateNotAsComputed:Workload shop/api:alpha"},
			message: "Deployment shop/api in alpha does not run its effective template: container api runs registry.example/api:debug, not mirror.eu.example/api:1.5.0",
		},
		{
			name: "an override naming a container the template lacks is invalid in every cluster",
			mutate: func(s []Snapshot) {
				for i := range s {
					findWorkload(&s[i], "api").Spec.Overrides[1].Images[0].Container = "sidecar"
				}
			},
			want: []string{
				"InvalidSpec:Workload shop/api:alpha", "InvalidSpec:Workload shop/api:beta", "InvalidSpec:Workload shop/api:gamma",
			},
			message: `the copy in alpha cannot be rendered: invalid override: spec.overrides[1] "gamma-tag": images[0]: the template has no container "sidecar"; fix the manifest in Git`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := mirroredFleet()
			tt.mutate(s)
			r := Merge(s, Query{Timeout: 5 * time.Second})
			g.Expect(kinds(r)).To(Equal(tt.want))
			g.Expect(r.Disagreements[0].Message).To(ContainSubstring(tt.message))
			g.Expect(r.Summary.ExitCode).To(Equal(ExitDisagreement))
		})
	}
}

func TestMerge_Overrides_NotCompared(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s []Snapshot)
	}{
		{"a status behind its spec (reported as not ready instead)", func(s []Snapshot) {
			w := findWorkload(&s[1], "api")
			w.Generation = 2
			w.Status.EffectiveTemplateHash = "stale"
		}},
		{"a Deployment another cluster's operator made (the operator reports IdentityMismatch)", func(s []Snapshot) {
			d := &s[0].Deployments[len(s[0].Deployments)-1]
			d.Labels[polykubev1alpha1.ClusterLabel] = "beta"
			d.Spec.Template.Spec.Containers[0].Image = "other"
		}},
		{"a cluster with no ClusterMember of its name (the operator creates nothing)", func(s []Snapshot) {
			s[1].ClusterMembers = s[1].ClusterMembers[:1]
			for i := range s {
				s[i].Federations = nil
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := mirroredFleet()
			tt.mutate(s)
			r := Merge(s, Query{Timeout: 5 * time.Second})
			for _, d := range r.Disagreements {
				g.Expect(d.Kind).NotTo(Equal(DisagreeTemplate), d.Message)
			}
		})
	}
}
