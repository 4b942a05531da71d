#!/usr/bin/env bash
# Benchmarks that report ratios against a baseline measured in the same run
# (these machines are shared and noisy: absolute times mean little).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-5}
echo "== whole trace vs two bare docker runs"
go run ./bench/tracebench -bin bin/sandboxctl -n "$N"
echo "== throughput: trivial skills through a warm pool vs sequential cold traces"
go run ./bench/sweepbench -bin bin/sandboxctl -n "${SWEEP_N:-30}"
echo "== sandbox lifecycle vs bare container (orchestrator/docker)"
go test ./orchestrator/docker -run '^$' -bench . -benchtime "${N}x" 2>&1 | grep -E 'Benchmark|ratio' || true
echo "== canary detection throughput (canary)"
go test ./canary -run '^$' -bench BenchmarkFind -benchtime 3x 2>&1 | grep Benchmark || true
echo "== HTTPS interception vs direct (netcapture)"
go test ./netcapture -run '^$' -bench . -benchtime 1x 2>&1 | grep -E 'Benchmark' || true
echo "== strace parser (strace)"
go test ./strace -run '^$' -bench . -benchtime 3x 2>&1 | grep Benchmark || true
