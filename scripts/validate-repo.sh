#!/usr/bin/env bash
# validate-repo.sh: the checks to run before proposing a change to Polykube.
#
#   bash scripts/validate-repo.sh            run every check
#   bash scripts/validate-repo.sh gofmt vet  run only the named checks
#
# Checks: gofmt vet lint generated kustomize tofu-fmt tofu-test features links
# Every check runs even when an earlier one fails; each failure says what to run to fix it.
# Exits 0 when all checks pass, 1 otherwise. Needs Go; tofu comes from the pinned toolchain
# (`make tools`), kustomize is run through `go run` at a pinned version.
set -uo pipefail

# kustomize v5.8.1 is built on sigs.k8s.io/kustomize/api v0.21.1, the version the Go tests use
# (v5.8.3 needs Go 1.27).
KUSTOMIZE_VERSION=v5.8.1
KUSTOMIZE="go run sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION}"
TOFU_MODULES=(infra/tofu/modules/polykube-manifests)
GENERATED_PATHS=(api/v1alpha1/zz_generated.deepcopy.go operator/config/crd operator/config/rbac)

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
ROOT=$PWD

if [ -t 1 ]; then RED=$'\e[31m' GREEN=$'\e[32m' YELLOW=$'\e[33m' BOLD=$'\e[1m' RESET=$'\e[0m'
else RED='' GREEN='' YELLOW='' BOLD='' RESET=''; fi

failed=()
passed=()
skipped=()

