// Package topology describes a test-bed federation: which clusters to create, with which
// provider facts (the future ClusterMember of each), on which test-bed provider, and which
// add-ons to install. A Topology is loaded strictly and validated the way kind validates its
// cluster config: every problem is reported, each saying which field is wrong and why.
package topology

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// APIVersion and Kind identify a Topology file.
const (
	APIVersion = "testbed.polykube.kismet.io/v1alpha1"
	Kind       = "Topology"
)

// Test-bed providers: where the clusters come from.
const (
	ProviderKwok     = "kwok"
	ProviderExisting = "existing"
	ProviderKind     = "kind"
	ProviderK0s      = "k0s"
)

// Add-ons, in the order they are installed.
const (
	AddonGit  = "git"
	AddonFlux = "flux"
	// AddonArgoCD delivers Git with Argo CD instead of Flux (Topology.Delivery argocd: an
	// Argo CD per cluster delivering to that cluster only; argocd-central: one Argo CD, beside
	// the first cluster, delivering to every cluster through an ApplicationSet).
	AddonArgoCD   = "argocd"
	AddonOperator = "operator"
	// AddonMeshMirror copies the EndpointSlices of global Services between the clusters as
	// Cilium's endpoint-slice synchronisation would (package testbed/meshmirror): kwok has no
	// Cilium. Not installed by default; the scenario suite adds it when a selected scenario
	// is tagged @mesh-mirror.
	AddonMeshMirror = "mesh-mirror"
	// AddonPrometheus runs a Prometheus per cluster that scrapes its operator with the
	// metrics reader's token and evaluates the alert rules of gitops/monitoring.
	AddonPrometheus = "prometheus"
	// AddonRegistry runs an OCI registry (distribution's, from the toolchain) on the machine:
	// what a release is published to and Flux and the nodes pull from.
	AddonRegistry = "registry"
)

// Where the add-ons run (Topology.AddonPlacement).
const (
	PlacementHost    = "host"
	PlacementCluster = "cluster"
)

// The image sources of the in-cluster bed (Topology.Images).
const (
	ImagesUpstream = "upstream"
	ImagesLocal    = "local"
)

// The delivery systems (Topology.Delivery): what applies the Git repository in each cluster.
const (
	DeliveryFlux   = "flux"
	DeliveryArgoCD = "argocd"
	// DeliveryArgoCDCentral is the article's shape: one Argo CD (its API objects in the first
	// cluster, its processes beside it) holding every cluster's credentials, with the
	// ApplicationSet of examples/argocd generating an Application per cluster.
	DeliveryArgoCDCentral = "argocd-central"
)

// Addons lists the add-ons installed by default with Flux delivery, in install order; with
// Argo CD delivery argocd stands in for flux.
var Addons = []string{AddonGit, AddonFlux, AddonOperator}

// OptionalAddons are the add-ons a topology may add to those, installed after them.
var OptionalAddons = []string{AddonMeshMirror, AddonPrometheus, AddonRegistry}

// deliveryAddon is the add-on of each delivery system.
var deliveryAddon = map[string]string{DeliveryFlux: AddonFlux, DeliveryArgoCD: AddonArgoCD, DeliveryArgoCDCentral: AddonArgoCD}

// addonRequires says which add-on needs which other one first; "delivery" is the add-on of
// the topology's delivery system.
var addonRequires = map[string]string{AddonFlux: AddonGit, AddonArgoCD: AddonGit, AddonOperator: "delivery", AddonPrometheus: AddonOperator}

// CloudProviders are the values of ClusterMember spec.provider.
var CloudProviders = []string{"aws", "gcp", "azure", "onprem", "kind", "k0s", "kwok", "other"}

// MaxNameLength is the longest cluster name Cilium ClusterMesh accepts.
const MaxNameLength = 32

