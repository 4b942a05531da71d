#!/bin/sh
# bench-compare.sh [BASE] [COUNT]: runs the canary benchmarks of this tree
# and of the detector at git revision BASE (default ec72c99, before the
# encodings of issue 13.4) on the same data, alternately, COUNT rounds
# (default 3), one core each. On a shared machine only ratios measured in
# the same run mean anything. Run from the repository root:
#   sh canary/testdata/bench-compare.sh
set -eu
base=${1:-ec72c99}
count=${2:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The old package with today's go.mod and benchmark file (bench_test.go
# uses only NewSet, Find and the Minter); its own tests are left out.
git archive "$base" canary | tar -x -C "$tmp"
cp go.mod go.sum "$tmp"/
rm -f "$tmp"/canary/*_test.go
cp canary/bench_test.go "$tmp"/canary/
go test -c -o "$tmp/new.test" ./canary
(cd "$tmp" && go test -c -o "$tmp/old.test" ./canary)
for i in $(seq "$count"); do
	for v in old new; do
		printf '%s ' "$v"
		(cd canary && GOMAXPROCS=1 "$tmp/$v.test" -test.run X -test.bench 'BenchmarkFind(|Text|Mixed)$' -test.benchtime 4x) |
			awk '/^Benchmark/ {printf "%s %s MB/s %s MB/cpu-s  ", $1, $5, $7} END {print ""}'
	done
done
