#!/usr/bin/env bash
# Runs Errand's whole test suite: unit tests of every crate and the
# end-to-end suite in real headless Chromium. Installs what is missing first
# (Chromium from apt, the wasm toolchain, wasm-bindgen-cli, binaryen).
set -euo pipefail
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"  # cargo-installed tools
cd "$(dirname "$0")/.."

# On CI every build is a first build: incremental compilation's caches would
# only take disk (about 1 GB of target/debug) and time.
if [ "${CI:-}" = true ]; then export CARGO_INCREMENTAL=0; fi

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=
apt_install() {
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! command -v chromium >/dev/null && [ -z "${ERRAND_CHROMIUM:-}" ]; then
  echo "== installing Chromium from apt"
  apt_install chromium
fi
if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "== installing pip from apt (the MiniWoB++ pages come from PyPI)"
  apt_install python3-pip
fi
# The MCP tests' client: the official `mcp` package from PyPI, pinned, in a
# venv of its own (tests/tests/mcp.rs runs tests/mcp/driver.py with it).
MCP_VERSION=2.3.0
MCP_VENV=target/mcp-venv
if ! "$MCP_VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
  echo "== installing the MCP client for the tests (mcp==$MCP_VERSION from PyPI)"
  python3 -m venv "$MCP_VENV" 2>/dev/null || { apt_install python3-venv; python3 -m venv "$MCP_VENV"; }
  "$MCP_VENV/bin/python" -m pip install --quiet "mcp==$MCP_VERSION"
fi
if ! command -v npm >/dev/null; then
  echo "== installing Node.js and npm from apt (for binaryen and the fixture apps)"
  apt_install nodejs npm
fi

APPS=tests/fixtures/apps
if [ ! -f "$APPS/node_modules/.package-lock.json" ] || [ "$APPS/package.json" -nt "$APPS/node_modules/.package-lock.json" ]; then
  echo "== installing the fixture apps (real React, Vue, jQuery UI from npm)"
  npm install --prefix "$APPS" --no-audit --no-fund --loglevel=error
fi
# The React widget fixtures (react-select, MUI, antd) and the Lit TodoMVC have no browser build:
# bundled with esbuild, again when a source or package.json is newer.
STAMP="$APPS/bundles/.stamp"
if [ ! -f "$STAMP" ] || [ "$APPS/package.json" -nt "$STAMP" ] || [ "$APPS/build.mjs" -nt "$STAMP" ] \
  || [ -n "$(find tests/fixtures/widgets/src tests/fixtures/todomvc/src -newer "$STAMP" -type f 2>/dev/null | head -1)" ]; then
  echo "== bundling the React widget fixtures (esbuild)"
  node "$APPS/build.mjs"
fi

echo "== building the extension (the content script's WASM and JS builds, the worker build)"
scripts/build-extension.sh

echo "== building the host"
cargo build --locked -p errand-host

echo "== running the tests"
cargo test --locked --workspace -- --test-threads=2

# ---- fuzzing: a short run of every fuzz target (scripts/fuzz.sh) ----
# ERRAND_FUZZ_SECONDS per target (default 15; 0 skips). Installs cargo-fuzz
# when missing (about a minute) and builds the fuzz crate (a few minutes);
# new inputs found go to a temporary folder, not fuzz/corpus/.
fuzz_secs="${ERRAND_FUZZ_SECONDS:-15}"
if [ "$fuzz_secs" != 0 ]; then
  echo "== fuzzing the decoders and parsers ($fuzz_secs s per target)"
  # The random clobbering pages ran with the suite (tests/tests/clobbering.rs).
  FUZZ_SCRATCH=1 FUZZ_PAGES=0 scripts/fuzz.sh "$fuzz_secs"
fi
