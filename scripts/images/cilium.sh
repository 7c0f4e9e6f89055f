#!/usr/bin/env bash
# Builds the Cilium images of the datapath tier on this machine, with nothing pulled:
#
#   scripts/images/cilium.sh            # or: make images-cilium
#
# Cilium's own images are built in its builder image from quay.io, which no machine without a
# registry can reach. The same contents come from sources reachable here instead:
#   - the binaries, built by the pinned toolchain from the github.com/cilium/cilium module
#     (polykube-testbed tools --build cilium): cilium-agent, cilium-dbg, cilium-health and its
#     responder, cilium-mount, cilium-sysctlfix, cilium-cni, cilium-operator-generic and
#     clustermesh-apiserver (and etcd, which the clustermesh-apiserver runs beside itself);
#   - the datapath's C sources (bpf/, without its tests) and the init and CNI install scripts,
#     from the same module, where Cilium's Makefile install-bpf and Dockerfile take them;
#   - the agent's run-time packages from Debian bookworm (debootstrap): clang-19, which the
#     agent compiles its datapath with when it starts, iproute2, iptables, ipset, kmod,
#     util-linux (nsenter), ca-certificates, bash.
# Results (the names the Helm values of the test bed use with image.override):
#   polykube.local/cilium/cilium:<version>                  agent, on the Debian root filesystem
#   polykube.local/cilium/operator-generic:<version>        FROM scratch
#   polykube.local/cilium/clustermesh-apiserver:<version>   FROM scratch, with etcd
# Hubble and Envoy are not built: the test bed installs Cilium with both off.
#
# Needs root and Docker (make host-docker). The root filesystem is cached beside the node
# image's, in ${POLYKUBE_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/polykube}/images/.
set -euo pipefail

