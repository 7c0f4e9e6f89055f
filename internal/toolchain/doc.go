// Package toolchain provides the pinned, verified binaries the hermetic tier needs:
// kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kwok, kwokctl, the Flux
// source-controller and kustomize-controller, and tofu.
//
// Each tool is resolved in this order, and the first hit wins:
//
//  1. an explicit override (Options.Overrides or POLYKUBE_<TOOL>_BINARY, e.g.
//     POLYKUBE_KUBE_APISERVER_BINARY);
//  2. $PATH, but only when the binary reports the pinned version;
//  3. the cache, ${POLYKUBE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/polykube}, laid out as
//     <cache>/bin/<tool>/<version>/<tool>;
//  4. a build from Go module source through the module proxy (GOPROXY);
//  5. an upstream download, when a release URL is known and the network answers.
//
// Why our own resolver: kwokctl, controller-runtime's setup-envtest and e2e-framework all
// download release binaries from dl.k8s.io, GitHub or GCS, which is impossible on machines
// that only reach a Go module proxy; none of them builds kube-apiserver, etcd or the Flux
// controllers from module source, and Flux publishes its controllers only as container
// images. The Go module proxy is the one source every machine here can reach, so we build
// from it, pin the versions in one place (versions.go), verify every binary by running it
// before it enters the cache, and keep the cache outside the repository so it survives
// between runs and CI jobs.
//
// Builds take a per-tool file lock (<cache>/.lock-<tool>), build in a scratch module under
// <cache>/work, verify the binary, then rename it into place, so concurrent runs never see
// a half-written binary. A small stamp file written after verification lets a warm
// resolution skip executing the binaries.
package toolchain
