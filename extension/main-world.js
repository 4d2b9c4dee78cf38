// Errand's main-world relay for JavaScript dialogs (manifest.json: world
// MAIN, document_start, every frame). It holds no logic: while Errand's
// content script has armed this document (an `errand:arm` event), `alert`,
// `confirm` and `prompt` return the answer decided before the action instead
// of blocking the page, `beforeunload` asks nothing, and each dialog is
// reported back by an `errand:dialog` event. Unarmed, nothing changes.
// It also tells which file input a control opens (see `errand:chooser`).
// The page can send both events too: see extension/src/dialogs.rs.
(() => {
  const w = window;
  const doc = document;
  const native = { alert: w.alert, confirm: w.confirm, prompt: w.prompt };
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  let armed = null; // {accept: true | false | null, text: string | null}

  doc.addEventListener('errand:arm', (e) => {
    try {
      const a = typeof e.detail === 'string' ? parse(e.detail) : null;
      armed = a && typeof a === 'object' ? a : null;
    } catch {
      armed = null;
    }
  });

  const tell = (kind, message, accepted, text, byDefault) => {
    const detail = stringify({
      kind, message: String(message ?? '').slice(0, 2000), accepted, text, by_default: byDefault,
    });
    doc.dispatchEvent(new CustomEvent('errand:dialog', { detail }));
  };

  const replace = (name, answer) => {
    const original = native[name];
    if (typeof original !== 'function') return;
    w[name] = {
      [name](...args) {
        return armed ? answer(...args) : original.apply(w, args);
      },
    }[name];
  };

  replace('alert', (message) => {
    tell('alert', message, true, null, false);
  });
  replace('confirm', (message) => {
    const accepted = armed.accept === true;
    tell('confirm', message, accepted, null, armed.accept == null);
    return accepted;
  });
  replace('prompt', (message, fallback) => {
    const accepted = armed.accept === true;
    const text = accepted ? String(armed.text ?? fallback ?? '') : null;
    tell('prompt', message, accepted, text, armed.accept == null);
    return text;
  });

  // Which file input a control opens the file chooser of: while Errand
  // asks (`errand:chooser` "on", around one synthetic click for
  // `upload_file`), a file input's `click()` / `showPicker()` opens nothing
  // and names the input with an `errand:chooser` event on it instead.
  let chooser = false;
  doc.addEventListener('errand:chooser', (e) => {
    if (e.target === doc) chooser = e.detail === 'on';
  });
  const inputProto = w.HTMLInputElement?.prototype;
  for (const name of ['click', 'showPicker']) {
    const original = inputProto?.[name];
    if (typeof original !== 'function') continue;
    inputProto[name] = {
      [name](...args) {
        if (chooser && String(this.type).toLowerCase() === 'file') {
          this.dispatchEvent(new CustomEvent('errand:chooser', { bubbles: true, composed: true }));
          return undefined;
        }
        return original.apply(this, args);
      },
    }[name];
  }

  // First listener on the window: while armed, the page's own listeners
  // still run, but cannot ask to stay (no preventDefault, no returnValue,
  // no string returned from `onbeforeunload`).
  w.addEventListener('beforeunload', (e) => {
    if (!armed) return;
    Object.defineProperty(e, 'preventDefault', { value: () => {} });
    Object.defineProperty(e, 'returnValue', { get: () => '', set: () => {} });
    const handler = w.onbeforeunload;
    if (typeof handler === 'function') {
      // Run it here (its return value is dropped) and hide it from the
      // browser for this event; it is put back once this listener returns.
      w.onbeforeunload = null;
      try {
        handler.call(w, e);
      } catch {}
      queueMicrotask(() => {
        if (w.onbeforeunload === null) w.onbeforeunload = handler;
      });
    }
  }, true);
})();
