#!/usr/bin/env bash
# Builds a kind node image on this machine, with nothing pulled from a registry:
#
#   scripts/images/kind-node.sh            # or: make images-node
#
# kind's own `kind build node-image` cannot work offline (it fetches etcd, CoreDNS, pause and
# kindnetd images). This follows kind's base-image recipe instead, with every part from a
# source reachable here:
#   1. a Debian bookworm root filesystem (debootstrap: systemd 252, which still runs on this
#      host's cgroup v1 hierarchy; containerd 1.6 and runc from Debian; CNI plugins);
#   2. kind's base files (entrypoint, systemd units, containerd config) from the
#      sigs.k8s.io/kind module, set up as kind's base Dockerfile does;
#   3. kubelet, kubeadm and kubectl from the pinned toolchain (polykube-testbed tools --build
#      kind-node, built from k8s.io/kubernetes), and crictl (from sigs.k8s.io/cri-tools), which
#      kind's log export runs in every node;
#   4. the images kubeadm runs as static pods (kube-apiserver, kube-controller-manager,
#      kube-scheduler, etcd) made FROM scratch around the toolchain's binaries, and pause built
#      from testbed/images/pause, imported into the node's containerd as kind does (`ctr images
#      import --no-unpack`, pinned) and committed.
#   5. kube-proxy (on a small Debian root filesystem with iptables and conntrack) and CoreDNS
#      (FROM scratch, built by the toolchain from github.com/coredns/coredns), so that kubeadm's
#      add-ons run too.
# The result is polykube.local/kind-node:<kubernetes version>. Not built yet: the Cilium images
# (the CNI); see docs/datapath.md.
#
# Needs root and Docker able to run --privileged containers (make host-docker). The root
# filesystem is cached in ${POLYKUBE_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/polykube}/images/, so a second run takes
# seconds; remove that directory to start again.
set -euo pipefail

say() { printf '• %s\n' "$*"; }
die() { printf 'kind-node: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root (debootstrap and chroot need it)"
docker info >/dev/null 2>&1 || die "Docker does not answer: run \`make host-docker\` first"

cd "$(dirname "$0")/../.."
root=$PWD
k8s=$(sed -n 's/^\tKubernetesVersion *= *"\(v[^"]*\)".*/\1/p' internal/toolchain/versions.go)
etcd=$(sed -n 's/^\tEtcdVersion *= *"v\([^"]*\)".*/\1/p' internal/toolchain/versions.go)
kind_version=$(go list -m -f '{{.Version}}' sigs.k8s.io/kind)
[[ -n $k8s && -n $etcd && -n $kind_version ]] || die "could not read the pinned versions from internal/toolchain/versions.go and go.mod"
kind_dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kind)
[[ -d $kind_dir ]] || { go mod download sigs.k8s.io/kind; kind_dir=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kind); }
files=$kind_dir/images/base/files
tag=polykube.local/kind-node:$k8s
# The same cache as the toolchain (internal/toolchain.DefaultCacheDir).
cache=${POLYKUBE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/polykube}/images/kind-node-$k8s-kind-$kind_version
mkdir -p "$cache"
exec 9>"$cache.lock"
flock 9 || die "another build holds $cache.lock"

# 3. The node's Kubernetes binaries (built or reused by the toolchain, with its progress lines).
testbed_bin=$root/bin/polykube-testbed
scripts/testbed-bin.sh "$testbed_bin"
eval "$("$testbed_bin" tools env --build kind-node | sed 's/^/export /')"
bin() { local v="POLYKUBE_$(echo "$1" | tr 'a-z-' 'A-Z_')_BINARY"; [[ -x ${!v:-} ]] || die "the toolchain gave no $1"; echo "${!v}"; }

