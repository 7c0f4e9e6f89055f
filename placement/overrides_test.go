package placement

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func TestParseImage(t *testing.T) {
	tests := []struct {
		image string
		want  imageRef
	}{
		{"nginx", imageRef{Repository: "nginx"}},
		{"nginx:1.27", imageRef{Repository: "nginx", Tag: "1.27"}},
		{"library/nginx:1.27", imageRef{Repository: "library/nginx", Tag: "1.27"}},
		{"registry.example.com/billing:v3.2.0", imageRef{Registry: "registry.example.com", Repository: "billing", Tag: "v3.2.0"}},
		{"registry.example.com/team/billing", imageRef{Registry: "registry.example.com", Repository: "team/billing"}},
		{"localhost/app:v1", imageRef{Registry: "localhost", Repository: "app", Tag: "v1"}},
		{"localhost:5000/app", imageRef{Registry: "localhost:5000", Repository: "app"}},
		{"registry.local:5000/team/app:v1", imageRef{Registry: "registry.local:5000", Repository: "team/app", Tag: "v1"}},
		{"Registry/app", imageRef{Registry: "Registry", Repository: "app"}},
		{"[::1]:5000/app:v1", imageRef{Registry: "[::1]:5000", Repository: "app", Tag: "v1"}},
		{"app@sha256:abcd", imageRef{Repository: "app", Digest: "sha256:abcd"}},
		{"app:v1@sha256:abcd", imageRef{Repository: "app", Tag: "v1", Digest: "sha256:abcd"}},
		{"registry.local:5000/app@sha256:abcd", imageRef{Registry: "registry.local:5000", Repository: "app", Digest: "sha256:abcd"}},
		{"registry.local:5000/app:v1@sha256:abcd", imageRef{Registry: "registry.local:5000", Repository: "app", Tag: "v1", Digest: "sha256:abcd"}},
		// No '/': a host-looking name with a port is a repository and a tag, as in Docker.
		{"localhost:5000", imageRef{Repository: "localhost", Tag: "5000"}},
		{"", imageRef{}},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			got := parseImage(tt.image)
			if got != tt.want {
				t.Fatalf("parseImage(%q) = %+v, want %+v", tt.image, got, tt.want)
			}
			if s := got.String(); s != tt.image {
				t.Errorf("parseImage(%q).String() = %q, want the input back", tt.image, s)
			}
		})
	}
}

func TestOverrideImage(t *testing.T) {
	tests := []struct {
		name   string
		image  string
		change polykubev1alpha1.ImageOverride
		want   string
	}{
		{"registry added to an image without one", "nginx:1.27",
			polykubev1alpha1.ImageOverride{Registry: "mirror.eu.example.com"}, "mirror.eu.example.com/nginx:1.27"},
		{"registry replaced, repository kept", "registry.example.com/team/billing:v3",
			polykubev1alpha1.ImageOverride{Registry: "registry.fra.internal:5000"}, "registry.fra.internal:5000/team/billing:v3"},
		{"registry with a port replaced by one without", "localhost:5000/app:v1",
			polykubev1alpha1.ImageOverride{Registry: "ghcr.io"}, "ghcr.io/app:v1"},
		{"registry replaced keeps the digest", "registry.example.com/app:v1@sha256:abcd",
			polykubev1alpha1.ImageOverride{Registry: "mirror.example.com"}, "mirror.example.com/app:v1@sha256:abcd"},
		{"repository replaced, registry and tag kept", "registry.example.com/billing:v3",
			polykubev1alpha1.ImageOverride{Repository: "team/billing"}, "registry.example.com/team/billing:v3"},
		{"repository replaced keeps the digest", "app@sha256:abcd",
			polykubev1alpha1.ImageOverride{Repository: "other/app"}, "other/app@sha256:abcd"},
		{"tag replaced", "registry.local:5000/app:v1",
			polykubev1alpha1.ImageOverride{Tag: "v2"}, "registry.local:5000/app:v2"},
		{"tag added to an image without one", "registry.local:5000/app",
			polykubev1alpha1.ImageOverride{Tag: "v2"}, "registry.local:5000/app:v2"},
		{"tag replaced drops the digest", "registry.local:5000/app:v1@sha256:abcd",
			polykubev1alpha1.ImageOverride{Tag: "v2"}, "registry.local:5000/app:v2"},
		{"tag on a digest-only image drops the digest", "app@sha256:abcd",
			polykubev1alpha1.ImageOverride{Tag: "v2"}, "app:v2"},
		{"all three", "nginx",
			polykubev1alpha1.ImageOverride{Registry: "localhost:5000", Repository: "library/nginx", Tag: "1.27"}, "localhost:5000/library/nginx:1.27"},
		{"repository on an empty image", "",
			polykubev1alpha1.ImageOverride{Registry: "r.example.com", Repository: "app"}, "r.example.com/app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := overrideImage(tt.image, tt.change); got != tt.want {
				t.Errorf("overrideImage(%q, %+v) = %q, want %q", tt.image, tt.change, got, tt.want)
			}
		})
	}
}