// Topology is a federation of clusters for the test bed.
type Topology struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	// Name names the federation (the Federation object) and, by default, the test-bed run.
	Name string `json:"name"`
	// Provider is the test-bed provider that creates the clusters: kwok (default), existing,
	// kind or k0s.
	Provider string `json:"provider,omitempty"`
	// Clusters are the member clusters.
	Clusters []Cluster `json:"clusters"`
	// Addons are installed in the fixed order registry, git, flux, operator, mesh-mirror,
	// prometheus; git, flux and operator each need the one before, and prometheus needs the
	// operator. Unset means git, flux and operator.
	Addons []string `json:"addons,omitempty"`
	// AddonPlacement is where Flux and the operator run: "host" (processes of this machine,
	// each with its cluster's kubeconfig) or "cluster" (workloads in the clusters, from images,
	// as in production). Unset means the provider's own: host for kwok and existing, cluster
	// for kind and k0s. Existing clusters take either.
	AddonPlacement string `json:"addonPlacement,omitempty"`
	// Delivery is what applies the Git repository in each cluster: "flux" (the default:
	// source- and kustomize-controller per cluster), "argocd" (an Argo CD application-
	// controller and repo-server per cluster, each delivering to its own cluster only) or
	// "argocd-central" (one Argo CD, the hub, beside the first cluster and keeping its objects
	// there, with an applicationset-controller: it holds every cluster's credentials). Its
	// add-on (flux or argocd) takes the same place in Addons.
	Delivery string `json:"delivery,omitempty"`
	// Flux configures the Flux add-on; with Argo CD delivery, Interval is how often Argo CD
	// looks at Git (its --app-resync).
	Flux FluxOptions `json:"flux,omitempty"`
	// MeshMirror configures the mesh-mirror add-on.
	MeshMirror MeshMirrorOptions `json:"meshMirror,omitzero"`
	// Prometheus configures the prometheus add-on.
	Prometheus PrometheusOptions `json:"prometheus,omitzero"`
	// Registry configures the registry add-on.
	Registry RegistryOptions `json:"registry,omitzero"`
	// Images says where the in-cluster bed's images come from: "upstream" (the default: the
	// nodes pull kindest/node's, quay.io's Cilium and ghcr.io's Flux images) or "local" (only
	// images built on this machine by `polykube-testbed images build`; nothing is pulled).
	// The kwok provider runs no images and ignores it.
	Images string `json:"images,omitempty"`
	// Waits override how long (and how often) the test bed waits for each condition; keys
	// are the names in DefaultWaits.
	Waits map[string]Wait `json:"waits,omitempty"`
	// Network is how the clusters' nodes reach each other: "shared" (the default: every node
	// of every cluster on one Docker network) or "isolated" (kind only: each cluster on a
	// Docker network of its own with no route to the others, and every node also on one
	// shared "internet" network on which only UDP to the overlay's port passes). Isolated
	// clusters need an overlay to reach each other.
	Network string `json:"network,omitempty"`
	// Overlay joins the clusters of an isolated network: "wireguard" (the test bed's overlay
	// agent, package testbed/overlay, on every node: what Netmaker does for a real fleet).
	Overlay string `json:"overlay,omitempty"`
	// OverlayPort is the UDP port the overlay receives on (default 51820 with an overlay): the
	// only traffic the internet network lets through.
	OverlayPort int `json:"overlayPort,omitempty"`
	// OverlayCIDR is the overlay's own network (default 100.96.0.0/16 with an overlay); each
	// cluster's node takes the address numbered by its cluster ID (overlay.OverlayAddress).
	OverlayCIDR string `json:"overlayCIDR,omitempty"`
}

// Networks of a topology (Topology.Network) and its overlays (Topology.Overlay).
const (
	NetworkShared    = "shared"
	NetworkIsolated  = "isolated"
	OverlayWireGuard = "wireguard"
	// DefaultOverlayPort is WireGuard's customary port.
	DefaultOverlayPort = 51820
	// DefaultOverlayCIDR is inside 100.64.0.0/10 (shared address space, RFC 6598), which
	// neither Docker nor the topologies' pod and service CIDRs use.
	DefaultOverlayCIDR = "100.96.0.0/16"
)

// Isolated reports whether the clusters share no network (Network isolated).
func (t *Topology) Isolated() bool { return t.Network == NetworkIsolated }

