package toolchain

import (
	"fmt"
	"strings"
)

// The pinned versions. This is the only place they are written down; change them here and
// the cache path, the build, the download URL and the version check all follow.
const (
	// KubernetesVersion is the version of kube-apiserver, kube-controller-manager and
	// kube-scheduler (the hermetic tier), and of kubelet, kubeadm, kubectl and kube-proxy (the
	// datapath tier's kind node image), built from k8s.io/kubernetes.
	KubernetesVersion = "v1.36.3"
	// KubernetesStagingVersion is the version of the k8s.io/* staging modules (k8s.io/api,
	// k8s.io/apiserver, …) that match KubernetesVersion.
	KubernetesStagingVersion = "v0.36.3"
	// EtcdVersion is the version of etcd, built from go.etcd.io/etcd/server/v3.
	EtcdVersion = "v3.6.8"
	// KwokVersion is the version of kwok and kwokctl, built from sigs.k8s.io/kwok.
	KwokVersion = "v0.8.0"
	// FluxSourceControllerVersion and FluxKustomizeControllerVersion are the Flux
	// controllers (v1.10.x needs Go 1.27).
	FluxSourceControllerVersion    = "v1.9.6"
	FluxKustomizeControllerVersion = "v1.9.6"
	// FluxArtifactVersion pins github.com/fluxcd/pkg/artifact for source-controller: the
	// v0.18.3 it requires is refused by the module proxy, v0.18.0 is served and builds.
	FluxArtifactVersion = "v0.18.0"
	// CoreDNSVersion is the CoreDNS kubeadm KubernetesVersion deploys (CoreDNSVersion in
	// k8s.io/kubernetes/cmd/kubeadm/app/constants), built from github.com/coredns/coredns for
	// the datapath tier's node image.
	CoreDNSVersion = "v1.14.2"
	// CriToolsVersion is crictl's, put in the kind node image for the diagnostics bundle
	// (crictl ps, inspect and logs of every container), built from sigs.k8s.io/cri-tools; it
	// speaks CRI v1, as the node's containerd does (v1.37.0 is served by the module proxy).
	CriToolsVersion = "v1.37.0"
	// CiliumVersion is the Cilium of the datapath tier, built from github.com/cilium/cilium
	// (its module has the BPF sources and the Helm chart too).
	CiliumVersion = "v1.20.2"
	// CiliumGoBGPVersion replaces the pseudo-version of github.com/osrg/gobgp/v4 that Cilium
	// pins and the module proxy refuses; BGP stays off in the in-cluster bed's Cilium.
	CiliumGoBGPVersion = "v4.7.0"
	// TofuVersion is the version of OpenTofu, built from github.com/opentofu/opentofu.
	TofuVersion = "v1.12.6"
	// ArgoCDVersion is the Argo CD of the alternative delivery, built from
	// github.com/argoproj/argo-cd/v3 (one binary: the application-controller, repo-server and
	// applicationset-controller by the name it is run under).
	ArgoCDVersion = "v3.6.2"
	// ArgoCDGoToolchain is the Go toolchain Argo CD's go.mod needs (Go 1.27); the go command
	// takes it from the module proxy for this build only. Polykube itself stays on its Go.
	ArgoCDGoToolchain = "go1.27.3"
	// KustomizeVersion is the kustomize CLI Argo CD's repo-server runs for a kustomization
	// (Argo CD's image carries one; off-cluster it is looked up in PATH), built from
	// sigs.k8s.io/kustomize/kustomize/v5; the release whose API (v0.21) Polykube links.
	KustomizeVersion = "v5.8.1"
	// PrometheusVersion is the Go module version of Prometheus and promtool, built from
	// github.com/prometheus/prometheus: Prometheus 3.x publishes its module as v0.3MM.P, so
	// v0.316.0 is release 3.16.0 (the VERSION file of the module says so), which is
	// PrometheusRelease. Its go.mod needs Go 1.26.7.
	PrometheusVersion = "v0.316.0"
	PrometheusRelease = "3.16.0"
	// DistributionVersion is the OCI registry of the test bed's registry add-on, built from
	// github.com/distribution/distribution/v3 (the registry Docker's and GitLab's are built
	// on); its go.mod needs Go 1.26.0.
	DistributionVersion = "v3.1.2"
	// ContainerdVersion is the containerd (and its runc shim) of the datapath tier's k0s node
	// image, built from github.com/containerd/containerd/v2: the one k0s v1.36.3+k0s.2 embeds
	// (containerd_version in its embedded-bins/Makefile.variables). k0s writes a version 3
	// containerd configuration, which the Debian containerd 1.6 of the kind node cannot read.
	ContainerdVersion = "v2.3.3"
)

