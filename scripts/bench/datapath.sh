#!/usr/bin/env bash
# Figures of the datapath tier on this machine, printed, not asserted (make bench-datapath):
#   - the local images' build (warm when they were built before: the recipes' caches are kept);
#   - `polykube-testbed up` of testbed/datapath/topologies/kind-cilium-local.yaml: three kind
#     clusters, Cilium with ClusterMesh, every check of up (nodes Ready, CoreDNS, pod-to-Service
#     traffic, every agent seeing every remote cluster, nothing pulled);
#   - peak memory while it comes up and stays up for a minute: the node containers' own use
#     (docker stats) and the host's (MemTotal - MemAvailable, above the figure before up);
#   - `down`.
# Needs make host-docker. Tears down what it brought up, also when up fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tb=$root/bin/polykube-testbed
topo=$root/testbed/datapath/topologies/kind-cilium-local.yaml
run=cilium-local
settle=${SETTLE_SECONDS:-60}

secs() { awk -v s="$1" 'BEGIN { m = int(s / 60); if (m) printf "%dm%02ds", m, s - 60 * m; else printf "%ds", s }'; }
host_used_mib() { awk '/^MemTotal:/ {t=$2} /^MemAvailable:/ {a=$2} END {printf "%d", (t - a) / 1024}' /proc/meminfo; }
nodes_mib() {
  docker stats --no-stream --format '{{.Name}} {{.MemUsage}}' 2>/dev/null |
    awk '$1 ~ /-control-plane$|-worker[0-9]*$/ {
      v = $2; u = v; gsub(/[0-9.]/, "", u); gsub(/[A-Za-z]/, "", v)
      f = (u == "GiB") ? 1024 : (u == "MiB") ? 1 : (u == "KiB") ? 1/1024 : 0
      s += v * f } END { printf "%d", s }'
}

"$tb" down --provider kind --run "$run" >/dev/null 2>&1 || true
log=$(mktemp /tmp/polykube-bench-datapath.XXXXXX)
trap '"$tb" down --provider kind --run "$run" >/dev/null 2>&1 || true' EXIT

t0=$(date +%s)
"$tb" images build kind-node cilium polykube >"$log" 2>&1 || { cat "$log"; exit 1; }
t_images=$(( $(date +%s) - t0 ))

base=$(host_used_mib)
peak_host=$base peak_nodes=0
sample() {
  local h n
  h=$(host_used_mib); n=$(nodes_mib)
  (( h > peak_host )) && peak_host=$h
  (( n > peak_nodes )) && peak_nodes=$n
  return 0
}
t0=$(date +%s)
"$tb" up --topology "$topo" >>"$log" 2>&1 &
up=$!
while kill -0 "$up" 2>/dev/null; do sample; sleep 5; done
if ! wait "$up"; then cat "$log"; echo "up failed (log: $log)"; exit 1; fi
t_up=$(( $(date +%s) - t0 ))
end=$(( $(date +%s) + settle ))
while (( $(date +%s) < end )); do sample; sleep 5; done

t0=$(date +%s)
"$tb" down --provider kind --run "$run" >>"$log" 2>&1
t_down=$(( $(date +%s) - t0 ))
trap - EXIT

echo "datapath figures ($(nproc) cores, $(awk '/^MemTotal:/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); log: $log)"
printf '  %-52s %s\n' "images build kind-node cilium polykube" "$(secs "$t_images")"
printf '  %-52s %s\n' "up: 3 kind clusters, Cilium ClusterMesh, all checks" "$(secs "$t_up")"
printf '  %-52s %s MiB\n' "peak memory of the node containers" "$peak_nodes"
printf '  %-52s %s MiB (%s MiB before up)\n' "peak host memory in use, above the figure before up" "$(( peak_host - base ))" "$base"
printf '  %-52s %s\n' "down" "$(secs "$t_down")"
grep -E '^ ✓ .*\([0-9]' "$log" | sed 's/^/  step /' || true