func TestMemberLabels(t *testing.T) {
	m := member("onprem-fra-1", "onprem", "eu-fra", "", map[string]string{
		"tier":                         "gold",
		polykubev1alpha1.ProviderLabel: "aws", // a free-form label cannot lie about the provider
		polykubev1alpha1.ZoneLabel:     "z9",  // nor claim a zone the spec does not have
	})
	want := labels.Set{
		"tier":                         "gold",
		polykubev1alpha1.ClusterLabel:  "onprem-fra-1",
		polykubev1alpha1.ProviderLabel: "onprem",
		polykubev1alpha1.RegionLabel:   "eu-fra",
	}
	if got := MemberLabels(m); !reflect.DeepEqual(got, want) {
		t.Errorf("MemberLabels = %v, want %v", got, want)
	}
	if m.Spec.Labels[polykubev1alpha1.ProviderLabel] != "aws" {
		t.Error("MemberLabels modified the member's labels")
	}
}

func member(name, provider, region, zone string, l map[string]string) *polykubev1alpha1.ClusterMember {
	return &polykubev1alpha1.ClusterMember{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       polykubev1alpha1.ClusterMemberSpec{Provider: provider, Region: region, Zone: zone, Labels: l},
	}
}

func baseSpec(overrides ...polykubev1alpha1.WorkloadOverride) polykubev1alpha1.WorkloadSpec {
	return polykubev1alpha1.WorkloadSpec{
		Distribution: polykubev1alpha1.Distribution{Strategy: polykubev1alpha1.StrategyStatic, Targets: []polykubev1alpha1.DistributionTarget{
			{ClusterRef: "aws-eu", Replicas: i32(1)}, {ClusterRef: "onprem-fra", Replicas: i32(1)},
		}},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "billing"}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "migrate", Image: "registry.example.com/billing-migrate:v3"}},
				Containers: []corev1.Container{
					{
						Name:  "api",
						Image: "registry.example.com/billing:v3.2.0",
						Env:   []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "OLD_FLAG", Value: "1"}},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("512Mi"),
						}},
					},
					{Name: "sidecar", Image: "envoyproxy/envoy:v1.30"},
				},
				Tolerations: []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}},
			},
		},
		Overrides: overrides,
	}
}

func byName(names ...string) polykubev1alpha1.ClusterSelector {
	return polykubev1alpha1.ClusterSelector{ClusterNames: names}
}

func byLabels(ml map[string]string) polykubev1alpha1.ClusterSelector {
	return polykubev1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchLabels: ml}}
}

var (
	awsEU     = member("aws-eu", "aws", "eu-central-1", "eu-central-1a", map[string]string{"jurisdiction": "eu"})
	onpremFRA = member("onprem-fra", "onprem", "eu-fra", "", map[string]string{"jurisdiction": "eu", "tier": "rack"})
)