// Tool names.
const (
	KubeAPIServer         = "kube-apiserver"
	KubeControllerManager = "kube-controller-manager"
	KubeScheduler         = "kube-scheduler"
	Etcd                  = "etcd"
	Kwok                  = "kwok"
	Kwokctl               = "kwokctl"
	SourceController      = "source-controller"
	KustomizeController   = "kustomize-controller"
	Tofu                  = "tofu"
	// The rest of a Kubernetes node, for the datapath tier's node image.
	Kubelet   = "kubelet"
	Kubeadm   = "kubeadm"
	Kubectl   = "kubectl"
	KubeProxy = "kube-proxy"
	CoreDNS   = "coredns"
	Crictl    = "crictl"
	// Cilium's binaries, for the datapath tier's Cilium images.
	CiliumAgent          = "cilium-agent"
	CiliumOperator       = "cilium-operator-generic"
	ClusterMeshAPIServer = "clustermesh-apiserver"
	CiliumCNI            = "cilium-cni"
	// The agent image's helpers: the CLI its probes and init containers call, the health
	// checker and its responder, and the two tools the init containers run in the host's
	// namespaces (mount the cgroup2 and BPF file systems, fix sysctls).
	CiliumDbg             = "cilium-dbg"
	CiliumHealth          = "cilium-health"
	CiliumHealthResponder = "cilium-health-responder"
	CiliumMount           = "cilium-mount"
	CiliumSysctlfix       = "cilium-sysctlfix"
	// ArgoCD is Argo CD's multi-call binary.
	ArgoCD = "argocd"
	// Kustomize is the kustomize CLI, for Argo CD's repo-server.
	Kustomize = "kustomize"
	// Prometheus and promtool, for the test bed's monitoring add-on and the alert rule tests.
	Prometheus = "prometheus"
	Promtool   = "promtool"
	// Registry is distribution's registry, for the test bed's registry add-on.
	Registry = "registry"
	// Containerd and its runc shim, for the k0s node image.
	Containerd           = "containerd"
	ContainerdShimRuncV2 = "containerd-shim-runc-v2"
)

// groups names sets of tools, in build order: envtest first because most tests wait for it.
var groups = []group{
	{"envtest", []string{Etcd, KubeAPIServer}},
	{"kwok", []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok, Kwokctl}},
	{"flux", []string{SourceController, KustomizeController}},
	{"tofu", []string{Tofu}},
	// Everything a kind node image holds of Kubernetes: the control plane and etcd it runs as
	// static pods, and the node's own binaries.
	{"kind-node", []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kubelet, Kubeadm, Kubectl, KubeProxy, CoreDNS, Crictl}},
	{"cilium", []string{CiliumAgent, CiliumOperator, ClusterMeshAPIServer, CiliumCNI,
		CiliumDbg, CiliumHealth, CiliumHealthResponder, CiliumMount, CiliumSysctlfix}},
	// What k0s runs from its bin directory when it is built without embedded binaries: the
	// control plane, etcd, kubelet, containerd and its shim (runc is the node's).
	{"k0s-node", []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kubelet, Containerd, ContainerdShimRuncV2}},
	{"argocd", []string{ArgoCD, Kustomize}},
	{"prometheus", []string{Prometheus, Promtool}},
	{"registry", []string{Registry}},
	{"all", []string{Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok, Kwokctl,
		SourceController, KustomizeController, Tofu, ArgoCD, Kustomize, Prometheus, Promtool, Registry, Kubelet, Kubeadm, Kubectl, KubeProxy, CoreDNS, Crictl,
		CiliumAgent, CiliumOperator, ClusterMeshAPIServer, CiliumCNI,
		CiliumDbg, CiliumHealth, CiliumHealthResponder, CiliumMount, CiliumSysctlfix, Containerd, ContainerdShimRuncV2}},
}

