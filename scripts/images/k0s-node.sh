#!/usr/bin/env bash
# Builds the k0s node image on this machine, with nothing pulled from a registry:
#
#   POLYKUBE_K0S_SRC=~/src/k0s scripts/images/k0s-node.sh     # or: polykube-testbed images build k0s-node
#   POLYKUBE_K0S_BIN=/path/to/k0s scripts/images/k0s-node.sh
#   POLYKUBE_K0S_SRC=~/src/k0s scripts/images/k0s-node.sh --k0s-only   # step 1 alone, no Docker:
#                                                    # builds (or reuses) k0s, prints its path
#
# k0s's own image (docker.io/k0sproject/k0s, what `images: upstream` runs) is one k0s binary with
# every other binary embedded in it. Neither can be had here (no registry; the Go module proxy
# refuses github.com/k0sproject/k0s), so this builds k0s WITHOUT its embedded binaries and puts
# beside it the ones it would have staged into its bin directory:
#   1. k0s itself: POLYKUBE_K0S_BIN, or built from a git checkout of k0s (POLYKUBE_K0S_SRC,
#      e.g. `git clone --branch v1.36.3+k0s.2 https://github.com/k0sproject/k0s`) the way its
#      Makefile builds it with EMBEDDED_BINS_BUILDMODE=none (its versions stamped from
#      embedded-bins/Makefile.variables), cached under the toolchain's cache by commit;
#   2. kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kubelet from the pinned
#      toolchain (the binaries the kind node image has), and containerd with its runc shim built
#      by the toolchain from github.com/containerd/containerd/v2 (k0s writes a version 3
#      containerd configuration: the node's Debian containerd 1.6 cannot read it);
#   3. the rest of a node (runc, iptables, the CNI plugins, kind's entrypoint, which prepares
#      mounts and cgroups for a nested kubelet) from polykube.local/kind-node-base, the root
#      file system scripts/images/kind-node.sh imports;
#   4. the images k0s runs as pods that the test bed keeps (pause, CoreDNS, kube-proxy: the ones
#      kind-node.sh built) as an image bundle k0s imports when its worker starts
#      (/var/lib/k0s/images). The k0s configuration names them (provider/k0s) and disables the
#      components whose images there are not (konnectivity, metrics-server).
# The result is polykube.local/k0s-node:<k0s version with '+' as '-'>.
set -euo pipefail

say() { printf '• %s\n' "$*"; }
die() { printf 'k0s-node: %s\n' "$*" >&2; exit 1; }

k0s_only=false
case ${1:-} in
  "") ;;
  --k0s-only) k0s_only=true ;;
  *) die "unknown argument $1: the only one is --k0s-only (build or check k0s, print its path, no Docker needed)" ;;
esac
$k0s_only || docker info >/dev/null 2>&1 || die "Docker does not answer: run \`make host-docker\` first"

