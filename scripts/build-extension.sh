#!/usr/bin/env bash
# Builds the crate `errand-page` three times into extension/pkg/:
#   wasm/   — the content script, WebAssembly: wasm-bindgen --target web,
#             then wasm-opt -Oz;
#   js/     — the content script in plain JavaScript for pages whose CSP
#             refuses WebAssembly: an MVP wasm build (-Ctarget-cpu=mvp,
#             -Zbuild-std, --cfg errand_js), wasm-bindgen --target bundler,
#             wasm-opt -Oz, then wasm2js and esbuild --minify; no .wasm is
#             left;
#   worker/ — what the service worker and the side panel load (WebAssembly,
#             like wasm/, with the feature `worker`: the protocol helpers
#             `envelope`/`check`, `ChunkJoiner`, the request tracker, the
#             frame router). The two content-script builds leave that out
#             (`--no-default-features`): it is the serde code of every
#             message kind, about half of the module.
# Installs what is missing (wasm32 target, rust-src, wasm-bindgen-cli of the
# version in Cargo.lock, npm's binaryen and esbuild under .tools/), each only
# when needed.
# Then assembles the extension the browser loads, dist/extension/: only
# manifest.json, the JS around the crate (loader, service worker, panel) and
# the two builds, in the same layout (so the manifest and the fixed `key`, hence
# the extension id, stay as they are); and dist/errand-extension.zip of it.
# `--dist` only re-assembles dist/ from extension/ and the builds already in
# extension/pkg/ (after editing the JS or the manifest).
# Runs from any directory; incremental (cargo) and idempotent.
set -euo pipefail
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"  # cargo-installed tools

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

BINARYEN_WANTED=132
CRATE=errand_page
PKG=extension/pkg

log() { printf '==> %s\n' "$*" >&2; }

DIST_ONLY=
if [[ "${1:-}" == --dist ]]; then DIST_ONLY=1; fi

if [[ -z "$DIST_ONLY" ]]; then
# ---- Tools -----------------------------------------------------------------

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
if ! rustup component list --installed | grep -q '^rust-src'; then
  log "adding the rust-src component (for -Zbuild-std)"
  rustup component add rust-src
fi