say() { printf '• %s\n' "$*"; }
die() { printf 'cilium-images: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root (debootstrap and chroot need it)"
docker info >/dev/null 2>&1 || die "Docker does not answer: run \`make host-docker\` first"

cd "$(dirname "$0")/../.."
root=$PWD
version=$(sed -n 's/^\tCiliumVersion *= *"\(v[^"]*\)".*/\1/p' internal/toolchain/versions.go)
[[ -n $version ]] || die "could not read CiliumVersion from internal/toolchain/versions.go"
module=$(go mod download -json "github.com/cilium/cilium@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -d $module/bpf && -d $module/images/cilium ]] || die "the github.com/cilium/cilium@$version module has no bpf/ or images/cilium/ (go mod download said $module)"
repo=${POLYKUBE_IMAGE_REPO:-polykube.local/cilium}
cache=${POLYKUBE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/polykube}/images/cilium-$version
mkdir -p "$cache"
exec 9>"$cache.lock"
flock 9 || die "another build holds $cache.lock"

testbed_bin=$root/bin/polykube-testbed
scripts/testbed-bin.sh "$testbed_bin"
eval "$("$testbed_bin" tools env --build cilium kind-node | sed 's/^/export /')"
bin() { local v="POLYKUBE_$(echo "$1" | tr 'a-z-' 'A-Z_')_BINARY"; [[ -x ${!v:-} ]] || die "the toolchain gave no $1"; echo "${!v}"; }

# The agent's root filesystem, once.
rootfs=$cache/agent-rootfs
if [[ ! -f $cache/agent-rootfs.done ]]; then
  command -v debootstrap >/dev/null || { say "installing debootstrap"; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  rm -rf "$rootfs"
  say "debootstrap: Debian bookworm with clang-19, iproute2, iptables and ipset for the agent (a few minutes)"
  debootstrap --variant=minbase \
    --include=clang-19,iproute2,iptables,ipset,kmod,util-linux,mount,ca-certificates,bash,libatomic1,procps \
    bookworm "$rootfs" http://deb.debian.org/debian >"$cache/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $cache/debootstrap.log"
  # The agent runs `clang`; Debian names it clang-19.
  ln -sf clang-19 "$rootfs/usr/bin/clang"
  chroot "$rootfs" apt-get clean
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/*
  touch "$cache/agent-rootfs.done"
else
  say "reusing the agent's root filesystem in $rootfs"
fi
chroot "$rootfs" clang --version | head -1 | grep -q 'version 19' || die "clang in $rootfs is not clang 19"

# What Cilium's Makefile (install-container-binary, install-bpf) and Dockerfile put in the agent
# image, into a layer of its own on the cached root filesystem.
layer=$(mktemp -d)
trap 'rm -rf "$layer"' EXIT
install -d "$layer/usr/bin" "$layer/opt/cni/bin" "$layer/var/lib/cilium" "$layer/home/cilium"
for b in cilium-agent cilium-dbg cilium-health cilium-health-responder cilium-mount cilium-sysctlfix; do
  install -m 0755 "$(bin "$b")" "$layer/usr/bin/$b"
done
install -m 0755 "$(bin cilium-cni)" "$layer/opt/cni/bin/cilium-cni"
install -m 0755 "$module/images/cilium/init-container.sh" "$module/plugins/cilium-cni/install-plugin.sh" \
  "$module/plugins/cilium-cni/cni-uninstall.sh" "$layer/"
# bpf/ as install-bpf copies it: everything but the tests, the custom programs and the Makefiles.
(cd "$module" && find bpf -type f ! -path 'bpf/tests/*' ! -path 'bpf/complexity-tests/*' ! -path 'bpf/custom/*' \
  ! -name Makefile ! -name Makefile.bpf ! -name .gitignore -print0 |
  xargs -0 -I{} install -D -m 0644 {} "$layer/var/lib/cilium/{}")
chmod -R u+w "$layer"

agent=$repo/cilium:$version
say "image $agent (the agent: $(du -sh "$layer" | cut -f1) of Cilium on the Debian root filesystem)"
tar -C "$rootfs" -c . | docker import \
  --change 'ENV INITSYSTEM=SYSTEMD' --change 'WORKDIR /home/cilium' --change 'CMD ["/usr/bin/cilium-dbg"]' \
  --change "LABEL io.polykube.image.source=github.com/cilium/cilium@$version" \
  - "$agent-rootfs" >/dev/null
printf 'FROM %s\nCOPY . /\n' "$agent-rootfs" >"$layer/Dockerfile.polykube"
DOCKER_BUILDKIT=0 docker build -q -f "$layer/Dockerfile.polykube" -t "$agent" "$layer" >"$cache/build.log" 2>&1 ||
  die "docker build $agent failed; see $cache/build.log"
docker rmi "$agent-rootfs" >/dev/null 2>&1 || true
docker run --rm --entrypoint cilium-agent "$agent" --version >/dev/null || die "$agent: cilium-agent --version failed"

scratch() { # tag, then file:/path pairs (the first is the entrypoint) or tar:archive (unpacked at /)
  local tag=$1 dir
  shift
  dir=$(mktemp -d -p "$layer")
  # A world-writable /tmp, as the distroless base of Cilium's own images has: gops and the
  # clustermesh-apiserver write there, as a non-root user.
  mkdir -p "$dir/root/tmp" && chmod 1777 "$dir/root/tmp"
  tar -C "$dir/root" --owner=0 --group=0 -cf "$dir/tmp.tar" tmp
  {
    echo "FROM scratch"
    echo "ADD tmp.tar /"
    echo "ENV PATH=/usr/local/bin:/usr/bin:/bin GOPS_CONFIG_DIR=/tmp/gops"
    echo "LABEL io.polykube.image.source=github.com/cilium/cilium@$version"
    for pair in "$@"; do
      if [[ $pair == tar:* ]]; then
        cp "${pair#tar:}" "$dir/"
        echo "ADD $(basename "${pair#tar:}") /"
        continue
      fi
      cp "${pair%%:*}" "$dir/$(basename "${pair#*:}")"
      echo "COPY $(basename "${pair#*:}") ${pair#*:}"
    done
    echo "ENTRYPOINT [\"${1#*:}\"]"
  } >"$dir/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$dir" >"$cache/build.log" 2>&1 || die "docker build $tag failed; see $cache/build.log"
}
say "image $repo/operator-generic:$version"
scratch "$repo/operator-generic:$version" "$(bin cilium-operator-generic):/usr/bin/cilium-operator-generic"
say "image $repo/clustermesh-apiserver:$version (with etcd $(bin etcd | sed 's|.*/etcd/\([^/]*\)/etcd|\1|'))"
# As Cilium's images/clustermesh-apiserver/Dockerfile: the etcd client configuration the
# apiserver reads and an empty, world-writable /var/run/cilium.
scratch "$repo/clustermesh-apiserver:$version" "$(bin clustermesh-apiserver):/usr/bin/clustermesh-apiserver" "$(bin etcd):/usr/bin/etcd" \
  "$module/clustermesh-apiserver/etcd-config.yaml:/var/lib/cilium/etcd-config.yaml" "tar:$module/images/clustermesh-apiserver/var-run-cilium.tar"

docker image inspect -f '{{index .RepoTags 0}} {{.Size}}' "$agent" "$repo/operator-generic:$version" "$repo/clustermesh-apiserver:$version" |
  awk '{printf "• built %s (%d MB)\n", $1, $2/1e6}'