# step NAME: announce a check.
step() { printf '%s▶ %s%s\n' "$BOLD" "$1" "$RESET"; }
# ok NAME / fail NAME FIX... / skip NAME WHY: record the outcome of a check.
ok() { passed+=("$1"); printf '%s✓ %s%s\n\n' "$GREEN" "$1" "$RESET"; }
fail() {
	local name=$1; shift
	failed+=("$name")
	printf '%s✗ %s%s\n' "$RED" "$name" "$RESET"
	printf '  to fix: %s\n' "$@"
	echo
}
skip() { skipped+=("$1: $2"); printf '%s– %s: %s%s\n\n' "$YELLOW" "$1" "$2" "$RESET"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# OpenTofu needs no configuration file (the modules use no provider): use an empty one unless
# the user's exists.
if [ -z "${TF_CLI_CONFIG_FILE:-}" ] || [ ! -e "$TF_CLI_CONFIG_FILE" ]; then
	export TF_CLI_CONFIG_FILE="$tmp/tofurc"
	: >"$TF_CLI_CONFIG_FILE"
fi

check_gofmt() {
	step "gofmt"
	local out
	out=$(git ls-files -z --cached --others --exclude-standard '*.go' | xargs -0 -r gofmt -l)
	if [ -n "$out" ]; then
		echo "Not gofmt-formatted:"; echo "$out" | sed 's/^/  /'
		fail gofmt "make fmt   (or: gofmt -w <file>)"
	else ok gofmt; fi
}

check_vet() {
	step "go vet ./... (and in the api module)"
	if go vet ./... && (cd api && go vet ./...); then ok vet
	else fail vet "fix what go vet reports above (run: go vet ./... and cd api && go vet ./...)"; fi
}

check_lint() {
	step "golangci-lint"
	if ! command -v golangci-lint >/dev/null 2>&1; then
		skip lint "golangci-lint is not installed; gofmt and go vet ran instead (install it from https://golangci-lint.run to run it here)"
		return
	fi
	if golangci-lint run ./...; then ok lint
	else fail lint "fix what golangci-lint reports above (run: golangci-lint run ./...)"; fi
}

# snapshot prints a fingerprint of the generated paths: content of tracked and untracked files.
snapshot() {
	git ls-files -z --cached --others --exclude-standard -- "${GENERATED_PATHS[@]}" |
		sort -z | xargs -0 -r sha256sum
}

check_generated() {
	step "generated files are up to date (make generate)"
	snapshot >"$tmp/generated.before"
	if ! make --no-print-directory generate >"$tmp/generate.log" 2>&1; then
		cat "$tmp/generate.log"
		fail generated "make generate fails: fix the API or RBAC markers it reports above"
		return
	fi
	snapshot >"$tmp/generated.after"
	if ! diff -u "$tmp/generated.before" "$tmp/generated.after" >"$tmp/generated.diff"; then
		echo "make generate changed these files (they were stale; they are now regenerated):"
		grep '^[-+][0-9a-f]' "$tmp/generated.diff" | awk '{print "  " $2}' | sort -u
		git --no-pager diff --stat -- "${GENERATED_PATHS[@]}"
		fail generated "review the regenerated files and commit them (git add ${GENERATED_PATHS[*]})" \
			"never edit zz_generated.* or operator/config/{crd,rbac} by hand: change the markers and run make generate"
	else ok generated; fi
}

check_kustomize() {
	step "kustomize build (kustomize ${KUSTOMIZE_VERSION}) of every kustomization under gitops/ and examples/"
	local dirs=() d bad=()
	while IFS= read -r -d '' f; do dirs+=("$(dirname "$f")"); done < <(
		# In a plain pathspec '*' also matches '/': these are kustomization.yaml at any depth.
		git ls-files -z --cached --others --exclude-standard -- \
			'gitops/kustomization.yaml' 'gitops/*/kustomization.yaml' 'gitops/kustomization.yml' 'gitops/*/kustomization.yml' \
			'examples/*/kustomization.yaml' 'examples/*/kustomization.yml')
	if [ ${#dirs[@]} -eq 0 ]; then skip kustomize "no kustomization.yaml under gitops/ or examples/"; return; fi
	if ! $KUSTOMIZE version >"$tmp/kustomize.log" 2>&1; then
		cat "$tmp/kustomize.log"
		fail kustomize "go run sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION} must build: check GOPROXY and your Go version (go1.24+)"
		return
	fi
	for d in "${dirs[@]}"; do
		if $KUSTOMIZE build "$d" >/dev/null 2>"$tmp/kustomize.err"; then
			echo "  ok  $d"
		else
			echo "  ERR $d:"; sed 's/^/      /' "$tmp/kustomize.err"
			bad+=("$d")
		fi
	done
	if [ ${#bad[@]} -gt 0 ]; then
		fail kustomize "fix the kustomizations above; reproduce with: go run sigs.k8s.io/kustomize/kustomize/v5@${KUSTOMIZE_VERSION} build <dir>"
	else ok kustomize; fi
}

# tofu_bin prints the path of the pinned tofu as the hermetic toolchain resolves it
# (POLYKUBE_TOFU_BINARY, else a tofu of the pinned version on $PATH, else the cache).
tofu_bin() {
	go run ./testbed/cmd/polykube-testbed tools -o json tofu 2>"$tmp/tofu-resolve.log" |
		sed -n 's/^ *"path": "\(.*\)",\{0,1\}$/\1/p' | head -n 1
}

TOFU=
resolve_tofu() {
	[ -n "$TOFU" ] && return 0
	TOFU=$(tofu_bin)
	if [ -z "$TOFU" ]; then
		cat "$tmp/tofu-resolve.log" 2>/dev/null
		return 1
	fi
}

check_tofu_fmt() {
	step "tofu fmt -check -recursive infra/tofu examples"
	if ! resolve_tofu; then
		fail tofu-fmt "build the pinned OpenTofu: make tools   (or: go run ./testbed/cmd/polykube-testbed tools --build tofu)"
		return
	fi
	local out rc
	out=$("$TOFU" fmt -check -recursive -list=true infra/tofu examples 2>&1); rc=$?
	if [ $rc -ne 0 ]; then
		echo "$out" | sed 's/^/  /'
		fail tofu-fmt "$TOFU fmt -recursive infra/tofu examples"
	else ok tofu-fmt; fi
}

check_tofu_test() {
	step "tofu test (${TOFU_MODULES[*]})"
	if ! resolve_tofu; then
		fail tofu-test "build the pinned OpenTofu: make tools   (or: go run ./testbed/cmd/polykube-testbed tools --build tofu)"
		return
	fi
	local m bad=()
	for m in "${TOFU_MODULES[@]}"; do
		# Keep .terraform out of the tree; the modules need no provider, so nothing is downloaded.
		if TF_DATA_DIR="$tmp/tf-data-${m//\//-}" TF_IN_AUTOMATION=1 "$TOFU" -chdir="$m" init -input=false -no-color >"$tmp/tofu-init.log" 2>&1 &&
			TF_DATA_DIR="$tmp/tf-data-${m//\//-}" TF_IN_AUTOMATION=1 "$TOFU" -chdir="$m" test -no-color; then
			:
		else
			cat "$tmp/tofu-init.log"
			bad+=("$m")
		fi
	done
	if [ ${#bad[@]} -gt 0 ]; then
		fail tofu-test "fix the failing runs above; reproduce with: cd ${bad[0]} && tofu test" \
			"after an intended change to the rendered manifests, update tests/testdata/ and re-render examples/aws-gcp/gitops (see examples/aws-gcp/README.md)"
	else ok tofu-test; fi
}

check_features() {
	step "feature files and step definitions are in sync"
	if ! grep -qs 'func TestStepDefinitionsInSync' scenarios/*_test.go; then
		skip features "scenarios has no TestStepDefinitionsInSync yet"
		return
	fi
	if go test ./scenarios -run '^TestStepDefinitionsInSync$' -count=1; then ok features
	else fail features "add a step definition in scenarios/ for each undefined step above, or fix the step text in features/*.feature (see docs/scenario-authoring.md)"; fi
}

check_links() {
	step "relative links in Markdown files resolve"
	local f line target path bad=0
	while IFS= read -r -d '' f; do
		# Links outside fenced code blocks: ](target) with no scheme.
		while IFS= read -r line; do
			target=${line#*](}; target=${target%)}
			target=${target%% *}          # drop a "title"
			target=${target#<}; target=${target%>}
			case $target in
				http://* | https://* | mailto:* | \#* | '') continue ;;
			esac
			path=${target%%#*}
			path=${path%%\?*}
			[ -z "$path" ] && continue
			if [ "${path:0:1}" = / ]; then path="$ROOT$path"
			else path="$(dirname "$f")/$path"; fi
			if [ ! -e "$path" ]; then
				echo "  $f: broken link ($target)"
				bad=1
			fi
		done < <(awk '/^[ \t]*(```|~~~)/ { fence = !fence; next } !fence' "$f" |
			sed 's/`[^`]*`//g' | grep -oE '\]\([^)[:space:]]+( "[^"]*")?\)' || true)
	done < <(git ls-files -z --cached --others --exclude-standard '*.md')
	if [ $bad -ne 0 ]; then
		fail links "point the links above at files that exist (paths are relative to the Markdown file)"
	else ok links; fi
}

all=(gofmt vet lint generated kustomize tofu-fmt tofu-test features links)
checks=("$@")
[ ${#checks[@]} -eq 0 ] && checks=("${all[@]}")
for c in "${checks[@]}"; do
	case $c in
		gofmt) check_gofmt ;;
		vet) check_vet ;;
		lint) check_lint ;;
		generated) check_generated ;;
		kustomize) check_kustomize ;;
		tofu-fmt) check_tofu_fmt ;;
		tofu-test) check_tofu_test ;;
		features) check_features ;;
		links) check_links ;;
		*) echo "unknown check '$c'; the checks are: ${all[*]}" >&2; exit 2 ;;
	esac
done

echo "${BOLD}Summary${RESET}: ${#passed[@]} passed, ${#failed[@]} failed, ${#skipped[@]} skipped"
for s in "${skipped[@]}"; do echo "  skipped $s"; done
if [ ${#failed[@]} -gt 0 ]; then
	echo "${RED}failed: ${failed[*]}${RESET} (each says how to fix it above)"
	exit 1
fi
echo "${GREEN}all checks passed${RESET}"
