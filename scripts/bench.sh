#!/usr/bin/env bash
# Runs every benchmark of BENCHMARKS.md in turn, each against its reference
# in the same Chromium run, and leaves the figures in target/bench/:
#   observe.{json,png} + the table on stdout  page observation vs browser-use's buildDomTree.js
#   messaging.{json,md}                       side panel ↔ host round trips vs CDP
#   actions.{json,md}                         action latency vs browser-use's Playwright calls
#   miniwob.{json,md}                         MiniWoB++ through the whole pipeline
# Usage: scripts/bench.sh [--quick] [observe] [messaging] [actions] [miniwob]
#   (no names: all four; --quick: a few corpus pages and one MiniWoB seed)
# Needs what the test suite needs (scripts/test.sh installs it) plus, the
# first time, the network to PyPI and npm: browser-use's wheel and
# matplotlib into .tools/pip and .tools/py, playwright-core into
# .tools/playwright (none of it committed).
set -euo pipefail
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cd "$(dirname "$0")/.."

quick=
which=()
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    observe|messaging|actions|miniwob) which+=("$arg") ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done
[ ${#which[@]} -gt 0 ] || which=(observe messaging actions miniwob)

echo "== building the extension and the host"
scripts/build-extension.sh
cargo build --locked -p errand-host
mkdir -p target/bench
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "cores: $(nproc)"
  echo "chromium: $(${ERRAND_CHROMIUM:-chromium} --version 2>/dev/null || echo unknown)"
} > target/bench/machine.txt
cat target/bench/machine.txt

for b in "${which[@]}"; do
  echo "== benchmark: $b"
  case "$b" in
    observe)
      cargo run --locked -p errand-e2e --example bench_observe -- ${quick:+--quick} | tee target/bench/observe.md ;;
    messaging)
      cargo run --locked -p errand-e2e --example bench_messaging ;;
    actions)
      cargo run --locked -p errand-e2e --example bench_actions ;;
    miniwob)
      cargo run --locked -p errand-e2e --example miniwob -- ${quick:+--seeds 1} ;;
  esac
done
echo "== figures in target/bench/ (machine.txt says where they were taken)"
