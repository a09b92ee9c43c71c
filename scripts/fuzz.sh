#!/usr/bin/env bash
# Runs every fuzz target of the module briefly, one at a time (go test
# -fuzz takes a single target), and fails if any finds a crasher. A crasher
# is written to the package's testdata/fuzz/FuzzX/ by go test: commit it
# with the fix, and plain `go test` replays it from then on.
#
#   FUZZTIME      how long each target runs (default 5s; any -fuzztime value)
#   FUZZ_PARALLEL fuzzing workers per target (default: go test's, GOMAXPROCS)
#   scripts/fuzz.sh [packages...]   (default ./...)
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
fuzztime=${FUZZTIME:-5s}
parallel=()
if [[ -n "${FUZZ_PARALLEL:-}" ]]; then
	parallel=(-parallel "$FUZZ_PARALLEL")
fi
pkgs=("$@")
if [[ ${#pkgs[@]} -eq 0 ]]; then
	pkgs=(./...)
fi

failed=()
ran=0
for pkg in $("$GO" list "${pkgs[@]}"); do
	# -list compiles the tests and prints the matching names, then "ok ...".
	targets=$("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
	for target in $targets; do
		echo "== $pkg $target ($fuzztime)"
		ran=$((ran + 1))
		if ! "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "${parallel[@]}" "$pkg"; then
			failed+=("$pkg $target")
		fi
	done
done

echo "== $ran fuzz targets run for $fuzztime each"
if [[ ${#failed[@]} -gt 0 ]]; then
	printf 'FAIL: %s\n' "${failed[@]}" >&2
	exit 1
fi