func TestEffectiveTemplate(t *testing.T) {
	onpremRegistry := polykubev1alpha1.WorkloadOverride{
		Name:            "onprem-registry",
		ClusterSelector: byLabels(map[string]string{polykubev1alpha1.ProviderLabel: "onprem"}),
		Images:          []polykubev1alpha1.ImageOverride{{Container: "api", Registry: "registry.fra.internal:5000"}},
	}
	tests := []struct {
		name        string
		spec        polykubev1alpha1.WorkloadSpec
		member      *polykubev1alpha1.ClusterMember
		wantApplied []string
		// change turns the base template into the expected one (nil: unchanged).
		change func(tmpl *corev1.PodTemplateSpec)
	}{
		{name: "no overrides: the template as it is", spec: baseSpec(), member: awsEU},
		{name: "no overrides and no member", spec: baseSpec(), member: nil},
		{
			name: "selected by the well-known provider key", spec: baseSpec(onpremRegistry), member: onpremFRA,
			wantApplied: []string{"onprem-registry"},
			change: func(tmpl *corev1.PodTemplateSpec) {
				tmpl.Spec.Containers[0].Image = "registry.fra.internal:5000/billing:v3.2.0"
			},
		},
		{name: "an override that selects another cluster is ignored", spec: baseSpec(onpremRegistry), member: awsEU},
		{
			name: "an override that selects no cluster at all is ignored", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "nowhere", ClusterSelector: byName("gone"),
				NodeSelector: map[string]string{"a": "b"}}),
		},
		{
			name: "clusterNames and labelSelector must both hold", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "both",
				ClusterSelector: polykubev1alpha1.ClusterSelector{ClusterNames: []string{"aws-eu"},
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "rack"}}},
				NodeSelector: map[string]string{"a": "b"}}),
		},
		{
			name: "clusterNames and labelSelector both holding", member: onpremFRA,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "both",
				ClusterSelector: polykubev1alpha1.ClusterSelector{ClusterNames: []string{"onprem-fra"},
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "rack"}}},
				NodeSelector: map[string]string{"a": "b"}}),
			wantApplied: []string{"both"},
			change:      func(tmpl *corev1.PodTemplateSpec) { tmpl.Spec.NodeSelector = map[string]string{"a": "b"} },
		},
		{
			name: "an empty label selector selects every cluster", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "all",
				ClusterSelector: polykubev1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{}},
				PodAnnotations:  map[string]string{"example.com/all": "yes"}}),
			wantApplied: []string{"all"},
			change: func(tmpl *corev1.PodTemplateSpec) {
				tmpl.Annotations = map[string]string{"example.com/all": "yes"}
			},
		},
		{
			name: "match expressions over region and free-form labels", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "eu-not-rack",
				ClusterSelector: polykubev1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: polykubev1alpha1.RegionLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"eu-central-1", "eu-west-1"}},
					{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist},
				}}},
				PodLabels: map[string]string{"region": "eu"}}),
			wantApplied: []string{"eu-not-rack"},
			change:      func(tmpl *corev1.PodTemplateSpec) { tmpl.Labels["region"] = "eu" },
		},
		{
			name: "two overrides on the same container: the later wins, the earlier's other parts stay", member: onpremFRA,
			spec: baseSpec(
				polykubev1alpha1.WorkloadOverride{Name: "first", ClusterSelector: byName("onprem-fra"),
					Images: []polykubev1alpha1.ImageOverride{{Container: "api", Registry: "first.example.com", Tag: "v1"}}},
				polykubev1alpha1.WorkloadOverride{Name: "second", ClusterSelector: byName("onprem-fra"),
					Images: []polykubev1alpha1.ImageOverride{{Container: "api", Registry: "second.example.com"}}},
			),
			wantApplied: []string{"first", "second"},
			change: func(tmpl *corev1.PodTemplateSpec) {
				tmpl.Spec.Containers[0].Image = "second.example.com/billing:v1"
			},
		},
		{
			name: "the same two overrides the other way round", member: onpremFRA,
			spec: baseSpec(
				polykubev1alpha1.WorkloadOverride{Name: "second", ClusterSelector: byName("onprem-fra"),
					Images: []polykubev1alpha1.ImageOverride{{Container: "api", Registry: "second.example.com"}}},
				polykubev1alpha1.WorkloadOverride{Name: "first", ClusterSelector: byName("onprem-fra"),
					Images: []polykubev1alpha1.ImageOverride{{Container: "api", Registry: "first.example.com", Tag: "v1"}}},
			),
			wantApplied: []string{"second", "first"},
			change: func(tmpl *corev1.PodTemplateSpec) {
				tmpl.Spec.Containers[0].Image = "first.example.com/billing:v1"
			},
		},
		{
			name: "applied lists only the selecting overrides, in order", member: awsEU,
			spec: baseSpec(
				polykubev1alpha1.WorkloadOverride{Name: "c", ClusterSelector: byName("aws-eu"), NodeSelector: map[string]string{"c": "1"}},
				onpremRegistry,
				polykubev1alpha1.WorkloadOverride{Name: "a", ClusterSelector: byLabels(map[string]string{"jurisdiction": "eu"}), NodeSelector: map[string]string{"a": "1", "c": "2"}},
			),
			wantApplied: []string{"c", "a"},
			change:      func(tmpl *corev1.PodTemplateSpec) { tmpl.Spec.NodeSelector = map[string]string{"a": "1", "c": "2"} },
		},
		{
			name: "env: set replaces in place and appends, remove deletes, an unknown name is ignored", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "env", ClusterSelector: byName("aws-eu"),
				Env: []polykubev1alpha1.EnvOverride{{Container: "api",
					Set:    []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "REGION", Value: "eu"}},
					Remove: []string{"OLD_FLAG", "NEVER_SET"}}}}),
			wantApplied: []string{"env"},
			change: func(tmpl *corev1.PodTemplateSpec) {
				tmpl.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "REGION", Value: "eu"}}
			},
		},
		{
			name: "env of an init container; removing every variable", member: awsEU,
			spec: baseSpec(
				polykubev1alpha1.WorkloadOverride{Name: "init", ClusterSelector: byName("aws-eu"),
					Env: []polykubev1alpha1.EnvOverride{{Container: "migrate", Set: []corev1.EnvVar{{Name: "DRY_RUN", Value: "1"}}}}},
				polykubev1alpha1.WorkloadOverride{Name: "clear", ClusterSelector: byName("aws-eu"),
					Env: []polykubev1alpha1.EnvOverride{{Container: "api", Remove: []string{"LOG_LEVEL", "OLD_FLAG"}}}},
			),
			wantApplied: []string{"init", "clear"},
			change: func(tmpl *corev1.PodTemplateSpec) {
				tmpl.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "DRY_RUN", Value: "1"}}
				tmpl.Spec.Containers[0].Env = nil
			},
		},
		{
			name: "resources merge per resource; limits added", member: onpremFRA,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "more-memory", ClusterSelector: byName("onprem-fra"),
				Resources: []polykubev1alpha1.ResourcesOverride{
					{Container: "api", Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
						Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}},
					{Container: "sidecar", Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}},
				}}),
			wantApplied: []string{"more-memory"},
			change: func(tmpl *corev1.PodTemplateSpec) {
				tmpl.Spec.Containers[0].Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("300m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				}
				tmpl.Spec.Containers[1].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}
			},
		},
		{
			name: "tolerations are added once; node selector, pod labels and annotations merged", member: onpremFRA,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "rack", ClusterSelector: byName("onprem-fra"),
				Tolerations: []corev1.Toleration{
					{Key: "spot", Operator: corev1.TolerationOpExists},
					{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "billing", Effect: corev1.TaintEffectNoSchedule},
				},
				NodeSelector:   map[string]string{"rack": "r12"},
				PodLabels:      map[string]string{"app": "billing-onprem", "tier": "rack"},
				PodAnnotations: map[string]string{"example.com/rack": "r12"},
				Images:         []polykubev1alpha1.ImageOverride{{Container: "migrate", Tag: "v3-onprem"}},
			}),
			wantApplied: []string{"rack"},
			change: func(tmpl *corev1.PodTemplateSpec) {
				tmpl.Spec.Tolerations = append(tmpl.Spec.Tolerations,
					corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "billing", Effect: corev1.TaintEffectNoSchedule})
				tmpl.Spec.NodeSelector = map[string]string{"rack": "r12"}
				tmpl.Labels = map[string]string{"app": "billing-onprem", "tier": "rack"}
				tmpl.Annotations = map[string]string{"example.com/rack": "r12"}
				tmpl.Spec.InitContainers[0].Image = "registry.example.com/billing-migrate:v3-onprem"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.spec.DeepCopy()
			got, applied, err := EffectiveTemplate(tt.spec, tt.member)
			if err != nil {
				t.Fatalf("EffectiveTemplate: %v", err)
			}
			want := *tt.spec.Template.DeepCopy()
			if tt.change != nil {
				tt.change(&want)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("effective template:\n got %+v\nwant %+v", got.Spec, want.Spec)
			}
			if !reflect.DeepEqual(applied, tt.wantApplied) {
				t.Errorf("applied = %q, want %q", applied, tt.wantApplied)
			}
			if !reflect.DeepEqual(&tt.spec, before) {
				t.Error("EffectiveTemplate modified the spec")
			}
			if tt.change == nil && TemplateHash(got) != TemplateHash(tt.spec.Template) {
				t.Error("an unchanged template hashes differently from spec.template")
			}
			if tt.change != nil && TemplateHash(got) == TemplateHash(tt.spec.Template) {
				t.Error("a changed template hashes like spec.template")
			}
		})
	}
}