# wasm-bindgen-cli must equal the wasm-bindgen crate in Cargo.lock.
BINDGEN_VERSION="$(awk '
  /^\[\[package\]\]/ { name = "" }
  /^name = "wasm-bindgen"$/ { name = "wasm-bindgen" }
  name == "wasm-bindgen" && /^version = / { gsub(/"/, "", $3); print $3; exit }
' Cargo.lock)"
if [[ -z "$BINDGEN_VERSION" ]]; then
  echo "error: no wasm-bindgen in Cargo.lock (run cargo generate-lockfile)" >&2
  exit 1
fi
if [[ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $BINDGEN_VERSION" ]]; then
  log "installing wasm-bindgen-cli $BINDGEN_VERSION (takes several minutes)"
  # Not --locked: its lockfile pins a crate version the registry may lack.
  cargo install wasm-bindgen-cli --version "$BINDGEN_VERSION"
fi

# binaryen from npm (Debian's wasm-opt corrupts wasm-bindgen's output).
WASM_OPT="$ROOT/.tools/node_modules/.bin/wasm-opt"
WASM2JS="$ROOT/.tools/node_modules/.bin/wasm2js"
if [[ ! -x "$WASM_OPT" || ! -x "$WASM2JS" ]]; then
  version="$(npm view binaryen versions --json | node -e '
    const wanted = Number(process.argv[1]);
    const all = JSON.parse(require("fs").readFileSync(0, "utf8"))
      .filter((v) => /^\d+\.\d+\.\d+$/.test(v));
    const pick = all.includes(`${wanted}.0.0`) ? `${wanted}.0.0` : all[all.length - 1];
    process.stdout.write(pick);
  ' "$BINARYEN_WANTED")"
  log "installing binaryen $version from npm into .tools/"
  mkdir -p .tools
  npm install --prefix .tools "binaryen@$version" --no-audit --no-fund >&2
fi

# esbuild from npm minifies the JS build (the version the fixture apps use,
# tests/fixtures/apps/package.json).
ESBUILD_VERSION=0.28.2
ESBUILD="$ROOT/.tools/node_modules/.bin/esbuild"
if [[ "$("$ESBUILD" --version 2>/dev/null || true)" != "$ESBUILD_VERSION" ]]; then
  log "installing esbuild $ESBUILD_VERSION from npm into .tools/"
  mkdir -p .tools
  npm install --prefix .tools "esbuild@$ESBUILD_VERSION" --save-exact --no-audit --no-fund >&2
fi

# ---- WASM builds ------------------------------------------------------------

# wasm_build FEATURE_ARGS OUT: one WebAssembly build of the crate into $PKG/OUT.
# Both WebAssembly builds build std themselves (-Zbuild-std, into their own
# target/wasm-std, one std for the two): std then takes the profile's
# opt-level "z" and panic strategy "immediate-abort" (-Zpanic-immediate-abort:
# a panic traps at once, without formatting a message nobody would see), and
# -Zlocation-detail=none leaves out the panics' file/line strings. 6% of the
# content script gzipped, for one more std compile (see BENCHMARKS.md).
WASM_TARGET_DIR=target/wasm-std
# The module's stack: 2 MB (Rust's wasm32 default is 1 MB). The walk
# recurses once per level of elements, at most `walk::MAX_DEPTH` (512) deep,
# about 1.5 KB a level: a page nested 700 deep overflowed 1 MB, and the
# crate was broken for that page (tests/tests/observe.rs,
# `a_page_nested_deeper_than_a_parser_nests_is_observed`). Untouched stack
# costs no memory.
STACK_FLAGS="-Clink-arg=-zstack-size=2097152"
wasm_build() {
  local features="$1" out="$2"
  # opt-level "z" for these builds only: 12% smaller than "s" (see
  # BENCHMARKS.md); the JS build keeps "s" (its JavaScript is parsed, not
  # compiled ahead).
  # shellcheck disable=SC2086
  RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Zlocation-detail=none $STACK_FLAGS" \
    CARGO_PROFILE_WASM_OPT_LEVEL=z CARGO_PROFILE_WASM_PANIC=immediate-abort \
    cargo build -Zpanic-immediate-abort -p errand-page --target wasm32-unknown-unknown \
    --profile wasm $features -Zbuild-std=std,panic_abort --target-dir "$WASM_TARGET_DIR"
  rm -rf "$PKG/$out"
  wasm-bindgen --target web --no-typescript --out-dir "$PKG/$out" \
    "$WASM_TARGET_DIR/wasm32-unknown-unknown/wasm/$CRATE.wasm"
  # Rust's wasm32 target enables these features by default; wasm-opt must
  # accept them, and may keep using them. --low-memory-unused: the lowest
  # 1 KB of memory is the far end of the stack (rustc puts the 1 MB stack
  # first), never an object's address, so binaryen may fold constant
  # offsets into loads and stores (0.7% smaller).
  # --no-inline: binaryen inlines a function with one caller whatever rustc
  # was told; the element description stays out of the visit of every
  # element (see `Walk::describe`). A pattern that names no function does
  # nothing, silently: the function's name is checked first (wasm-bindgen
  # keeps the name section binaryen matches against). -Oz twice: the second
  # pipeline finds what the first one's inlining and merging left (0.1%
  # gzipped, ~7 s).
  if ! grep -aq 'Walk>::describe' "$PKG/$out/${CRATE}_bg.wasm"; then
    echo "error: no function Walk::describe in the module: update wasm-opt's --no-inline pattern" >&2
    exit 1
  fi
  "$WASM_OPT" --no-inline='*Walk>::describe' -Oz -Oz --low-memory-unused \
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$PKG/$out/${CRATE}_bg.wasm" -o "$PKG/$out/${CRATE}_bg.wasm"
}
# minify FILE: esbuild --minify in place (ES module: the exports keep their
# names). wasm-bindgen's glue is indented, commented JavaScript that every
# page imports before it can fetch the module: minified, less than half.
# wasm-bindgen lists a snippet module (proto.rs's readers) once per import
# in the glue's imports object: the same key with the same value, which
# esbuild would warn about on every build.
minify() {
  "$ESBUILD" "$1" --minify --format=esm --log-level=warning \
    --log-override:duplicate-object-key=silent --outfile="$1.min"
  mv "$1.min" "$1"
}
log "WASM build for the service worker and the panel"
wasm_build "" worker
# Last, so that target/wasm-std/.../errand_page.wasm (names kept) is the content script's.
log "WASM build of the content script"
wasm_build --no-default-features wasm
minify "$PKG/wasm/$CRATE.js"
# The names the module and its glue agree on (343 imports like
# `__wbg_getAttribute_<16 hex digits>`, the closures' exports), shortened in
# both: 5.9 KB of the gzipped module, 4.5 KB of the glue (BENCHMARKS.md). The
# exports the glue's own functions wrap keep their names.
node scripts/minify-wasm-names.mjs "$PKG/wasm/${CRATE}_bg.wasm" "$PKG/wasm/$CRATE.js" \
  memory build handle handle_frame prepare
# The same glue, its snippet (proto.rs's readers) bundled in, as a classic
# script the manifest declares with the loader (`errandWasm` in the isolated
# world): no module to import, and no second one it imports, when the crate
# loads (an import of an extension file from a content script took 27 ms,
# BENCHMARKS.md). The loader still imports the ES module where the classic
# script is missing. The glue's default path (`import.meta.url`) is never
# used: the loader hands it the compiled module.
"$ESBUILD" "$PKG/wasm/$CRATE.js" --bundle --minify --format=iife --global-name=errandWasm \
  --log-level=warning --log-override:empty-import-meta=silent --log-override:duplicate-object-key=silent \
  --outfile="$PKG/wasm/$CRATE.classic.js"

# ---- JS build ----------------------------------------------------------------

log "JS build (MVP wasm with build-std, then wasm2js)"
# -Zlocation-detail=none: panics carry no file/line/column strings (22 KB less
# JavaScript); a panic still aborts the same way.
# -Zpanic-immediate-abort (the profile's panic strategy "immediate-abort",
# for std too): a panic traps at once, without formatting its message
# (nothing would show it: wasm32-unknown-unknown has no stderr).
RUSTC_BOOTSTRAP=1 RUSTFLAGS="-Ctarget-cpu=mvp --cfg errand_js -Zlocation-detail=none $STACK_FLAGS" \
  CARGO_PROFILE_WASM_PANIC=immediate-abort \
  cargo build -Zpanic-immediate-abort -p errand-page --target wasm32-unknown-unknown --profile wasm \
  --no-default-features -Zbuild-std=std,panic_abort --target-dir target/js
rm -rf "$PKG/js"
wasm-bindgen --target bundler --no-typescript --out-dir "$PKG/js" \
  "target/js/wasm32-unknown-unknown/wasm/$CRATE.wasm"
# Shrinking the MVP module first makes the JavaScript about a fifth smaller.
# No function is inlined into its one caller (binaryen's default inlines
# every such function, whatever its size): V8 never optimizes a JavaScript
# function whose bytecode is over 60 KB, and the observation's entry point
# had become one 2 MB function, run unoptimized — most pages whose CSP
# refuses WebAssembly took 1.2–1.7x as long, a re-observation up to 2x.
NO_ONE_CALLER_INLINING="--one-caller-inline-max-function-size 0"
"$WASM_OPT" -Oz $NO_ONE_CALLER_INLINING "$PKG/js/${CRATE}_bg.wasm" -o "$PKG/js/${CRATE}_bg.wasm"
"$WASM2JS" "$PKG/js/${CRATE}_bg.wasm" -O2 $NO_ONE_CALLER_INLINING -o "$PKG/js/${CRATE}_bg.wasm.js"
# wasm2js grows memory by copying it into a new ArrayBuffer of exactly the
# new size, and Rust's allocator grows it a few pages at a time: a first
# observation grew it tens of times, each a copy of megabytes (16 ms of a
# cold observation in V8's profile). The memory's size is kept apart from
# its buffer, which at least doubles when it must grow (what lies past the
# size is zeros nobody has written, as fresh pages must be).
perl -0pi -e '
  s/(\n\s*var buffer = new ArrayBuffer\(\d+\);)/$1\n var memoryPages = buffer.byteLength >> 16;/ or die "no buffer\n";
  s/function __wasm_memory_size\(\) \{\s*return buffer\.byteLength >> 16;\s*\}/function __wasm_memory_size() {\n  return memoryPages;\n }/ or die "no memory_size\n";
  s/(function __wasm_memory_grow\(pagesToAdd\) \{.*?if \(\(oldPages < newPages\) && \(newPages < 65536\)\) \{)\s*var newBuffer = new ArrayBuffer\(newPages << 16\);(.*?bufferView = HEAPU8;)/$1\n   memoryPages = newPages;\n   if (newPages > buffer.byteLength >> 16) {\n   var newBuffer = new ArrayBuffer(Math_min(65535, Math_max(newPages, 2 * (buffer.byteLength >> 16), 64)) << 16);$2\n   }/s or die "no memory_grow\n";
' "$PKG/js/${CRATE}_bg.wasm.js"
# The data segments (about 40 KB) are base64 that wasm2js decodes in a
# JavaScript loop when the module is imported, run cold: decoded by the
# browser's own Uint8Array.fromBase64 where there is one (not in Node).
perl -0pi -e '
  s/(function base64DecodeToExistingUint8Array\(uint8Array, offset, b64\) \{)/$1\n    if (Uint8Array.fromBase64) { uint8Array.set(Uint8Array.fromBase64(b64), offset); return; }/ or die "no base64 decoder\n";
' "$PKG/js/${CRATE}_bg.wasm.js"
# wasm2js writes indented, readable JavaScript (a quarter of it leading
# spaces, long local names): minified, it is a third of the size (less to
# fetch and parse); the functions stay the same functions.
"$ESBUILD" "$PKG/js/${CRATE}_bg.wasm.js" --minify --format=esm --log-level=warning \
  --outfile="$PKG/js/${CRATE}_bg.min.js"
mv "$PKG/js/${CRATE}_bg.min.js" "$PKG/js/${CRATE}_bg.wasm.js"
# Point the glue at the JavaScript module instead of the .wasm file.
sed -i "s#\(from ['\"]\./${CRATE}_bg\.wasm\)\(['\"]\)#\1.js\2#" "$PKG/js/$CRATE.js"
if grep -q "${CRATE}_bg\.wasm['\"]" "$PKG/js/$CRATE.js"; then
  echo "error: the JS glue still imports ${CRATE}_bg.wasm" >&2
  exit 1
fi
rm -f "$PKG/js/${CRATE}_bg.wasm"
# wasm2js grows memory by swapping in a new, larger ArrayBuffer and leaves
# the old one intact (not detached), so the glue's "is my cached view
# stale?" tests (byteLength === 0, buffer.detached) never fire and it would
# go on reading and writing the old buffer once memory grows. Compare the
# buffers themselves instead.
GLUE_BG="$PKG/js/${CRATE}_bg.js"
perl -0pi -e 's/if \((cached\w+Memory0) === null \|\|[^{]*\) \{/if ($1 === null || $1.buffer !== wasm.memory.buffer) {/g' "$GLUE_BG"
views="$(grep -c 'Memory0 === null ||' "$GLUE_BG" || true)"
patched="$(grep -c 'Memory0.buffer !== wasm.memory.buffer) {' "$GLUE_BG" || true)"
if [[ "$views" == 0 || "$views" != "$patched" ]]; then
  echo "error: could not patch the JS glue's memory views ($patched of $views)" >&2
  exit 1
fi
minify "$GLUE_BG"
# V8's explicit compile hint (Chromium 136 and later): every function of the
# JS build compiled when the module is imported, where V8 would compile each
# one lazily at its first call — during the first walk, on the task's
# critical path. The import took 3-6 ms more, a fresh tab's first observation
# 12-52 ms less, 29 at the median of five pairs (BENCHMARKS.md, issue 24's
# seventh round). esbuild drops the
# comment: it goes in after it.
compile_eagerly() {
  { printf '//# allFunctionsCalledOnLoad\n'; cat "$1"; } >"$1.tmp"
  mv "$1.tmp" "$1"
}
compile_eagerly "$PKG/js/${CRATE}_bg.wasm.js"
compile_eagerly "$GLUE_BG"

# ---- Smoke test ------------------------------------------------------------------
# The three builds must load (in Node) and answer; a large message makes the
# memory grow, which the JS build's glue must follow.

SMOKE="$(mktemp -d)"
trap 'rm -rf "$SMOKE"' EXIT
cp -r "$PKG/wasm" "$PKG/js" "$PKG/worker" "$SMOKE/"
echo '{"type":"module"}' >"$SMOKE/package.json"
cat >"$SMOKE/smoke.js" <<'JS'
import { readFileSync } from "node:fs";
const dir = new URL(".", import.meta.url);
const load = async (name) => {
  const m = await import(new URL(`${name}/errand_page.js`, dir));
  m.initSync({ module: readFileSync(new URL(`${name}/errand_page_bg.wasm`, dir)) });
  return m;
};
const wasm = await load("wasm");
const worker = await load("worker");
// The classic-script glue the manifest declares: the same exports, on the
// global `errandWasm`, its snippet bundled in.
const classic = (await import("node:vm")).runInThisContext(
  readFileSync(new URL("wasm/errand_page.classic.js", dir), "utf8") + ";errandWasm");
classic.initSync({ module: readFileSync(new URL("wasm/errand_page_bg.wasm", dir)) });
if (classic.build() !== "wasm") throw new Error(`classic glue: build() says ${classic.build()}`);
const refused = await classic.handle({ v: 1, id: 3, kind: "get_status" });
if (refused.code !== "not_allowed") throw new Error(`classic glue: handle() gave ${JSON.stringify(refused)}`);
const js = await import(new URL("js/errand_page.js", dir));
const big = "x".repeat(3_000_000);
for (const [name, m] of [["wasm", wasm], ["js", js]]) {
  const fail = (what) => { throw new Error(`${name} build: ${what}`); };
  if (m.build() !== name) fail(`build() says ${m.build()}`);
  if (m.envelope || m.check || m.ChunkJoiner) fail("has the worker's exports");
  // handle() takes the message object and answers with an object.
  const reply = await m.handle({ v: 1, id: 3, kind: "get_status" });
  if (reply.code !== "not_allowed" || reply.re !== 3) fail(`handle() gave ${JSON.stringify(reply)}`);
  // A `page` message's command comes as the worker's page_command() wrote it.
  const bad = await m.handle({ v: 1, id: 4, kind: "page", tab_id: 1, wire: "!" + big });
  if (bad.code !== "bad_message" || !bad.message.includes("base64")) fail(`handle() gave ${JSON.stringify(bad).slice(0, 200)}`);
  const bare = await m.handle({ v: 1, id: 5, kind: "page", tab_id: 1, command: { op: "cleanup" } });
  if (bare.code !== "bad_message" || !bare.message.includes("wire")) fail(`handle() gave ${JSON.stringify(bare)}`);
}
{
  const m = worker;
  const fail = (what) => { throw new Error(`worker build: ${what}`); };
  const ack = m.envelope(1, 2, "ack", "{}");
  if (ack !== '{"v":1,"id":1,"re":2,"kind":"ack"}') fail(`envelope() gave ${ack}`);
  let threw = false;
  try { m.check("[]"); } catch { threw = true; }
  if (!threw) fail("check('[]') did not throw");
  if (!m.envelope(4, undefined, "start_task", JSON.stringify({ task: big })).endsWith('x"}')) {
    fail("a large envelope came back wrong");
  }
  const page = (command) => JSON.stringify({ v: 1, id: 4, kind: "page", tab_id: 1, command });
  let why = "";
  try { m.page_command(page({ op: "dance" + big })); } catch (e) { why = String(e?.message ?? e); }
  if (!why.includes("dance")) fail(`page_command() of a bad command: ${why.slice(0, 200)}`);
  const wire = m.page_command(page({ op: "act", action: { fill: { index: 2, text: big } } }));
  if (typeof wire !== "string" || wire.length < 4_000_000) fail("page_command() wrote a short command");
}
JS
node "$SMOKE/smoke.js"
log "smoke test passed: the three builds load and answer"
fi

# ---- dist/extension: what the browser loads -----------------------------------
# Never the repository root: the browser would see target/, node_modules/ and
# the sources. Built next to it and swapped in whole.

DIST=dist/extension
log "assembling $DIST"
rm -rf "$DIST.new"
mkdir -p "$DIST.new/extension/pkg"
cp manifest.json "$DIST.new/"
cp extension/*.js "$DIST.new/extension/"
cp -r extension/panel "$DIST.new/extension/"
cp -r extension/generated "$DIST.new/extension/"
cp -r "$PKG/wasm" "$PKG/js" "$PKG/worker" "$DIST.new/extension/pkg/"
stray="$(find "$DIST.new" \( -name '*.rs' -o -name 'Cargo.*' -o -name node_modules -o -name target \) -print)"
if [[ -n "$stray" ]]; then
  echo "error: $DIST would hold $stray" >&2
  exit 1
fi
rm -rf "$DIST"
mv "$DIST.new" "$DIST"
rm -f dist/errand-extension.zip
if command -v zip >/dev/null; then
  (cd "$DIST" && zip -qr -X ../errand-extension.zip .)
  log "dist/errand-extension.zip: $(wc -c <dist/errand-extension.zip) bytes"
fi

# ---- Sizes ---------------------------------------------------------------------

log "sizes (bytes, gzip -9 in brackets)"
for f in "$PKG"/wasm/* "$PKG"/js/* "$PKG"/worker/* "$PKG"/*/snippets/*/*; do
  [[ -f "$f" ]] || continue
  printf '  %-45s %8d  (%d)\n' "$f" "$(wc -c <"$f")" "$(gzip -9c "$f" | wc -c)"
done
