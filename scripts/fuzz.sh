#!/usr/bin/env bash
# Fuzzes the code that reads untrusted input (crate `fuzz/`, targets in
# fuzz/fuzz_targets/): the native messaging frame reader (`frames`),
# `Envelope::decode` (`envelope`) and the model answer dialects
# (`answer_json`, `answer_glm`, `answer_browsergym`).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Runs each target (default: all) for SECONDS (default 60), one after
# another, one worker, at the lowest CPU priority, starting from and adding
# to fuzz/corpus/<target>/. An input that takes over 10 s counts as a hang.
# A crash or hang stops the script with an error; its input is left in
# fuzz/artifacts/<target>/ (turn it into a unit test, fix the code, delete
# it). Installs cargo-fuzz from crates.io when it is missing. cargo-fuzz
# passes nightly-only flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain
# take them.
#
# Then, unless FUZZ_PAGES=0, it generates random DOM-clobbering pages for
# SECONDS and has the real extension observe and act on each in headless
# Chromium (`tests/tests/clobbering.rs`; needs the extension and host built:
# scripts/build-extension.sh, cargo build -p errand-host). Name the target
# `pages` to run only that.
#
# FUZZ_CMIN=1 minimises each target's corpus afterwards (`cargo fuzz cmin`).
# FUZZ_SCRATCH=1 reads the corpus but writes new inputs to a temporary
# folder instead, leaving the working tree clean (scripts/test.sh uses it).
set -euo pipefail
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cd "$(dirname "$0")/.."

secs="${1:-60}"
shift || true
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz (crates.io)"
  cargo install --locked cargo-fuzz
fi
export RUSTC_BOOTSTRAP=1

# No sanitizer: the code under test is safe Rust (`unsafe_code` is denied),
# so what we look for are panics, hangs and runaway memory; without
# AddressSanitizer the build is shorter and each run about twice as fast.
opts=(--sanitizer none)
pages="${FUZZ_PAGES:-1}"
if [ "$#" -gt 0 ]; then
  targets=()
  pages=0
  for t in "$@"; do if [ "$t" = pages ]; then pages=1; else targets+=("$t"); fi; done
else
  mapfile -t targets < <(cargo fuzz list)
fi

if [ "${#targets[@]}" -gt 0 ]; then
  # cargo fuzz has no --locked: a lock file behind the crates it builds
  # would be rewritten in the working tree by every run.
  if ! cargo tree --locked --depth 0 --manifest-path fuzz/Cargo.toml >/dev/null; then
    echo "fuzz/Cargo.lock is behind fuzz/Cargo.toml or the crates it uses:" \
      "run \`cargo update --workspace --manifest-path fuzz/Cargo.toml\` and commit it" >&2
    exit 1
  fi
  echo "== building the fuzz targets"
  nice -n 19 cargo fuzz build "${opts[@]}"
fi

scratch=
if [ "${FUZZ_SCRATCH:-0}" = 1 ]; then
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
fi

for t in "${targets[@]+"${targets[@]}"}"; do
  echo "== fuzzing $t for $secs s"
  mkdir -p "fuzz/corpus/$t"
  corpus=()
  if [ -n "$scratch" ]; then
    # libFuzzer writes new inputs into the first folder it is given.
    mkdir -p "$scratch/$t"
    corpus=("$scratch/$t" "fuzz/corpus/$t")
  fi
  nice -n 19 cargo fuzz run "${opts[@]}" "$t" "${corpus[@]}" -- \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1
  if [ "${FUZZ_CMIN:-0}" = 1 ]; then
    echo "== minimising the corpus of $t"
    nice -n 19 cargo fuzz cmin "${opts[@]}" "$t"
  fi
done
if [ "$pages" = 1 ]; then
  echo "== random DOM-clobbering pages in Chromium for $secs s"
  ERRAND_CLOBBER_SECONDS="$secs" nice -n 19 cargo test --locked -p errand-e2e --test clobbering \
    random_clobbering_pages_always_answer -- --nocapture
fi
echo "== fuzzing found nothing"