func TestEffectiveTemplate_Errors(t *testing.T) {
	nodeSel := map[string]string{"a": "b"}
	badSelector := func(req metav1.LabelSelectorRequirement) polykubev1alpha1.ClusterSelector {
		return polykubev1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{req}}}
	}
	tests := []struct {
		name   string
		spec   polykubev1alpha1.WorkloadSpec
		member *polykubev1alpha1.ClusterMember
		want   []string // substrings of the error
	}{
		{
			name: "a label selector with an unknown operator", member: awsEU,
			spec: baseSpec(
				polykubev1alpha1.WorkloadOverride{Name: "fine", ClusterSelector: byName("aws-eu"), NodeSelector: nodeSel},
				polykubev1alpha1.WorkloadOverride{Name: "broken", ClusterSelector: badSelector(metav1.LabelSelectorRequirement{Key: "tier", Operator: "Near", Values: []string{"x"}}), NodeSelector: nodeSel},
			),
			want: []string{`spec.overrides[1] "broken"`, "clusterSelector.labelSelector", "Near"},
		},
		{
			name: "a label selector In without values", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "empty-in",
				ClusterSelector: badSelector(metav1.LabelSelectorRequirement{Key: "tier", Operator: metav1.LabelSelectorOpIn}), NodeSelector: nodeSel}),
			want: []string{`spec.overrides[0] "empty-in"`, "clusterSelector.labelSelector"},
		},
		{
			name: "an invalid label key", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "bad-key",
				ClusterSelector: byLabels(map[string]string{"not a key!": "x"}), NodeSelector: nodeSel}),
			want: []string{`spec.overrides[0] "bad-key"`, "clusterSelector.labelSelector"},
		},
		{
			// The broken override names another cluster only: it is still an error here, so
			// that every cluster reports the same one.
			name: "a broken override that does not select this cluster", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "elsewhere",
				ClusterSelector: polykubev1alpha1.ClusterSelector{ClusterNames: []string{"onprem-fra"},
					LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}},
				NodeSelector: nodeSel}),
			want: []string{`spec.overrides[0] "elsewhere"`},
		},
		{
			name: "an image override of a container the template lacks", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "typo", ClusterSelector: byName("onprem-fra"),
				Images: []polykubev1alpha1.ImageOverride{{Container: "apj", Tag: "v2"}}}),
			want: []string{`spec.overrides[0] "typo"`, "images[0]", `no container "apj"`},
		},
		{
			name: "env of a container the template lacks", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "typo", ClusterSelector: byName("aws-eu"),
				Env: []polykubev1alpha1.EnvOverride{{Container: "web", Remove: []string{"A"}}}}),
			want: []string{`spec.overrides[0] "typo"`, "env[0]", `no container "web"`},
		},
		{
			name: "resources of a container the template lacks", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "typo", ClusterSelector: byName("aws-eu"),
				Resources: []polykubev1alpha1.ResourcesOverride{{Container: "web", Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}),
			want: []string{`spec.overrides[0] "typo"`, "resources[0]", `no container "web"`},
		},
		{
			name: "an image override that changes nothing", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "noop", ClusterSelector: byName("aws-eu"),
				Images: []polykubev1alpha1.ImageOverride{{Container: "api"}}}),
			want: []string{`spec.overrides[0] "noop"`, "registry, repository or tag"},
		},
		{
			name: "duplicate names", member: awsEU,
			spec: baseSpec(
				polykubev1alpha1.WorkloadOverride{Name: "same", ClusterSelector: byName("aws-eu"), NodeSelector: nodeSel},
				polykubev1alpha1.WorkloadOverride{Name: "same", ClusterSelector: byName("aws-eu"), NodeSelector: nodeSel},
			),
			want: []string{`spec.overrides[1] "same"`, "already used by spec.overrides[0]"},
		},
		{
			name: "no selector at all", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "unaimed", NodeSelector: nodeSel}),
			want: []string{`spec.overrides[0] "unaimed"`, "set clusterNames, labelSelector or both"},
		},
		{
			name: "the pod selector label", member: awsEU,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "sel", ClusterSelector: byName("aws-eu"),
				PodLabels: map[string]string{polykubev1alpha1.WorkloadNameLabel: "other"}}),
			want: []string{`spec.overrides[0] "sel"`, "podLabels"},
		},
		{
			name: "overrides without a member", member: nil,
			spec: baseSpec(polykubev1alpha1.WorkloadOverride{Name: "x", ClusterSelector: byName("aws-eu"), NodeSelector: nodeSel}),
			want: []string{"no ClusterMember"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.spec.DeepCopy()
			_, applied, err := EffectiveTemplate(tt.spec, tt.member)
			if err == nil {
				t.Fatalf("EffectiveTemplate accepted the spec (applied %q)", applied)
			}
			if !errors.Is(err, ErrInvalidOverride) {
				t.Errorf("error %v does not wrap ErrInvalidOverride", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !reflect.DeepEqual(&tt.spec, before) {
				t.Error("EffectiveTemplate modified the spec")
			}
		})
	}
}

