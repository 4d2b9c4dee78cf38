// Errand's content-script loader. It holds no page logic: it loads the Rust
// crate — the WebAssembly build, or the plain-JavaScript build of the same
// crate when the page's CSP refuses WebAssembly — and relays the service
// worker's `page` commands to it.
(() => {
  // The isolated world's global: the page cannot see or set it.
  if (globalThis.__errandLoader) return;
  globalThis.__errandLoader = true;

  const url = (path) => chrome.runtime.getURL(`extension/pkg/${path}`);

  const crate = (async () => {
    try {
      const wasm = await import(url('wasm/errand_page.js'));
      await wasm.default({ module_or_path: url('wasm/errand_page_bg.wasm') });
      return wasm;
    } catch (refused) {
      // A CSP without 'wasm-unsafe-eval' makes every WebAssembly compile
      // path throw here; the JS build runs the same Rust code.
      const js = await import(url('js/errand_page.js'));
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