// Cluster is one member cluster: its name and the facts its ClusterMember will state.
type Cluster struct {
	// Name is the cluster's name, a DNS label of at most 32 characters.
	Name string `json:"name"`
	// Provider is the ClusterMember's provider (aws, gcp, onprem, …), not the test-bed provider.
	Provider string `json:"provider"`
	Region   string `json:"region,omitempty"`
	Zone     string `json:"zone,omitempty"`
	// ClusterID is the Cilium cluster ID, unique in the federation, 1–255.
	ClusterID int32 `json:"clusterID"`
	// PodCIDRs are the cluster's pod networks; fake nodes get /24s out of the first one.
	PodCIDRs []string `json:"podCIDRs"`
	// ServiceCIDR is the cluster's service network, given to its API server.
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// FakeNodes is how many kwok nodes to create (default 1).
	FakeNodes int `json:"fakeNodes,omitempty"`
	// Labels are copied into the ClusterMember.
	Labels map[string]string `json:"labels,omitempty"`

	// Kubeconfig and Context select the cluster with the existing provider.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Context    string `json:"context,omitempty"`

	// MeshName is the name Cilium goes by in this cluster (Helm cluster.name), default the
	// cluster's name. Another name reproduces a user's misconfigured mesh identity: the peers
	// then see this cluster's endpoints under a source that names no ClusterMember (the
	// mesh-identity feature). Only the providers that install Cilium (kind, k0s) take it; on
	// kwok a scenario gives the mesh mirror another name with a step instead.
	MeshName string `json:"meshName,omitempty"`
}

// CiliumName is the name Cilium goes by in the cluster: MeshName when set, else Name.
func (c Cluster) CiliumName() string {
	if c.MeshName != "" {
		return c.MeshName
	}
	return c.Name
}

// Misnamed lists the clusters whose Cilium goes by another name than the cluster's (MeshName).
func (t *Topology) Misnamed() []string {
	var out []string
	for _, c := range t.Clusters {
		if c.CiliumName() != c.Name {
			out = append(out, c.Name)
		}
	}
	return out
}

// FluxOptions configure the Flux add-on.
type FluxOptions struct {
	// Interval is how often Flux fetches Git (the GitRepository's interval, default 10s).
	// A new revision is applied as soon as it is fetched, whatever ApplyInterval is.
	Interval Duration `json:"interval,omitempty"`
	// ApplyInterval is how often Flux re-applies the last revision when nothing changed, to
	// undo drift (the Kustomization's interval, default 1m). Every re-apply server-side applies
	// the operator's CRDs, so a short one costs CPU on every cluster all the time.
	ApplyInterval Duration `json:"applyInterval,omitempty"`
}

// MeshMirrorOptions configure the mesh-mirror add-on.
type MeshMirrorOptions struct {
	// Interval is how often the mirror reads every cluster and writes the mirrored slices
	// (default 1s when the add-on is listed): the mirror's latency.
	Interval Duration `json:"interval,omitzero"`
	// CacheTTL is how long a cluster that cannot be read keeps its mirrored slices in the
	// others, as Cilium's clustermesh.cacheTTL (default 5s here; Cilium's own default, 0s,
	// never removes them, and capacity failover of a stopped cluster needs a non-zero one).
	CacheTTL Duration `json:"cacheTTL,omitzero"`
}

// PrometheusOptions configure the prometheus add-on.
type PrometheusOptions struct {
	// AlertForAtMost, when set, shortens every alert's `for` that is longer to this, in the
	// test bed's copy of the rules only, so that a scenario can wait an alert out (the shipped
	// PolykubeFailoverActiveTooLong waits 30 minutes). Unset, the rules run as shipped.
	AlertForAtMost Duration `json:"alertForAtMost,omitzero"`
}

// RegistryOptions configure the registry add-on.
type RegistryOptions struct {
	// Address is the IP address the registry listens on, over plain HTTP (default 127.0.0.1:
	// the host bed's Flux and operators are processes of this machine). With add-ons in
	// kind clusters a loopback address is replaced by the gateway of the nodes' Docker network,
	// where their containerd is pointed at it (a hosts.toml in every node) and pulls the
	// Polykube image from it.
	Address string `json:"address,omitempty"`
	// Mirrors are registry host names the in-cluster bed's nodes pull from this registry, as a
	// site's own mirror: an image named <mirror>/<path> is pulled as <path> from it (a
	// hosts.toml for each in every node). A scenario's image override that names a site's
	// registry then runs real pods.
	Mirrors []string `json:"mirrors,omitempty"`
}

