// Errand's content-script loader. It holds no page logic: it loads the Rust
// crate — the WebAssembly build, or the plain-JavaScript build of the same
// crate when the page's CSP refuses WebAssembly — and relays the service
// worker's `page` commands to it.
//
// The manifest declares it in every frame (`document_idle`, the isolated
// world), after the WebAssembly build's glue (`errand_page.classic.js`, a
// classic script that only defines functions), so the crate is usually
// there before a task's first command: the top frame fetches, compiles and
// instantiates the WebAssembly build — or imports the plain-JavaScript
// build when the page's CSP refuses WebAssembly — as soon as this script
// runs (the fetch and compile are off the page's thread; loading runs no
// page logic, and nothing is walked until a command asks). Other frames
// load it only when a command comes. In the top frame of a tab a task drives, the service worker's
// `prepare` loads it at once, as soon as this script runs in a document the
// tab is loading (the crate then walks the page once it has loaded and is
// idle). The service worker still injects this file into a
// document that lacks it (tabs opened before the extension was installed).
(() => {
  // The isolated world's global: the page cannot see or set it.
  if (globalThis.__errandLoader) return;
  globalThis.__errandLoader = true;

  const url = (path) => chrome.runtime.getURL(`extension/pkg/${path}`);
  // When each loading step ended (performance.now()), for the load benchmark
  // (tests/examples/bench_load.rs); in the isolated world, unseen by the page.
  const times = (globalThis.__errandLoadTimes = { start: performance.now() });
  const mark = (step) => { times[step] = performance.now(); };

  // The smallest module (the header alone): compiled at once, or refused
  // at once by a CSP without 'wasm-unsafe-eval', which makes every
  // WebAssembly compile path throw.
  const EMPTY_MODULE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);
  let wasmAllowed = null;
  const wasmRefused = () => {
    if (wasmAllowed === null) {
      try {
        new WebAssembly.Module(EMPTY_MODULE);
        wasmAllowed = true;
      } catch (refused) {
        wasmAllowed = false;
      }
    }
    return !wasmAllowed;
  };
  let wasmTried = null;
  const tryWasm = () => (wasmTried ??= (async () => {
    mark('wasm_start');
    if (wasmRefused()) {
      mark('wasm_refused');
      return null;
    }
    try {
      // The module is fetched and compiled while the glue is imported
      // (should that fail, the glue fetches it again).
      const module = url('wasm/errand_page_bg.wasm');
      const compiled = WebAssembly.compileStreaming(fetch(module)).catch(() => module);
      // The glue came with this script (the manifest declares
      // `errand_page.classic.js`, the same glue as a classic script, before
      // it): nothing to import, which took 27–33 ms. A document this script
      // was injected into without it imports the module.
      const wasm = globalThis.errandWasm ?? await import(url('wasm/errand_page.js'));
      mark('wasm_glue');
      await wasm.default({ module_or_path: await compiled });
      mark('wasm_ready');
      return wasm;
    } catch (refused) {
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
    // At once: a task's first command at `complete` comes about 20 ms after
    // `load` (this script runs just before it ends); fetching, compiling
    // and instantiating the WebAssembly build takes 20–25 ms, importing the
    // JS build about 45. (Waiting for an idle period first made the command
    // wait 13 ms more, BENCHMARKS.md.)
    if (wasmRefused()) load().catch(() => {});
    else tryWasm();
  }

  let prepared = false;
  chrome.runtime.onMessage.addListener((message, sender, reply) => {
    // Only the extension itself may talk to the content script: the service
    // worker's `page` commands, and the `frame` messages it relays from the
    // content script of a parent frame (extension/src/frames.rs).
    if (sender.id !== chrome.runtime.id || sender.tab) return false;
    if (message?.kind === 'prepare') {
      // The service worker's word that a task drives this tab: while it
      // loads (`early`, asked until a document still loading takes it; one
      // that has loaded, which a navigation is leaving, declines), and
      // once it has loaded. The crate loads at once and walks the page
      // when it has loaded and is idle.
      if (window !== window.top) return false;
      const taken = !message.early || document.readyState !== 'complete';
      reply({ taken });
      if (taken && !prepared) {
        prepared = true;
        mark('prepare');
        load().then((errand) => errand.prepare()).catch(() => {});
      }
      return false;
    }
    const handler = { page: 'handle', frame: 'handle_frame' }[message?.kind];
    if (!handler) return false;
    mark('command');
    // The message goes to the crate as the object it is, and its reply
    // (an object, or a frame's reply string) comes back as it is.
    load()
      .then((errand) => errand[handler](message))
      .then((ok) => { mark('reply'); reply({ ok }); })
      .catch((e) => reply({ failed: String(e?.message ?? e) }));
    return true; // the reply comes asynchronously
  });
})();
