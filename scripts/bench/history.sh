#!/usr/bin/env bash
# Appends the figures a `make bench` run printed beside their goals (every line with "goal") to
# the history file, one tab-separated row each: when, which commit, the machine's cores and load,
# and the line. The history is committed, so a change that slows the loop shows in review as a
# row beside the earlier ones.
#
#   scripts/bench/history.sh BENCH_OUTPUT HISTORY_FILE
set -euo pipefail
out=${1:?usage: history.sh BENCH_OUTPUT HISTORY_FILE}
hist=${2:?usage: history.sh BENCH_OUTPUT HISTORY_FILE}
[ -f "$out" ] || { echo "history.sh: no benchmark output at $out (did make bench run?)" >&2; exit 2; }
if [ ! -f "$hist" ]; then
	printf 'date\tcommit\tcores\tload1\tfigure\n' >"$hist"
fi
when=$(date -u +%FT%TZ)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit+dirty"; fi
cores=$(nproc)
load=$(cut -d' ' -f1 /proc/loadavg)
n=0
while IFS= read -r line; do
	line=$(printf '%s' "$line" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]][[:space:]]*/ /g')
	printf '%s\t%s\t%s\t%s\t%s\n' "$when" "$commit" "$cores" "$load" "$line" >>"$hist"
	n=$((n + 1))
done < <(grep -i 'goal' "$out" || true)
echo "bench: $n figures appended to $hist (commit it with your change)"
