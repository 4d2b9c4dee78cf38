#!/usr/bin/env bash
# Builds and installs Errand: the extension (WASM and JS builds of the content
# script), the `errand` host binary, and its registration with Chrome,
# Chromium, Edge and Brave for the current user. Installs what is missing
# first. Ends with `errand doctor`.
set -euo pipefail
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"  # cargo-installed tools
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
  echo "Errand needs Rust: install it from rustup (then run this again)." >&2
  exit 1
fi
if ! command -v npm >/dev/null; then
  echo "== installing Node.js and npm from apt (for binaryen)"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq nodejs npm >/dev/null; fi
fi

echo "== building the extension (WASM and JS builds)"
scripts/build-extension.sh

echo "== building and installing the host"
cargo install --locked --quiet --path native-host
bin="$(command -v errand || echo "${CARGO_HOME:-$HOME/.cargo}/bin/errand")"

echo "== registering the host with your browsers"
"$bin" install

cat <<MSG

Errand is installed. Load the extension once:
  1. open chrome://extensions (or edge://extensions, brave://extensions)
  2. turn on Developer mode
  3. "Load unpacked" and choose this folder: $(pwd)/dist/extension
Then click Errand's toolbar button to open the side panel.

Configure a model in the config file `errand doctor` names below, or pass it on the command line:
  errand run "Find the cheapest flight to Lisbon" --url https://example.com \\
      --base-url https://api.openai.com/v1 --model gpt-4o-mini --api-key "\$OPENAI_API_KEY"

== errand doctor
MSG
"$bin" doctor || true