cd "$(dirname "$0")/../.."
root=$PWD
k8s=$(sed -n 's/^\tKubernetesVersion *= *"\(v[^"]*\)".*/\1/p' internal/toolchain/versions.go)
k0s_version=$(sed -n 's/^\tK0sVersion *= *"\(v[^"]*\)".*/\1/p' testbed/datapath/versions.go)
coredns=$(sed -n 's/^\tCoreDNSVersion *= *"\(v[^"]*\)".*/\1/p' internal/toolchain/versions.go)
[[ -n $k8s && -n $k0s_version && -n $coredns ]] || die "could not read the pinned versions from internal/toolchain/versions.go and testbed/datapath/versions.go"
tag=polykube.local/k0s-node:${k0s_version//+/-}
base=polykube.local/kind-node-base:$k8s
cache=${POLYKUBE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/polykube}/k0s
mkdir -p "$cache"

# The pod images kind-node.sh built, which the k0s configuration names.
pod_images=(registry.k8s.io/pause:3.10 "registry.k8s.io/coredns/coredns:$coredns" "registry.k8s.io/kube-proxy:$k8s")
if ! $k0s_only; then
  docker image inspect "$base" >/dev/null 2>&1 ||
    die "Docker has no $base: build the kind node first (polykube-testbed images build kind-node), the k0s node is made from its root file system"
  for i in "${pod_images[@]}"; do
    docker image inspect "$i" >/dev/null 2>&1 || die "Docker has no $i: build the kind node first (polykube-testbed images build kind-node)"
  done
fi

# 1. k0s.
build_k0s() { # src out
  local src=$1 out=$2 vars=$1/embedded-bins/Makefile.variables version
  [[ -f $vars && -f $src/main.go ]] || die "POLYKUBE_K0S_SRC=$src is not a k0s checkout (no main.go, no embedded-bins/Makefile.variables)"
  var() { sed -n "s/^$1 *= *//p" "$vars" | head -1; }
  local containerd=$(var containerd_version_and_rev)
  version=$(git -C "$src" describe --tags 2>/dev/null) || die "cannot tell the k0s version of $src: git describe --tags failed (use a git clone with its tags)"
  # The ldflags of k0s's Makefile (target k0s.bare), with EMBEDDED_BINS_BUILDMODE=none: a plain
  # go build of main.go, without the Docker build image its Makefile runs go in by default.
  local pkg=github.com/k0sproject/k0s/pkg/build
  local kube=$(var kubernetes_version) date
  date=$(date -u -d "@$(git -C "$src" log -1 --pretty=%ct)" +%Y-%m-%dT%H:%M:%SZ)
  local ld="-w -s -X $pkg.Version=$version -X $pkg.RuncVersion=$(var runc_version)"
  ld+=" -X $pkg.ContainerdVersion=${containerd%@*} -X $pkg.KubernetesVersion=$kube"
  ld+=" -X $pkg.KineVersion=$(var kine_version) -X $pkg.EtcdVersion=$(var etcd_version) -X $pkg.KonnectivityVersion=$(var konnectivity_version)"
  ld+=" -X k8s.io/component-base/version.gitVersion=v$kube -X k8s.io/component-base/version.gitMajor=${kube%%.*}"
  ld+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$kube") -X k8s.io/component-base/version.buildDate=$date"
  ld+=" -X k8s.io/component-base/version.gitCommit=not_available"
  ld+=" -X github.com/containerd/containerd/v2/version.Version=${containerd%@*} -X github.com/containerd/containerd/v2/version.Revision=${containerd#*@}"
  ld+=" -extldflags=-static"
  say "building k0s $version from $src without embedded binaries (several minutes on a first build)"
  local start=$SECONDS
  mkdir -p "$(dirname "$out")"
  (cd "$src" && CGO_ENABLED=0 GOOS=linux go build -tags=osusergo -buildvcs=false -trimpath -ldflags="$ld" -o "$out.tmp" main.go) ||
    die "go build of k0s in $src failed (above)"
  mv "$out.tmp" "$out"
  say "built k0s $version in $((SECONDS - start)) s: $out"
}
if [[ -n ${POLYKUBE_K0S_BIN:-} ]]; then
  k0s=$POLYKUBE_K0S_BIN
  [[ -x $k0s ]] || die "POLYKUBE_K0S_BIN=$k0s is not an executable file"
elif [[ -n ${POLYKUBE_K0S_SRC:-} ]]; then
  commit=$(git -C "$POLYKUBE_K0S_SRC" rev-parse HEAD 2>/dev/null) || die "POLYKUBE_K0S_SRC=$POLYKUBE_K0S_SRC is not a git checkout of k0s"
  [[ -z $(git -C "$POLYKUBE_K0S_SRC" status --porcelain --untracked-files=no) ]] ||
    die "POLYKUBE_K0S_SRC=$POLYKUBE_K0S_SRC has uncommitted changes; the build is cached by commit: commit them or use POLYKUBE_K0S_BIN"
  k0s=$cache/$commit/k0s
  if [[ -x $k0s ]]; then
    say "reusing k0s built from commit $commit: $k0s"
  else
    build_k0s "$POLYKUBE_K0S_SRC" "$k0s"
  fi
else
  die "no k0s to build the node image from: set POLYKUBE_K0S_SRC to a checkout of k0s $k0s_version (git clone --branch $k0s_version https://github.com/k0sproject/k0s) or POLYKUBE_K0S_BIN to a k0s binary of that version; with a registry, images: upstream runs k0s's own image instead"
fi
got=$("$k0s" version 2>/dev/null) || die "$k0s does not run (\`$k0s version\` failed)"
[[ $got == "$k0s_version" ]] || die "$k0s is k0s $got, the test bed pins $k0s_version (testbed/datapath/versions.go): use a build of $k0s_version"
if $k0s_only; then
  echo "$k0s"
  exit 0
fi

# 2. The binaries k0s stages from its bin directory (built or reused by the toolchain, with its
# progress lines).
testbed_bin=$root/bin/polykube-testbed
scripts/testbed-bin.sh "$testbed_bin"
eval "$("$testbed_bin" tools env --build k0s-node | sed 's/^/export /')"
bin() { local v="POLYKUBE_$(echo "$1" | tr 'a-z-' 'A-Z_')_BINARY"; [[ -x ${!v:-} ]] || die "the toolchain gave no $1"; echo "${!v}"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/images"
install -m 0755 "$k0s" "$work/k0s"
for b in kube-apiserver kube-controller-manager kube-scheduler etcd kubelet containerd containerd-shim-runc-v2; do
  install -m 0755 "$(bin "$b")" "$work/bin/$b"
done
# 4. The pod images, as a bundle k0s imports (and pins) when its worker starts.
say "image bundle: ${pod_images[*]}"
docker save --output "$work/images/polykube-k0s-node.tar" "${pod_images[@]}"

# Hosts whose capability bounding set lacks CAP_SYS_RESOURCE (this VM) cannot let runc lower a
# container's oom_score_adj (the pause container asks for -998: "runc create failed: ... can't
# get final child's PID from pipe: EOF", first run here 2026-12-07): containerd must not ask,
# as in kind-node.sh. k0s merges the drop-ins of /etc/k0s/containerd.d into its configuration.
mkdir -p "$work/containerd.d"
# Registry hosts (a hosts.toml per registry, which the test bed's registry add-on writes): the
# CRI reads none unless config_path names the directory. containerd 2 documents that directory
# as its default, but k0s's (2.3.3 here) pulled over HTTPS with a hosts.toml in it (2026-12-07).
printf 'version = 3\n[plugins."io.containerd.cri.v1.images".registry]\n  config_path = "/etc/containerd/certs.d"\n' >"$work/containerd.d/polykube-registry-hosts.toml"
if [[ $(( 16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status) & (1 << 24) )) == 0 ]]; then
  printf 'version = 3\n[plugins."io.containerd.cri.v1.runtime"]\n  restrict_oom_score_adj = true\n' >"$work/containerd.d/polykube-restrict-oom-score-adj.toml"
fi

# runc is Debian's (/usr/sbin/runc), found on PATH; the node's own containerd 1.6 is not used.
# k0s stages xtables-legacy-multi and xtables-nft-multi into its bin directory and links
# iptables, iptables-save, ... there to the one the host uses, by a relative name: without its
# embedded copies those links would dangle, so Debian's are linked into the bin directory.
cat >"$work/Dockerfile" <<EOF
FROM $base
COPY k0s /usr/local/bin/k0s
COPY bin/ /var/lib/k0s/bin/
COPY images/ /var/lib/k0s/images/
RUN ln -s /usr/sbin/xtables-legacy-multi /usr/sbin/xtables-nft-multi /var/lib/k0s/bin/
COPY containerd.d/ /etc/k0s/containerd.d/
ENTRYPOINT ["/usr/local/bin/entrypoint"]
CMD ["k0s", "controller", "--enable-worker", "--no-taints"]
EOF
say "building $tag"
DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$work" >/dev/null || die "docker build $tag failed"
say "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1e6}'))"