// pinnedTools returns the tool definitions for the pinned versions.
func pinnedTools() []*Tool {
	kube := func(name string, probe ...string) *Tool {
		if len(probe) == 0 {
			probe = []string{"--version"}
		}
		minor := strings.Split(KubernetesVersion, ".")[1]
		var ldflags []string
		for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
			ldflags = append(ldflags,
				"-X", pkg+".gitVersion="+KubernetesVersion,
				"-X", pkg+".gitMajor=1",
				"-X", pkg+".gitMinor="+minor,
				"-X", pkg+".gitTreeState=clean")
		}
		return &Tool{
			Name: name, Version: KubernetesVersion,
			Module: "k8s.io/kubernetes", Package: "k8s.io/kubernetes/cmd/" + name,
			probeArgs: probe,
			// k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
			// with ./staging, which the module zip lacks: point them at the published ones.
			localReplace: func(string) string { return KubernetesStagingVersion },
			ldflags:      ldflags,
			url: func(goos, goarch string) (string, string) {
				return fmt.Sprintf("https://dl.k8s.io/release/%s/bin/%s/%s/%s", KubernetesVersion, goos, goarch, name), ""
			},
			// Kubernetes publishes <binary>.sha256 (the bare hex sum) beside every binary.
			sums: func(goos, goarch string) (string, string) {
				return fmt.Sprintf("https://dl.k8s.io/release/%s/bin/%s/%s/%s.sha256", KubernetesVersion, goos, goarch, name), ""
			},
		}
	}
	kwok := func(name string) *Tool {
		return &Tool{
			Name: name, Version: KwokVersion,
			Module: "sigs.k8s.io/kwok", Package: "sigs.k8s.io/kwok/cmd/" + name,
			probeArgs: []string{"--version"},
			url: func(goos, goarch string) (string, string) {
				return fmt.Sprintf("https://github.com/kubernetes-sigs/kwok/releases/download/%s/%s-%s-%s", KwokVersion, name, goos, goarch), ""
			},
			// No sums: kwok's release script (hack/releases.sh in the v0.8.0 module) uploads the
			// binaries alone, with no checksum file, so kwok and kwokctl are always built.
		}
	}
	flux := func(name, version string, replace map[string]string) *Tool {
		module := "github.com/fluxcd/" + name
		return &Tool{
			Name: name, Version: version,
			Module: module, Package: module,
			// The controllers have no version flag: run --help to prove the binary works and
			// read the version from the Go build information.
			probeArgs:     []string{"--help"},
			versionModule: module,
			replace:       replace,
			// Flux publishes the controllers only as container images: no download URL.
		}
	}
	cilium := func(name, pkg string, tags ...string) *Tool {
		const module = "github.com/cilium/cilium"
		return &Tool{
			Name: name, Version: CiliumVersion,
			Module: module, Package: module + "/" + pkg,
			// Not every binary has a version flag: --help proves it runs, and the version is
			// read from the Go build information.
			probeArgs: []string{"--help"}, versionModule: module,
			replace: map[string]string{
				"github.com/osrg/gobgp/v4":        CiliumGoBGPVersion,
				"sigs.k8s.io/mcs-api/controllers": "./shims/mcs-api-controllers",
			},
			shims:   map[string]string{"sigs.k8s.io/mcs-api/controllers": "mcs-api-controllers"},
			ldflags: []string{"-X", module + "/pkg/version.ciliumVersion=" + strings.TrimPrefix(CiliumVersion, "v")},
			tags:    tags,
			// Cilium publishes images, not binaries: no download.
		}
	}
	prometheus := func(name string) *Tool {
		const module = "github.com/prometheus/prometheus"
		dir := fmt.Sprintf("prometheus-%s.%%s-%%s", PrometheusRelease)
		return &Tool{
			Name: name, Version: PrometheusVersion, releaseVersion: PrometheusRelease,
			Module: module, Package: module + "/cmd/" + name,
			probeArgs: []string{"--version"},
			// The release build stamps the version through prometheus/common's version
			// package; without it --version prints an empty one.
			ldflags: []string{"-X", "github.com/prometheus/common/version.Version=" + PrometheusRelease,
				"-X", "github.com/prometheus/common/version.Branch=HEAD",
				"-X", "github.com/prometheus/common/version.BuildUser=polykube-toolchain"},
			// remove_all_sd leaves out every service-discovery plugin but the built-in static and
			// file ones (plugins/plugin_*.go are guarded by it): the test bed scrapes its
			// operators from static_configs, and the cloud SDKs those plugins import (AWS,
			// Azure, GCE, …) are about 45% of the Go source a cold build compiles (1,527 → 1,284
			// packages, 240 → 132 MB, go list -deps of both commands, v0.316.0).
			tags: []string{"remove_all_sd"},
			// No builtinassets tag: the module zip has no built web UI (web/ui/static is made
			// by npm in a release build), and without the tag Prometheus serves its API and
			// /metrics as usual while the UI pages answer that the assets are missing. The
			// test bed uses the HTTP API only.
			url: func(goos, goarch string) (string, string) {
				d := fmt.Sprintf(dir, goos, goarch)
				return fmt.Sprintf("https://github.com/prometheus/prometheus/releases/download/v%s/%s.tar.gz", PrometheusRelease, d), d + "/" + name
			},
			// Prometheus's releases carry sha256sums.txt, a list of every archive.
			sums: func(goos, goarch string) (string, string) {
				return fmt.Sprintf("https://github.com/prometheus/prometheus/releases/download/v%s/sha256sums.txt", PrometheusRelease),
					fmt.Sprintf(dir, goos, goarch) + ".tar.gz"
			},
		}
	}
	containerd := func(name, probe string) *Tool {
		const module = "github.com/containerd/containerd/v2"
		return &Tool{
			Name: name, Version: ContainerdVersion,
			Module: module, Package: module + "/cmd/" + name,
			probeArgs: []string{probe},
			// Without it both binaries call themselves by the module's placeholder version.
			ldflags: []string{"-X", module + "/version.Version=" + ContainerdVersion},
			// No download: containerd publishes archives of all its binaries, and only the k0s
			// node image needs these two, built here from module source like the rest of it.
		}
	}
	return []*Tool{
		{
			Name: Registry, Version: DistributionVersion,
			Module: "github.com/distribution/distribution/v3", Package: "github.com/distribution/distribution/v3/cmd/registry",
			probeArgs: []string{"--version"},
			// Without it the binary calls itself v3.1.2+unknown (the release build stamps it).
			ldflags: []string{"-X", "github.com/distribution/distribution/v3/version.version=" + DistributionVersion},
			// Upstream publishes release archives, but the test bed only ever needs this one
			// small build, offline like the rest: no download.
		},
		prometheus(Prometheus),
		prometheus(Promtool),
		{
			Name: Etcd, Version: EtcdVersion,
			Module: "go.etcd.io/etcd/server/v3", Package: "go.etcd.io/etcd/server/v3",
			probeArgs: []string{"--version"},
			url: func(goos, goarch string) (string, string) {
				dir := fmt.Sprintf("etcd-%s-%s-%s", EtcdVersion, goos, goarch)
				ext := ".tar.gz"
				if goos != "linux" {
					ext = ".zip"
				}
				return fmt.Sprintf("https://github.com/etcd-io/etcd/releases/download/%s/%s%s", EtcdVersion, dir, ext), dir + "/etcd"
			},
			// etcd's releases carry a SHA256SUMS list of every archive.
			sums: func(goos, goarch string) (string, string) {
				ext := ".tar.gz"
				if goos != "linux" {
					ext = ".zip"
				}
				return fmt.Sprintf("https://github.com/etcd-io/etcd/releases/download/%s/SHA256SUMS", EtcdVersion),
					fmt.Sprintf("etcd-%s-%s-%s%s", EtcdVersion, goos, goarch, ext)
			},
		},
		kube(KubeAPIServer),
		kube(KubeControllerManager),
		kube(KubeScheduler),
		kube(Kubelet),
		kube(Kubeadm, "version", "-o", "short"),
		kube(Kubectl, "version", "--client"),
		kube(KubeProxy),
		cilium(CiliumAgent, "daemon"),
		cilium(CiliumOperator, "operator", "ipam_provider_operator"),
		cilium(ClusterMeshAPIServer, "clustermesh-apiserver"),
		cilium(CiliumCNI, "plugins/cilium-cni"),
		cilium(CiliumDbg, "cilium-dbg"),
		cilium(CiliumHealth, "cilium-health"),
		cilium(CiliumHealthResponder, "cilium-health/responder"),
		cilium(CiliumMount, "tools/mount"),
		cilium(CiliumSysctlfix, "tools/sysctlfix"),
		{
			Name: CoreDNS, Version: CoreDNSVersion,
			Module: "github.com/coredns/coredns", Package: "github.com/coredns/coredns",
			probeArgs: []string{"-version"},
			// No download: only the in-cluster bed's image factory needs it, and it builds there
			// from module source like the rest of the node image.
		},
		{
			Name: Crictl, Version: CriToolsVersion,
			Module: "sigs.k8s.io/cri-tools", Package: "sigs.k8s.io/cri-tools/cmd/crictl",
			probeArgs: []string{"--version"},
			ldflags:   []string{"-X", "sigs.k8s.io/cri-tools/pkg/version.Version=" + strings.TrimPrefix(CriToolsVersion, "v")},
			// No download: only the kind node image needs it, built here from module source
			// like the rest of that image.
		},
		containerd(Containerd, "--version"),
		containerd(ContainerdShimRuncV2, "-v"),
		kwok(Kwok),
		kwok(Kwokctl),
		flux(SourceController, FluxSourceControllerVersion,
			map[string]string{"github.com/fluxcd/pkg/artifact": FluxArtifactVersion}),
		flux(KustomizeController, FluxKustomizeControllerVersion, nil),
		{
			Name: ArgoCD, Version: ArgoCDVersion,
			Module: "github.com/argoproj/argo-cd/v3", Package: "github.com/argoproj/argo-cd/v3/cmd",
			// Run as argocd it is the CLI: --help proves it runs; the version is read from the
			// Go build information.
			probeArgs: []string{"--help"}, versionModule: "github.com/argoproj/argo-cd/v3",
			// Its go.mod replaces gitops-engine with ./gitops-engine, which the module zip
			// lacks: the same version is published as a module of its own.
			localReplace: func(old string) string {
				if old == "github.com/argoproj/argo-cd/gitops-engine/v3" {
					return ArgoCDVersion
				}
				return ""
			},
			env:     []string{"GOTOOLCHAIN=" + ArgoCDGoToolchain},
			ldflags: []string{"-X", "github.com/argoproj/argo-cd/v3/common.version=" + strings.TrimPrefix(ArgoCDVersion, "v")},
			url: func(goos, goarch string) (string, string) {
				return fmt.Sprintf("https://github.com/argoproj/argo-cd/releases/download/%s/argocd-%s-%s", ArgoCDVersion, goos, goarch), ""
			},
			// Argo CD's releases carry cli_checksums.txt, a list of the binaries' sums.
			sums: func(goos, goarch string) (string, string) {
				return fmt.Sprintf("https://github.com/argoproj/argo-cd/releases/download/%s/cli_checksums.txt", ArgoCDVersion),
					fmt.Sprintf("argocd-%s-%s", goos, goarch)
			},
		},
		{
			Name: Kustomize, Version: KustomizeVersion,
			Module: "sigs.k8s.io/kustomize/kustomize/v5", Package: "sigs.k8s.io/kustomize/kustomize/v5",
			// Built as a dependency its own version reads "(devel)": take it from the build
			// information instead.
			probeArgs: []string{"version"}, versionModule: "sigs.k8s.io/kustomize/kustomize/v5",
			url: func(goos, goarch string) (string, string) {
				return fmt.Sprintf("https://github.com/kubernetes-sigs/kustomize/releases/download/kustomize%%2F%s/kustomize_%s_%s_%s.tar.gz",
					KustomizeVersion, KustomizeVersion, goos, goarch), "kustomize"
			},
			// kustomize's releases carry checksums.txt, a list of every archive.
			sums: func(goos, goarch string) (string, string) {
				return fmt.Sprintf("https://github.com/kubernetes-sigs/kustomize/releases/download/kustomize%%2F%s/checksums.txt", KustomizeVersion),
					fmt.Sprintf("kustomize_%s_%s_%s.tar.gz", KustomizeVersion, goos, goarch)
			},
		},
		{
			Name: Tofu, Version: TofuVersion,
			Module: "github.com/opentofu/opentofu", Package: "github.com/opentofu/opentofu/cmd/tofu",
			probeArgs: []string{"version"},
			// Without dev=no the binary calls itself v1.12.6-dev (as the release build does).
			ldflags: []string{"-X", "github.com/opentofu/opentofu/version.dev=no"},
			url: func(goos, goarch string) (string, string) {
				v := strings.TrimPrefix(TofuVersion, "v")
				return fmt.Sprintf("https://github.com/opentofu/opentofu/releases/download/%s/tofu_%s_%s_%s.zip", TofuVersion, v, goos, goarch), "tofu"
			},
			// OpenTofu's releases carry tofu_<version>_SHA256SUMS, a list of every archive.
			sums: func(goos, goarch string) (string, string) {
				v := strings.TrimPrefix(TofuVersion, "v")
				return fmt.Sprintf("https://github.com/opentofu/opentofu/releases/download/%s/tofu_%s_SHA256SUMS", TofuVersion, v),
					fmt.Sprintf("tofu_%s_%s_%s.zip", v, goos, goarch)
			},
		},
	}
}
