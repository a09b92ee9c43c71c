#!/usr/bin/env bash
# Runs every fuzz target of every module briefly, one at a time (go test
# -fuzz takes a single target), and fails if any finds a crasher. A crasher
# is written to the package's testdata/fuzz/FuzzX/ by go test: commit it
# with the fix, and plain `go test` replays it from then on.
#
#   FUZZTIME      how long each target runs (default 5s; any -fuzztime value)
#   FUZZ_PARALLEL fuzzing workers per target (default: go test's, GOMAXPROCS)
#   MODULES       the module folders (default: make -s modules, the Makefile's list)
#   scripts/fuzz.sh [folders...]   packages under these folders of the
#                                  repository (default: every package)
#
# Each module is built on its own go.mod (GOWORK=off), as make test does.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
export GOWORK=off
fuzztime=${FUZZTIME:-5s}
parallel=()
if [[ -n "${FUZZ_PARALLEL:-}" ]]; then
	parallel=(-parallel "$FUZZ_PARALLEL")
fi
read -r -a modules <<<"${MODULES:-$(make -s --no-print-directory modules | tr '\n' ' ')}"

# module_of prints the module folder that holds the folder $1 (the
# longest module folder it lies in).
module_of() {
	local dir=${1#./} best=.
	dir=${dir%/...}
	for m in "${modules[@]}"; do
		if [[ $m != . && ( $dir == "$m" || $dir == "$m"/* ) && ${#m} -gt ${#best} ]]; then
			best=$m
		fi
	done
	echo "$best"
}

# The (module, pattern) pairs to list: every module's ./..., or each
# folder given, as a pattern inside its module.
pairs=()
if [[ $# -eq 0 ]]; then
	for m in "${modules[@]}"; do
		pairs+=("$m" ./...)
	done
else
	for arg in "$@"; do
		m=$(module_of "$arg")
		rel=${arg#./}
		if [[ $m != . ]]; then
			rel=${rel#"$m"}
			rel=${rel#/}
		fi
		pairs+=("$m" "./${rel:-.}")
	done
fi

# fuzz_one fuzzes one target. A run that fails with only "context
# deadline exceeded" and no failing input is go test's own hiccup (the
# fuzz time ran out while its workers started, on a busy machine), not a
# crasher: it is run once more.
fuzz_one() {
	local m=$1 pkg=$2 target=$3 out
	out=$(mktemp)
	for try in 1 2; do
		if (cd "$m" && "$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "${parallel[@]}" "$pkg") 2>&1 | tee "$out"; [[ ${PIPESTATUS[0]} -eq 0 ]]; then
			rm -f "$out"
			return 0
		fi
		if [[ $try -eq 2 ]] || ! grep -q 'context deadline exceeded' "$out" || grep -q 'Failing input written' "$out"; then
			break
		fi
		echo "== $pkg $target: go test's fuzzer ran out of time starting (no failing input); once more"
	done
	rm -f "$out"
	return 1
}

failed=()
ran=0
for ((i = 0; i < ${#pairs[@]}; i += 2)); do
	m=${pairs[i]} pattern=${pairs[i + 1]}
	for pkg in $(cd "$m" && "$GO" list "$pattern"); do
		# -list compiles the tests and prints the matching names, then "ok ...".
		targets=$(cd "$m" && "$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
		for target in $targets; do
			echo "== $pkg $target ($fuzztime)"
			ran=$((ran + 1))
			if ! fuzz_one "$m" "$pkg" "$target"; then
				failed+=("$pkg $target")
			fi
		done
	done
done

echo "== $ran fuzz targets run for $fuzztime each"
if [[ ${#failed[@]} -gt 0 ]]; then
	printf 'FAIL: %s\n' "${failed[@]}" >&2
	exit 1
fi
