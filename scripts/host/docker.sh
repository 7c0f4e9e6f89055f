#!/usr/bin/env bash
# Prepares this host for the datapath tier (kind clusters): Docker installed and running, and able
# to run `--privileged` containers, which every kind node is.
#
#   scripts/host/docker.sh          # or: make host-docker
#
# What it does, each step only when needed (safe to run twice):
#   1. installs Debian's docker.io (and jq, used by the runtime wrapper) when `dockerd` is missing;
#   2. when this machine's capability bounding set lacks capabilities that `--privileged` asks for
#      (some VMs drop CAP_SYS_RESOURCE), installs a small OCI runtime wrapper that removes exactly
#      those from each container's capability sets and then runs runc, and makes it Docker's
#      default runtime. On a host whose bounding set is complete (a usual laptop or CI runner)
#      Docker's configuration is left untouched;
#   3. starts dockerd when it is not answering (this VM has no systemd);
#   4. proves the result: a --privileged container mounts a tmpfs, and `docker exec` works, using
#      an image imported from the host's own busybox (nothing is pulled).
# Why a wrapper and not a Docker option: Docker puts every capability it knows into a privileged
# container's bundle and runc fails ("unable to apply caps: operation not permitted") when one is
# outside the bounding set; Docker has no setting to leave one out under --privileged, and kind
# passes --privileged itself.
set -euo pipefail