func TestEffectiveTemplate_SharesNoMemoryWithTheSpec(t *testing.T) {
	spec := baseSpec(polykubev1alpha1.WorkloadOverride{Name: "everything", ClusterSelector: byName("aws-eu"),
		Env:          []polykubev1alpha1.EnvOverride{{Container: "api", Set: []corev1.EnvVar{{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}}},
		Resources:    []polykubev1alpha1.ResourcesOverride{{Container: "api", Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
		Tolerations:  []corev1.Toleration{{Key: "t", Operator: corev1.TolerationOpExists, TolerationSeconds: ptrTo[int64](30)}},
		NodeSelector: map[string]string{"n": "1"},
		PodLabels:    map[string]string{"l": "1"},
	})
	before := spec.DeepCopy()
	got, _, err := EffectiveTemplate(spec, awsEU)
	if err != nil {
		t.Fatal(err)
	}
	// Scribble over everything reachable from the result.
	got.Labels["l"] = "x"
	got.Labels["app"] = "x"
	got.Spec.NodeSelector["n"] = "x"
	c := &got.Spec.Containers[0]
	c.Env[0].Value = "x"
	c.Env[len(c.Env)-1].ValueFrom.SecretKeyRef.Key = "x"
	c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("9")
	c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("9")
	*got.Spec.Tolerations[len(got.Spec.Tolerations)-1].TolerationSeconds = 99
	got.Spec.Tolerations[0].Key = "x"
	got.Spec.InitContainers[0].Image = "x"
	if !reflect.DeepEqual(&spec, before) {
		t.Error("changing the effective template changed the spec: they share memory")
	}
}

func ptrTo[T any](v T) *T { return &v }

// pinnedTemplateHash is TemplateHash of the template below, as every operator computes it.
const pinnedTemplateHash = "d53d40d18bd86353f048d468d9dc31a3"

func TestTemplateHash_IsStable(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"b": "2", "a": "1"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "registry.example.com/billing:v3"}}},
	}
	if a, b := TemplateHash(tmpl), TemplateHash(*tmpl.DeepCopy()); a != b {
		t.Errorf("the same template hashed twice: %s and %s", a, b)
	}
	other := *tmpl.DeepCopy()
	other.Spec.Containers[0].Image = "mirror.example.com/billing:v3"
	if TemplateHash(tmpl) == TemplateHash(other) {
		t.Error("different templates have the same hash")
	}
	// The value is what every operator writes to status.effectiveTemplateHash and what
	// polykube-status recomputes: a change here is a change of the contract, so it is pinned.
	if h := TemplateHash(tmpl); h != pinnedTemplateHash {
		t.Errorf("TemplateHash changed: %s, was %s", h, pinnedTemplateHash)
	}
}

