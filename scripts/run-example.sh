#!/usr/bin/env bash
# make run: builds the example module (GOWORK=off, as make test does) into
# the binary given first, saying every 5 s that it is still compiling (a
# first build downloads and compiles the dependencies: a minute or more
# of silence otherwise), then runs it with the remaining arguments.
#
#   GO   the go command (default: go)
#   scripts/run-example.sh BINARY [example flags...]
set -euo pipefail

bin=$1
shift
[[ $bin == /* ]] || bin=$PWD/$bin
cd "$(dirname "$0")/.."

echo "building the example: the first build downloads and compiles its dependencies (a minute or two); later ones take seconds"
start=$SECONDS
GOWORK=off "${GO:-go}" -C example build -o "$bin" . &
build=$!
# Ctrl-C reaches the build too (same process group); TERM may not.
trap 'kill "$build" 2>/dev/null; exit 130' INT TERM
next=5
while kill -0 "$build" 2>/dev/null; do
	sleep 1
	if ((SECONDS - start >= next)) && kill -0 "$build" 2>/dev/null; then
		echo "still compiling ($((SECONDS - start)) s)..."
		next=$((next + 5))
	fi
done
wait "$build" # its exit status: set -e stops here if the build failed
trap - INT TERM
echo "built in $((SECONDS - start)) s; starting the example"
exec "$bin" "$@"