# 1. and 2. The root filesystem, once.
rootfs=$cache/rootfs
if [[ ! -f $cache/rootfs.done ]]; then
  command -v debootstrap >/dev/null || { say "installing debootstrap"; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  rm -rf "$rootfs"
  say "debootstrap: Debian bookworm with systemd, containerd and runc (about a minute)"
  debootstrap --variant=minbase \
    --include=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,bash,ca-certificates,jq,procps,containerd,runc,socat,ebtables,containernetworking-plugins \
    bookworm "$rootfs" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $cache/debootstrap.log"
  say "setting the root filesystem up as kind's base image is"
  install -d -m 0755 "$rootfs/kind/bin" "$rootfs/etc/kubernetes/manifests" "$rootfs/etc/systemd/system/kubelet.service.d" \
    "$rootfs/etc/containerd" "$rootfs/etc/default" "$rootfs/etc/sysctl.d" "$rootfs/opt/cni/bin"
  cp -r "$files/kind/." "$rootfs/kind/"
  chmod 0755 "$rootfs"/kind/bin/*
  install -m 0755 "$files"/usr/local/bin/* "$rootfs/usr/local/bin/"
  install -m 0644 "$files/etc/crictl.yaml" "$rootfs/etc/"
  install -m 0644 "$files/etc/containerd/config.toml" "$rootfs/etc/containerd/"
  install -m 0644 "$files"/etc/default/* "$rootfs/etc/default/"
  install -m 0644 "$files"/etc/sysctl.d/* "$rootfs/etc/sysctl.d/"
  for f in "$files"/etc/systemd/system/*; do [[ -f $f ]] && install -m 0644 "$f" "$rootfs/etc/systemd/system/"; done
  install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$rootfs/etc/systemd/system/kubelet.service.d/"
  # The CNI plugins kind's nodes have in /opt/cni/bin; Debian ships them in /usr/lib/cni.
  for p in host-local loopback ptp portmap bridge; do ln -sf "/usr/lib/cni/$p" "$rootfs/opt/cni/bin/$p"; done
  # kind's units start /usr/local/bin/containerd; Debian's is in /usr/bin.
  ln -sf /usr/bin/containerd "$rootfs/usr/local/bin/containerd"
  # systemd in a container: only the units kind wants.
  find "$rootfs/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
  rm -f "$rootfs"/lib/systemd/system/multi-user.target.wants/* "$rootfs"/etc/systemd/system/*.wants/* \
    "$rootfs"/lib/systemd/system/local-fs.target.wants/* "$rootfs"/lib/systemd/system/sockets.target.wants/*udev* \
    "$rootfs"/lib/systemd/system/sockets.target.wants/*initctl* "$rootfs"/lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >>"$rootfs/etc/systemd/journald.conf"
  chroot "$rootfs" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
  chroot "$rootfs" systemctl mask systemd-binfmt.service >/dev/null 2>&1
  chroot "$rootfs" /bin/sh -c 'ctr oci spec' |
    jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
    jq 'del(.process.rlimits)' >"$rootfs/etc/containerd/cri-base.json"
  # Hosts whose capability bounding set lacks CAP_SYS_RESOURCE (this VM) cannot let runc lower
  # a container's oom_score_adj (the pause container asks for -998): containerd must not ask.
  if [[ $(( 16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status) & (1 << 24) )) == 0 ]]; then
    sed -i 's|restrict_oom_score_adj = false|restrict_oom_score_adj = true|' "$rootfs/etc/containerd/config.toml"
    grep -q 'restrict_oom_score_adj = true' "$rootfs/etc/containerd/config.toml" || die "could not set restrict_oom_score_adj in kind's containerd config"
  fi
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/*
  touch "$cache/rootfs.done"
else
  say "reusing the root filesystem in $rootfs"
fi
for b in kubelet kubeadm kubectl crictl; do install -m 0755 "$(bin "$b")" "$rootfs/usr/bin/$b"; done
echo "$k8s" >"$rootfs/kind/version"

say "importing the root filesystem as polykube.local/kind-node-base:$k8s"
tar -C "$rootfs" -c . | docker import --change 'ENV container=docker' \
  --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' - "polykube.local/kind-node-base:$k8s" >/dev/null

# 4. The images kubeadm runs, FROM scratch around the toolchain's binaries (classic builder:
# nothing is pulled).
images=()
work=$(mktemp -d)
trap 'rm -rf "$work"; docker rm -f polykube-kind-node-build >/dev/null 2>&1 || true' EXIT
scratch_image() { # name tag binary
  mkdir -p "$work/$1"
  cp "$3" "$work/$1/$1"
  printf 'FROM scratch\nENV PATH=/usr/local/bin:/usr/bin:/bin\nCOPY %s /usr/local/bin/%s\nENTRYPOINT ["/usr/local/bin/%s"]\n' "$1" "$1" "$1" >"$work/$1/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q -t "$2" "$work/$1" >/dev/null 2>&1 || die "docker build $2 failed"
  images+=("$2")
}
for c in kube-apiserver kube-controller-manager kube-scheduler; do
  say "image registry.k8s.io/$c:$k8s"
  scratch_image "$c" "registry.k8s.io/$c:$k8s" "$(bin "$c")"
done
say "image registry.k8s.io/etcd:$etcd-0"
scratch_image etcd "registry.k8s.io/etcd:$etcd-0" "$(bin etcd)"
pause_tag=$(sed -n 's/^ *sandbox_image *= *"\(.*\)"/\1/p' "$files/etc/containerd/config.toml")
[[ -n $pause_tag ]] || die "kind's containerd config names no sandbox_image"
say "image $pause_tag (testbed/images/pause)"
CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$work/pause.bin" ./testbed/images/pause
scratch_image pause "$pause_tag" "$work/pause.bin"

# 5. kube-proxy needs iptables and conntrack: a root filesystem of its own, once.
proxyfs=$cache/kube-proxy-rootfs
if [[ ! -f $cache/kube-proxy-rootfs.done ]]; then
  rm -rf "$proxyfs"
  say "debootstrap: a Debian bookworm root filesystem for kube-proxy (iptables, conntrack)"
  debootstrap --variant=minbase --include=iptables,conntrack,ipset,kmod bookworm "$proxyfs" http://deb.debian.org/debian \
    >"$cache/debootstrap-kube-proxy.log" 2>&1 || die "debootstrap failed; see $cache/debootstrap-kube-proxy.log"
  chroot "$proxyfs" apt-get clean
  rm -rf "$proxyfs"/var/lib/apt/lists/*
  touch "$cache/kube-proxy-rootfs.done"
fi
install -m 0755 "$(bin kube-proxy)" "$proxyfs/usr/local/bin/kube-proxy"
say "image registry.k8s.io/kube-proxy:$k8s"
tar -C "$proxyfs" -c . | docker import --change 'ENTRYPOINT ["/usr/local/bin/kube-proxy"]' - "registry.k8s.io/kube-proxy:$k8s" >/dev/null
images+=("registry.k8s.io/kube-proxy:$k8s")
coredns=$(sed -n 's/^\tCoreDNSVersion *= *"\(v[^"]*\)".*/\1/p' internal/toolchain/versions.go)
say "image registry.k8s.io/coredns/coredns:$coredns"
# As upstream's image: user 65532, and the binary carries the file capability to bind port 53,
# which is what lets it run under k0s's runAsNonRoot and kubeadm's capability set (drop ALL, add
# NET_BIND_SERVICE: a non-root process keeps an added capability across exec only through the
# file's capability). A Dockerfile's COPY cannot be trusted to keep the xattr; an imported tar can.
mkdir -p "$work/coredns"
install -m 0755 "$(bin coredns)" "$work/coredns/coredns"
setcap cap_net_bind_service=+ep "$work/coredns/coredns" || die "setcap on coredns failed (Debian: apt-get install libcap2-bin)"
tar --xattrs --xattrs-include='security.capability' -C "$work/coredns" -c coredns |
  docker import --change 'USER 65532:65532' --change 'EXPOSE 53 53/udp' --change 'ENTRYPOINT ["/coredns"]' \
    - "registry.k8s.io/coredns/coredns:$coredns" >/dev/null || die "docker import of coredns failed"
images+=("registry.k8s.io/coredns/coredns:$coredns")

say "pre-loading ${#images[@]} images into the node's containerd"
docker rm -f polykube-kind-node-build >/dev/null 2>&1 || true
docker run -d --name polykube-kind-node-build --privileged --entrypoint=sleep "polykube.local/kind-node-base:$k8s" infinity >/dev/null
docker exec polykube-kind-node-build bash -c 'nohup containerd >/tmp/containerd.log 2>&1 &'
for i in 1 2 3 4 5 6 7 8 9 10; do docker exec polykube-kind-node-build ctr version >/dev/null 2>&1 && break; sleep 1; done
docker save "${images[@]}" | docker exec -i polykube-kind-node-build \
  ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests - >/dev/null
docker exec polykube-kind-node-build pkill containerd || true
sleep 1
docker commit --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' polykube-kind-node-build "$tag" >/dev/null
say "built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%d MB", $1/1e6}')): kind create cluster --image $tag"