// FuzzEffectiveTemplate builds a spec with two overrides from the fuzzer's strings (images,
// selectors, env names, labels of any shape) and checks that EffectiveTemplate never panics,
// never modifies its input, is deterministic, and reports either an error or a template in
// which only the selected overrides were applied.
func FuzzEffectiveTemplate(f *testing.F) {
	f.Add("registry.example.com/billing:v3", "mirror.example.com", "team/billing", "v4", "tier", "In", "gold", "LOG_LEVEL", "aws-eu", true)
	f.Add("localhost:5000/app@sha256:abcd", "", "", "v2", "polykube.kismet.io/provider", "Exists", "", "A", "onprem-fra", false)
	f.Add("", "r.example.com", "", "", "bad key", "Near", "x", "", "", true)
	f.Add("a:b:c@@d/e", ":", "/", "@", "", "NotIn", "", "=", "x", false)
	f.Fuzz(func(t *testing.T, image, registry, repository, tag, key, op, value, envName, cluster string, sameContainer bool) {
		second := "sidecar"
		if sameContainer {
			second = "api"
		}
		spec := polykubev1alpha1.WorkloadSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{key: value}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{
						{Name: "api", Image: image, Env: []corev1.EnvVar{{Name: envName, Value: value}}},
						{Name: "sidecar", Image: image},
					},
					NodeSelector: map[string]string{key: value},
				},
			},
			Overrides: []polykubev1alpha1.WorkloadOverride{
				{
					Name:            "by-label",
					ClusterSelector: polykubev1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: metav1.LabelSelectorOperator(op), Values: []string{value}}}}},
					Images:          []polykubev1alpha1.ImageOverride{{Container: "api", Registry: registry, Repository: repository, Tag: tag}},
					Env:             []polykubev1alpha1.EnvOverride{{Container: "api", Set: []corev1.EnvVar{{Name: envName, Value: tag}}, Remove: []string{value}}},
					NodeSelector:    map[string]string{key: tag},
				},
				{
					Name:            "by-name",
					ClusterSelector: polykubev1alpha1.ClusterSelector{ClusterNames: []string{cluster}},
					Images:          []polykubev1alpha1.ImageOverride{{Container: second, Tag: value}},
					Resources:       []polykubev1alpha1.ResourcesOverride{{Container: second, Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
					Tolerations:     []corev1.Toleration{{Key: key, Value: value}},
					PodLabels:       map[string]string{key: registry},
					PodAnnotations:  map[string]string{value: key},
				},
			},
		}
		m := member(cluster, "onprem", value, tag, map[string]string{key: value})
		before, memberBefore := spec.DeepCopy(), m.DeepCopy()

		got, applied, err := EffectiveTemplate(spec, m)
		if !reflect.DeepEqual(&spec, before) || !reflect.DeepEqual(m, memberBefore) {
			t.Fatal("EffectiveTemplate modified its input")
		}
		got2, applied2, err2 := EffectiveTemplate(spec, m)
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(applied, applied2) || TemplateHash(got) != TemplateHash(got2) {
			t.Fatal("EffectiveTemplate is not deterministic")
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidOverride) {
				t.Fatalf("error %v does not wrap ErrInvalidOverride", err)
			}
			return
		}
		for _, name := range applied {
			if name != "by-label" && name != "by-name" {
				t.Fatalf("applied names an unknown override %q", name)
			}
		}
		if len(applied) > 0 && applied[0] == "by-name" && len(applied) > 1 {
			t.Fatalf("applied out of order: %q", applied)
		}
		// "by-name" names exactly this cluster, so it always applies.
		if len(applied) == 0 || applied[len(applied)-1] != "by-name" {
			t.Fatalf("the override naming this cluster was not applied: %q", applied)
		}
		if len(applied) == 1 && got.Spec.NodeSelector[key] != value {
			t.Fatal("the override that did not select this cluster changed the node selector")
		}
		// The result shares no memory with the spec.
		got.Spec.Containers[0].Image += "x"
		got.Labels[key] += "x"
		got.Spec.NodeSelector[key] += "x"
		if !reflect.DeepEqual(&spec, before) {
			t.Fatal("the effective template shares memory with the spec")
		}
	})
}