// Wait is a timeout and a polling interval.
type Wait struct {
	Timeout  Duration `json:"timeout"`
	Interval Duration `json:"interval,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("10s") in YAML.
type Duration struct{ time.Duration }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return []byte(`"` + d.String() + `"`), nil }

// UnmarshalJSON reads a duration string such as "10s" or "1m30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 10s or 2m", s)
	}
	d.Duration = v
	return nil
}

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the default topology as written in examples/local-multicluster/topology.yaml.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// Default returns the default topology: the article's three clusters.
func Default() *Topology {
	t, err := Parse(defaultYAML)
	if err != nil {
		panic("embedded default topology: " + err.Error())
	}
	return t
}

// Load reads, parses and validates a topology file.
func Load(path string) (*Topology, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read topology: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("topology %s: %w", path, err)
	}
	return t, nil
}

// Parse decodes a topology strictly (unknown fields are errors), applies defaults and
// validates it.
func Parse(data []byte) (*Topology, error) {
	var t Topology
	if err := yaml.UnmarshalStrict(data, &t); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	t.SetDefaults()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Marshal writes the topology as YAML.
func (t *Topology) Marshal() ([]byte, error) { return yaml.Marshal(t) }

// SetDefaults fills in what a topology may leave out.
func (t *Topology) SetDefaults() {
	if t.Provider == "" {
		t.Provider = ProviderKwok
	}
	if t.Delivery == "" {
		t.Delivery = DeliveryFlux
	}
	if t.Addons == nil {
		t.Addons = slices.Clone(Addons)
		if a := deliveryAddon[t.Delivery]; a != "" {
			t.Addons[slices.Index(t.Addons, AddonFlux)] = a
		}
	}
	if t.Flux.Interval.Duration == 0 {
		t.Flux.Interval.Duration = 10 * time.Second
	}
	if t.Flux.ApplyInterval.Duration == 0 {
		t.Flux.ApplyInterval.Duration = time.Minute
	}
	if t.HasAddon(AddonMeshMirror) {
		if t.MeshMirror.Interval.Duration == 0 {
			t.MeshMirror.Interval.Duration = time.Second
		}
		if t.MeshMirror.CacheTTL.Duration == 0 {
			t.MeshMirror.CacheTTL.Duration = 5 * time.Second
		}
	}
	if t.HasAddon(AddonRegistry) && t.Registry.Address == "" {
		t.Registry.Address = "127.0.0.1"
	}
	if t.Network == "" {
		t.Network = NetworkShared
	}
	if t.Overlay != "" {
		if t.OverlayPort == 0 {
			t.OverlayPort = DefaultOverlayPort
		}
		if t.OverlayCIDR == "" {
			t.OverlayCIDR = DefaultOverlayCIDR
		}
	}
	for i := range t.Clusters {
		if t.Clusters[i].FakeNodes == 0 && t.Provider == ProviderKwok {
			t.Clusters[i].FakeNodes = 1
		}
	}
}

// DeliveryAddon is the add-on of the topology's delivery system (flux or argocd).
func (t *Topology) DeliveryAddon() string { return deliveryAddon[t.Delivery] }

// ArgoCD reports whether Argo CD delivers (either shape).
func (t *Topology) ArgoCD() bool { return t.DeliveryAddon() == AddonArgoCD }

// ArgoCDHub is the cluster whose API server holds Argo CD's objects for the given cluster, and
// beside which its processes run: the cluster itself with delivery argocd, the first cluster
// of the topology with argocd-central ("" without Argo CD).
func (t *Topology) ArgoCDHub(cluster string) string {
	switch {
	case t.Delivery == DeliveryArgoCD:
		return cluster
	case t.Delivery == DeliveryArgoCDCentral && len(t.Clusters) > 0:
		return t.Clusters[0].Name
	}
	return ""
}

// HasDelivery reports whether the topology installs its delivery add-on.
func (t *Topology) HasDelivery() bool { return t.HasAddon(t.DeliveryAddon()) }

// HasAddon reports whether the topology installs the add-on.
func (t *Topology) HasAddon(name string) bool { return slices.Contains(t.Addons, name) }

// Cluster returns the cluster of that name, or nil.
func (t *Topology) Cluster(name string) *Cluster {
	for i := range t.Clusters {
		if t.Clusters[i].Name == name {
			return &t.Clusters[i]
		}
	}
	return nil
}

// ClusterNames lists the cluster names in topology order.
func (t *Topology) ClusterNames() []string {
	names := make([]string, len(t.Clusters))
	for i, c := range t.Clusters {
		names[i] = c.Name
	}
	return names
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate reports every problem of the topology at once.
func (t *Topology) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if t.APIVersion != APIVersion {
		add("apiVersion: %q is not supported; use %q", t.APIVersion, APIVersion)
	}
	if t.Kind != Kind {
		add("kind: %q is not supported; use %q", t.Kind, Kind)
	}
	if !dnsLabel.MatchString(t.Name) || len(t.Name) > 63 {
		add("name: %q must be a DNS label (lower-case letters, digits and '-', at most 63 characters)", t.Name)
	}
	// The provider's name is checked where providers are registered (provider.Lookup), when
	// the bed is opened: this package knows no provider.
	if t.Provider == "" {
		add("provider: a provider is required (`polykube-testbed up --help` lists them under --provider)")
	}
	if len(t.Clusters) == 0 {
		add("clusters: at least one cluster is required")
	}
	if !slices.Contains([]string{"", PlacementHost, PlacementCluster}, t.AddonPlacement) {
		add("addonPlacement: %q is not a placement; use %s or %s", t.AddonPlacement, PlacementHost, PlacementCluster)
	}
	if !slices.Contains([]string{"", ImagesUpstream, ImagesLocal}, t.Images) {
		add("images: %q is not an image source; use %s or %s", t.Images, ImagesUpstream, ImagesLocal)
	}

	switch {
	case !slices.Contains([]string{"", NetworkShared, NetworkIsolated}, t.Network):
		add("network: %q is not a network; use %s or %s", t.Network, NetworkShared, NetworkIsolated)
	case t.Isolated() && t.Provider != ProviderKind:
		add("network: isolated needs provider kind (it puts each kind cluster on a Docker network of its own); provider %s has no such networks", t.Provider)
	case t.Isolated() && t.Overlay == "":
		add("network: isolated clusters reach each other only through an overlay; add overlay: %s", OverlayWireGuard)
	}
	switch {
	case t.Overlay != "" && t.Overlay != OverlayWireGuard:
		add("overlay: %q is not an overlay; use %s", t.Overlay, OverlayWireGuard)
	case t.Overlay != "" && !t.Isolated():
		add("overlay: %s runs only with network: isolated (on a shared network the nodes reach each other without it)", t.Overlay)
	}
	if t.Overlay == "" && (t.OverlayPort != 0 || t.OverlayCIDR != "") {
		add("overlayPort and overlayCIDR configure an overlay; set overlay: %s or remove them", OverlayWireGuard)
	}
	if t.OverlayPort < 0 || t.OverlayPort > 65535 {
		add("overlayPort: %d is not a UDP port (1-65535)", t.OverlayPort)
	}

	delivery := deliveryAddon[t.Delivery]
	if delivery == "" {
		add("delivery: %q is not a delivery system; use %s, %s or %s", t.Delivery, DeliveryFlux, DeliveryArgoCD, DeliveryArgoCDCentral)
	}
	if t.ArgoCD() && (t.AddonPlacement == PlacementCluster || (t.Provider != ProviderKwok && t.Provider != ProviderExisting)) {
		add("delivery: %s runs only as host processes beside kwok or existing clusters (addonPlacement: host, the host bed); use delivery flux with provider %s", t.Delivery, t.Provider)
	}
	seen := map[string]bool{}
	known := append([]string{AddonGit, AddonFlux, AddonArgoCD, AddonOperator}, OptionalAddons...)
	for _, a := range t.Addons {
		req := addonRequires[a]
		if req == "delivery" {
			req = delivery
		}
		switch {
		case !slices.Contains(known, a):
			add("addons: unknown add-on %q; use %s", a, strings.Join(known, ", "))
		case seen[a]:
			add("addons: %q is listed twice", a)
		case delivery != "" && (a == AddonFlux || a == AddonArgoCD) && a != delivery:
			add("addons: %q is not the delivery of this topology (delivery: %s); list %q instead, or set delivery: %s", a, t.Delivery, delivery, a)
		case req != "" && !slices.Contains(t.Addons, req):
			add("addons: %q needs %q", a, req)
		}
		seen[a] = true
	}
	if t.Flux.Interval.Duration < time.Second {
		add("flux.interval: %s is too short; use at least 1s", t.Flux.Interval.Duration)
	}
	if t.HasAddon(AddonMeshMirror) && t.MeshMirror.Interval.Duration < 100*time.Millisecond {
		add("meshMirror.interval: %s is too short; use at least 100ms", t.MeshMirror.Interval.Duration)
	}
	for _, m := range t.Registry.Mirrors {
		if strings.ContainsAny(m, "/:@ ") || m == "" || strings.Trim(m, ".") != m {
			add("registry.mirrors: %q is not a registry host name; give the name images are named with (registry.onprem.example), without scheme, port or path", m)
		}
	}
	if _, err := netip.ParseAddr(t.Registry.Address); t.Registry.Address != "" && err != nil {
		add("registry.address: %q is not an IP address; give the address the registry listens on (127.0.0.1, or the docker network's gateway for kind nodes)", t.Registry.Address)
	}
	if t.Flux.ApplyInterval.Duration < time.Second {
		add("flux.applyInterval: %s is too short; use at least 1s", t.Flux.ApplyInterval.Duration)
	}
	for name, w := range t.Waits {
		if _, ok := DefaultWaits[name]; !ok {
			add("waits: unknown wait %q; use one of %s", name, strings.Join(sortedKeys(DefaultWaits), ", "))
		}
		if w.Timeout.Duration <= 0 {
			add("waits.%s.timeout: must be positive", name)
		}
		if w.Interval.Duration < 0 {
			add("waits.%s.interval: must not be negative", name)
		}
	}

	names := map[string]int{}
	ids := map[int32]string{}
	type ownedPrefix struct {
		p     netip.Prefix
		owner string
	}
	var prefixes []ownedPrefix
	claim := func(field, cidr string) {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			add("%s: %q is not a CIDR such as 10.242.0.0/16", field, cidr)
			return
		}
		if p != p.Masked() {
			add("%s: %q has host bits set; did you mean %s?", field, cidr, p.Masked())
			return
		}
		for _, o := range prefixes {
			if o.p.Overlaps(p) {
				add("%s: %s overlaps %s of %s; every pod and service CIDR must be distinct", field, p, o.p, o.owner)
			}
		}
		prefixes = append(prefixes, ownedPrefix{p, field})
	}
	for i, c := range t.Clusters {
		f := fmt.Sprintf("clusters[%d]", i)
		if c.Name != "" {
			f = fmt.Sprintf("clusters[%d] (%s)", i, c.Name)
		}
		switch {
		case c.Name == "":
			add("%s.name: required", f)
		case len(c.Name) > MaxNameLength:
			add("%s.name: %d characters is too long; Cilium ClusterMesh allows at most %d", f, len(c.Name), MaxNameLength)
		case !dnsLabel.MatchString(c.Name):
			add("%s.name: must be a DNS label (lower-case letters, digits and '-')", f)
		}
		if j, dup := names[c.Name]; dup && c.Name != "" {
			add("%s.name: duplicate of clusters[%d]", f, j)
		}
		names[c.Name] = i
		if !slices.Contains(CloudProviders, c.Provider) {
			add("%s.provider: unknown provider %q; use one of %s", f, c.Provider, strings.Join(CloudProviders, ", "))
		}
		if c.ClusterID < 1 || c.ClusterID > 255 {
			add("%s.clusterID: %d is out of range; use 1-255", f, c.ClusterID)
		} else if other, dup := ids[c.ClusterID]; dup {
			add("%s.clusterID: %d is already the ID of %s", f, c.ClusterID, other)
		}
		ids[c.ClusterID] = c.Name
		if len(c.PodCIDRs) == 0 {
			add("%s.podCIDRs: at least one pod CIDR is required", f)
		}
		for j, cidr := range c.PodCIDRs {
			claim(fmt.Sprintf("%s.podCIDRs[%d]", f, j), cidr)
		}
		if c.ServiceCIDR != "" {
			claim(f+".serviceCIDR", c.ServiceCIDR)
			if p, err := netip.ParsePrefix(c.ServiceCIDR); err == nil && p.Addr().Is4() && p.Bits() < 12 {
				add("%s.serviceCIDR: /%d is too large for kube-apiserver; use /12 or smaller", f, p.Bits())
			}
		}
		if c.FakeNodes < 0 || c.FakeNodes > 100 {
			add("%s.fakeNodes: %d is out of range; use 0-100", f, c.FakeNodes)
		}
		if len(c.PodCIDRs) > 0 && c.FakeNodes > 0 {
			if p, err := netip.ParsePrefix(c.PodCIDRs[0]); err == nil && p.Addr().Is4() && p.Bits() <= 24 &&
				c.FakeNodes > 1<<(24-p.Bits()) {
				add("%s.fakeNodes: %d nodes need %d /24 node CIDRs but %s has %d", f, c.FakeNodes, c.FakeNodes, p, 1<<(24-p.Bits()))
			}
		}
		if c.MeshName != "" {
			switch {
			case t.Provider != ProviderKind && t.Provider != ProviderK0s:
				add("%s.meshName: Cilium's cluster.name is set where the test bed installs Cilium (provider kind or k0s), not with provider %s; on kwok a scenario renames the mesh mirror's cluster with the step \"Cilium in cluster … goes by the cluster name …\"", f, t.Provider)
			case len(c.MeshName) > MaxNameLength || !dnsLabel.MatchString(c.MeshName):
				add("%s.meshName: %q must be a DNS label of at most %d characters, as Cilium's cluster.name", f, c.MeshName, MaxNameLength)
			}
		}
		switch t.Provider {
		case ProviderExisting:
			if c.Context == "" {
				add("%s.context: required with provider existing (the kubeconfig context of the cluster)", f)
			}
		default:
			if c.Context != "" || c.Kubeconfig != "" {
				add("%s: kubeconfig and context are only for provider existing", f)
			}
		}
	}
	if t.OverlayCIDR != "" {
		claim("overlayCIDR", t.OverlayCIDR)
		if p, err := netip.ParsePrefix(t.OverlayCIDR); err == nil {
			if hostBits := p.Addr().BitLen() - p.Bits(); hostBits < 9 {
				add("overlayCIDR: %s is too small; each cluster takes the address numbered by its cluster ID (up to 255): use a /23 or larger", p)
			}
		}
	}
	meshNames := map[string]string{}
	for _, c := range t.Clusters {
		if other, dup := meshNames[c.CiliumName()]; dup && c.Name != "" {
			add("clusters (%s): Cilium would go by %q in both %s and %s; every cluster's mesh name (meshName, default its name) must be distinct", c.Name, c.CiliumName(), other, c.Name)
		}
		meshNames[c.CiliumName()] = c.Name
	}
	return errors.Join(errs...)
}

// NodeCIDR returns the pod CIDR of the i-th fake node: the i-th /24 of the cluster's first
// pod CIDR (or the whole CIDR when it is /24 or smaller, or IPv6).
func (c *Cluster) NodeCIDR(i int) (string, error) {
	if len(c.PodCIDRs) == 0 {
		return "", fmt.Errorf("cluster %s has no pod CIDR", c.Name)
	}
	p, err := netip.ParsePrefix(c.PodCIDRs[0])
	if err != nil {
		return "", err
	}
	if !p.Addr().Is4() || p.Bits() >= 24 {
		return p.String(), nil
	}
	if i >= 1<<(24-p.Bits()) {
		return "", fmt.Errorf("cluster %s: %s has no /24 number %d", c.Name, p, i)
	}
	a := p.Addr().As4()
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	n += uint32(i) << 8
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), 0}), 24).String(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
