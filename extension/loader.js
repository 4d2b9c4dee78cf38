// Errand's content-script loader. It holds no page logic: it loads the Rust
// crate — the WebAssembly build, or the plain-JavaScript build of the same
// crate when the page's CSP refuses WebAssembly — and relays the service
// worker's `page` commands to it.
(() => {
  // The isolated world's global: the page cannot see or set it.
  if (globalThis.__errandLoader) return;
  globalThis.__errandLoader = true;

  const url = (path) => chrome.runtime.getURL(`extension/pkg/${path}`);
  // When each loading step ended (performance.now()), for the load benchmark
  // (tests/examples/bench_load.rs); in the isolated world, unseen by the page.
  const times = (globalThis.__errandLoadTimes = { start: performance.now() });
  const mark = (step) => { times[step] = performance.now(); };

  const crate = (async () => {
    try {
      const wasm = await import(url('wasm/errand_page.js'));
      mark('wasm_glue');
      await wasm.default({ module_or_path: url('wasm/errand_page_bg.wasm') });
      mark('wasm_ready');
      return wasm;
    } catch (refused) {
      mark('wasm_refused');
      // A CSP without 'wasm-unsafe-eval' makes every WebAssembly compile
      // path throw here; the JS build runs the same Rust code.
      const js = await import(url('js/errand_page.js'));
      mark('js_ready');
      return js;
    }
  })();

  chrome.runtime.onMessage.addListener((message, sender, reply) => {
    // Only the extension itself may talk to the content script: the service
    // worker's `page` commands, and the `frame` messages it relays from the
    // content script of a parent frame (extension/src/frames.rs).
    if (sender.id !== chrome.runtime.id || sender.tab) return false;
    const handler = { page: 'handle', frame: 'handle_frame' }[message?.kind];
    if (!handler) return false;
    crate
      .then((errand) => errand[handler](JSON.stringify(message)))
      .then((text) => reply({ ok: JSON.parse(text) }))
      .catch((e) => reply({ failed: String(e?.message ?? e) }));
    return true; // the reply comes asynchronously
  });
})();
