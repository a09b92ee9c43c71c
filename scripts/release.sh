#!/usr/bin/env bash
# Tags a release of every module of the repository, locally:
#
#   scripts/release.sh [-n] vX.Y.Z
#
#   -n  dry run: checks what it can and prints every step, changes nothing
#
# 1. Refuses a malformed version (vMAJOR.MINOR.PATCH, an optional
#    -prerelease), a dirty work tree, and a version already tagged.
# 2. Makes every nested module (the Makefile's MODULES but ".") require
#    the root module, and every nested module of this repository it
#    requires, at vX.Y.Z. The replace directives stay: they point at the
#    folders, for development, and a module's replace directives are
#    ignored when it is a dependency, so users get vX.Y.Z.
# 3. Runs the whole suite (make test, every module), then commits the
#    go.mod and go.sum files it changed.
# 4. Creates the tags: vX.Y.Z for the root, <folder>/vX.Y.Z for each
#    nested module (middleware/echo/vX.Y.Z, ...), the form the go command
#    resolves for a module in a subfolder. Nothing is pushed: it prints
#    the git push command to run once the tags have been reviewed.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
root=github.com/worksteal/worksteal

dry=
if [[ ${1:-} == -n ]]; then
	dry=1
	shift
fi
if [[ $# -ne 1 ]]; then
	echo "usage: scripts/release.sh [-n] vX.Y.Z" >&2
	exit 2
fi
version=$1
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
if [[ ! $version =~ $semver ]]; then
	echo "release: $version is not a version: want vMAJOR.MINOR.PATCH, with an optional -prerelease (v1.2.3, v1.0.0-rc.1)" >&2
	exit 2
fi
if [[ ${BASH_REMATCH[1]} -ge 2 ]]; then
	echo "release: $version needs /v${BASH_REMATCH[1]} at the end of every module path (Go's semantic import versioning) first" >&2
	exit 2
fi

# step prints a command, and runs it unless this is a dry run.
step() {
	printf '+'
	printf ' %q' "$@"
	printf '\n'
	if [[ -z $dry ]]; then
		"$@"
	fi
}

# refuse stops a real run; a dry run reports it and goes on, so that the
# whole plan shows.
refuse() {
	if [[ -n $dry ]]; then
		echo "release: a real run would stop here: $*" >&2
	else
		echo "release: $*" >&2
		exit 1
	fi
}

read -r -a modules <<<"$(make -s --no-print-directory modules | tr '\n' ' ')"

if [[ -n $(git status --porcelain) ]]; then
	refuse "the work tree is dirty (git status): commit or remove the changes first"
fi

tags=()
for m in "${modules[@]}"; do
	if [[ $m == . ]]; then
		tags+=("$version")
	else
		tags+=("$m/$version")
	fi
done
for tag in "${tags[@]}"; do
	if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
		refuse "tag $tag exists already"
	fi
done

# Every nested module requires the root, and the nested modules of this
# repository it already requires, at the new version.
changed=()
for m in "${modules[@]}"; do
	[[ $m == . ]] && continue
	# The requirements of this repository's modules: "path version"
	# lines, in a require block or not (a replace has no version).
	deps=$(sed -nE 's#^(require[[:space:]]+)?[[:space:]]*('"$root"'(/[^[:space:]]+)?)[[:space:]]+v[^[:space:]]+.*#\2#p' "$m/go.mod" | sort -u)
	for dep in $deps; do
		step "$GO" -C "$m" mod edit -require="$dep@$version"
	done
	step env GOWORK=off "$GO" -C "$m" mod tidy
	changed+=("$m/go.mod" "$m/go.sum")
done

if [[ -z $dry ]]; then
	trap 'echo "release: stopped; the go.mod and go.sum edits stay in the tree (git diff; git restore -- ${changed[*]} undoes them)" >&2' ERR
fi
step make test

if [[ -n $dry ]] || [[ -n $(git status --porcelain -- "${changed[@]}") ]]; then
	step git commit -m "release $version: the nested modules require $root at $version" -- "${changed[@]}"
fi
for tag in "${tags[@]}"; do
	step git tag -a "$tag" -m "$tag"
done

if [[ -n $dry ]]; then
	echo "release: dry run, nothing changed; a real run would tag ${tags[*]}, then publish with:"
else
	echo "release: tagged ${tags[*]} locally; review them, then publish with:"
fi
echo "  git push origin ${tags[*]}"