say() { printf '• %s\n' "$*"; }
die() { printf 'host-docker: %s\n' "$*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root (it installs packages and writes /etc/docker/daemon.json)"

wrapper=/usr/local/libexec/polykube/runc-dropcaps
daemon_json=/etc/docker/daemon.json
runtime_name=polykube-runc
dockerd_log=/var/log/polykube-dockerd.log

# 1. Docker.
apt_updated=0
apt_install() {
  if [[ $apt_updated == 0 ]]; then
    say "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  say "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
if ! command -v dockerd >/dev/null; then
  apt_install docker.io
else
  say "dockerd present: $(dockerd --version)"
fi
command -v jq >/dev/null || apt_install jq
command -v capsh >/dev/null || apt_install libcap2-bin
dpkg -s busybox-static >/dev/null 2>&1 || apt_install busybox-static  # static: it runs in an empty image

# 2. The capabilities --privileged asks for that this machine cannot grant.
last_cap=$(cat /proc/sys/kernel/cap_last_cap)
all=$(( (1 << (last_cap + 1)) - 1 ))
bnd=$(( 16#$(awk '/^CapBnd:/ {print $2}' /proc/self/status) ))
missing_mask=$(( all & ~bnd ))
missing=()
if (( missing_mask != 0 )); then
  # capsh prints e.g. "0x...=cap_sys_resource"; Docker and runc spell them CAP_SYS_RESOURCE.
  decoded=$(capsh --decode=$(printf '0x%x' "$missing_mask"))
  IFS=, read -r -a names <<<"${decoded#*=}"
  for n in "${names[@]}"; do missing+=("${n^^}"); done
fi

restart=0
if (( ${#missing[@]} == 0 )); then
  say "the capability bounding set is complete: Docker runs --privileged as is; its configuration is left alone"
else
  say "this machine's capability bounding set lacks ${missing[*]}: installing the runtime wrapper $wrapper"
  runc_path=$(command -v runc) || die "runc not found after installing docker.io"
  drop_json=$(printf '%s\n' "${missing[@]}" | jq -R . | jq -sc .)
  mkdir -p "$(dirname "$wrapper")"
  tmp=$(mktemp)
  cat >"$tmp" <<EOF
#!/bin/sh
# Written by polykube scripts/host/docker.sh. An OCI runtime for Docker: removes the capabilities
# this machine's bounding set lacks ($drop_json) from the container bundle's config.json
# (create/run) and from the process file of \`runc exec --process FILE\`, then runs runc.
drop='$drop_json'
strip() {
  [ -f "\$1" ] || return 0
  jq --argjson drop "\$drop" '(.. | objects | select(has("bounding"))) |= with_entries(if (.value | type) == "array" then .value -= \$drop else . end)' "\$1" >"\$1.polykube" && mv "\$1.polykube" "\$1"
}
bundle=. process= prev=
for a in "\$@"; do
  case "\$prev" in --bundle|-b) bundle=\$a ;; --process|-p) process=\$a ;; esac
  case "\$a" in --bundle=*) bundle=\${a#--bundle=} ;; --process=*) process=\${a#--process=} ;; esac
  prev=\$a
done
for a in "\$@"; do
  case "\$a" in
    create|run) strip "\$bundle/config.json"; break ;;
    exec) [ -n "\$process" ] && strip "\$process"; break ;;
  esac
done
exec $runc_path "\$@"
EOF
  if ! cmp -s "$tmp" "$wrapper" 2>/dev/null; then
    install -m 0755 "$tmp" "$wrapper"
    say "wrote $wrapper"
    restart=1
  else
    say "$wrapper is up to date"
  fi
  rm -f "$tmp"

  mkdir -p /etc/docker
  current='{}'
  [[ -s $daemon_json ]] && current=$(cat "$daemon_json")
  wanted=$(jq --arg name "$runtime_name" --arg path "$wrapper" \
    '.runtimes[$name] = {path: $path} | ."default-runtime" = $name' <<<"$current") ||
    die "$daemon_json is not valid JSON; fix or remove it, then run this again"
  if [[ $(jq -S . <<<"$current") != $(jq -S . <<<"$wanted") ]]; then
    if [[ -s $daemon_json ]]; then
      cp "$daemon_json" "$daemon_json.polykube-backup"
      say "kept the previous $daemon_json as $daemon_json.polykube-backup"
    fi
    printf '%s\n' "$wanted" >"$daemon_json"
    say "made $runtime_name Docker's default runtime in $daemon_json"
    restart=1
  else
    say "$daemon_json already uses $runtime_name"
  fi
fi

# 3. dockerd.
dockerd_pid() { pgrep -x dockerd | head -1; }
if (( restart )) && [[ -n $(dockerd_pid) ]]; then
  say "restarting dockerd to load the new runtime"
  kill "$(dockerd_pid)"
  for _ in $(seq 60); do [[ -z $(dockerd_pid) ]] && break; sleep 0.5; done
fi
if ! docker info >/dev/null 2>&1; then
  if [[ -z $(dockerd_pid) ]]; then
    say "starting dockerd (log: $dockerd_log)"
    setsid nohup dockerd >>"$dockerd_log" 2>&1 </dev/null &
  fi
  for _ in $(seq 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || die "dockerd did not answer within 60s; see $dockerd_log"
fi
say "dockerd is running: server $(docker version --format '{{.Server.Version}}'), default runtime $(docker info --format '{{.DefaultRuntime}}')"

# 4. Prove it, with an image made here from the host's static busybox.
image=polykube.local/host-check:busybox
if ! docker image inspect "$image" >/dev/null 2>&1; then
  root=$(mktemp -d)
  mkdir -p "$root/bin" "$root/mnt"
  cp /bin/busybox "$root/bin/busybox"
  tar -C "$root" -c . | docker import -c 'ENTRYPOINT ["/bin/busybox"]' - "$image" >/dev/null
  rm -rf "$root"
fi
out=$(docker run --rm --privileged "$image" sh -c 'mount -t tmpfs none /mnt && echo mounted') ||
  die "a --privileged container failed to run: $out"
[[ $out == mounted ]] || die "a --privileged container could not mount a tmpfs: $out"
name=polykube-host-check-$$
docker run -d --rm --privileged --name "$name" "$image" sleep 30 >/dev/null
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
docker exec "$name" /bin/busybox true || die "docker exec into a --privileged container failed"
say "checked: a --privileged container mounts a tmpfs and docker exec works; this host can run kind nodes"

# 5. The inotify limits several kind clusters need (kind's known issues: kubelets fail with
# "too many open files" at the defaults); raised only where lower, and kept across reboots.
sysctl_conf=/etc/sysctl.d/60-polykube-kind.conf
want_watches=524288 want_instances=512
watches=$(cat /proc/sys/fs/inotify/max_user_watches) instances=$(cat /proc/sys/fs/inotify/max_user_instances)
if (( watches >= want_watches && instances >= want_instances )); then
  say "inotify limits are enough for several kind clusters (watches $watches, instances $instances)"
else
  (( watches > want_watches )) && want_watches=$watches
  (( instances > want_instances )) && want_instances=$instances
  sysctl -q -w fs.inotify.max_user_watches=$want_watches fs.inotify.max_user_instances=$want_instances ||
    die "could not raise the inotify limits (sysctl fs.inotify.max_user_watches=$want_watches fs.inotify.max_user_instances=$want_instances)"
  printf 'fs.inotify.max_user_watches = %s\nfs.inotify.max_user_instances = %s\n' "$want_watches" "$want_instances" >"$sysctl_conf"
  say "raised the inotify limits for several kind clusters (watches $watches → $want_watches, instances $instances → $want_instances; kept in $sysctl_conf)"
fi
