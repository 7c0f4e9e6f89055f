#!/usr/bin/env bash
# Compiles polykube-testbed into the path given (the Makefile's bin/polykube-testbed).
# `go run` compiled the test bed silently on every make target, which on a fresh clone looked like
# a hang of several minutes; this says what is happening first, then lets `go build` be incremental.
set -euo pipefail
out=${1:?usage: testbed-bin.sh OUTPUT}
cd "$(dirname "$0")/.."
if [[ ! -x $out ]]; then
  echo "compiling polykube-testbed (first run: a few minutes; later runs reuse Go's build cache)…" >&2
  start=$SECONDS
  go build -o "$out" ./testbed/cmd/polykube-testbed
  echo "compiled polykube-testbed in $((SECONDS - start))s" >&2
else
  go build -o "$out" ./testbed/cmd/polykube-testbed
fi
