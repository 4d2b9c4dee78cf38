// Errand's content-script loader. It holds no page logic: it loads the Rust
// crate — the WebAssembly build, or the plain-JavaScript build of the same
// crate when the page's CSP refuses WebAssembly — and relays the service
// worker's `page` commands to it.
//
// The manifest declares it in every frame (`document_idle`, the isolated
// world), so the crate is usually there before a task's first command: the
// top frame fetches, compiles and instantiates the WebAssembly build when the
// page is idle (instantiating runs no page logic; nothing is walked until a
// command asks). Other frames, and the plain-JavaScript build (megabytes to
// parse, for pages whose CSP refuses WebAssembly), load only when a command
// comes. The service worker still injects this file into a document that
// lacks it (tabs opened before the extension was installed).
(() => {
  // The isolated world's global: the page cannot see or set it.
  if (globalThis.__errandLoader) return;
  globalThis.__errandLoader = true;

  const url = (path) => chrome.runtime.getURL(`extension/pkg/${path}`);
  // When each loading step ended (performance.now()), for the load benchmark
  // (tests/examples/bench_load.rs); in the isolated world, unseen by the page.
  const times = (globalThis.__errandLoadTimes = { start: performance.now() });
  const mark = (step) => { times[step] = performance.now(); };

  let wasmTried = null;
  const tryWasm = () => (wasmTried ??= (async () => {
    mark('wasm_start');
    try {
      const wasm = await import(url('wasm/errand_page.js'));
      mark('wasm_glue');
      await wasm.default({ module_or_path: url('wasm/errand_page_bg.wasm') });
      mark('wasm_ready');
      return wasm;
    } catch (refused) {
      // A CSP without 'wasm-unsafe-eval' makes every WebAssembly compile
      // path throw here.
      mark('wasm_refused');
      return null;
    }
  })());
  let crate = null;
  const load = () => (crate ??= tryWasm().then(async (wasm) => {
    if (wasm) return wasm;
    // The JS build runs the same Rust code.
    const js = await import(url('js/errand_page.js'));
    mark('js_ready');
    return js;
  }));
  if (window === window.top) {
    requestIdleCallback(() => { tryWasm(); }, { timeout: 2000 });
  }

  chrome.runtime.onMessage.addListener((message, sender, reply) => {
    // Only the extension itself may talk to the content script: the service
    // worker's `page` commands, and the `frame` messages it relays from the
    // content script of a parent frame (extension/src/frames.rs).
    if (sender.id !== chrome.runtime.id || sender.tab) return false;
    const handler = { page: 'handle', frame: 'handle_frame' }[message?.kind];
    if (!handler) return false;
    load()
      .then((errand) => errand[handler](JSON.stringify(message)))
      .then((text) => reply({ ok: JSON.parse(text) }))
      .catch((e) => reply({ failed: String(e?.message ?? e) }));
    return true; // the reply comes asynchronously
  });
})();
