// Errand, in the page's own world (manifest `content_scripts`: "world":
// "MAIN", document_start, every frame). It holds no page logic: it notes
// which timers are due a moment from now (below), when a page script last
// started a request (below), and which elements are
// given listeners that a person's click, tap or key reaches (`addEventListener`, `onclick`-style
// properties, and the handler props a framework delegating from its root keeps on each element,
// React's `__reactProps$…`) — which the
// content script cannot see from its isolated world — and hands over only
// those elements. Asked with an `errand-listeners-ask` event on the
// document, it dispatches an `errand-listener` event on each element noted
// since the last ask that is in the page (the content script,
// extension/src/listeners.rs, takes the events' targets). Nothing comes
// back in: it reads nothing from the events it gets and runs nothing it is
// given. A page forging either event can only make more elements
// candidates for the list.
(() => {
  const ASK = 'errand-listeners-ask';
  const MARK = 'errand-listener';
  // The kinds of listener a person's use of an element reaches.
  const KINDS = new Set([
    'click', 'dblclick', 'mousedown', 'mouseup', 'pointerdown', 'pointerup',
    'touchstart', 'touchend', 'keydown', 'keyup', 'keypress',
  ]);
  // A framework's root (React's container) is given listeners of dozens of
  // kinds to delegate them: it is not itself a control.
  const DELEGATE_KINDS = 12;

  // Taken before any page script runs.
  const { apply } = Reflect;
  const add = EventTarget.prototype.addEventListener;
  const dispatch = EventTarget.prototype.dispatchEvent;
  const nodeType = Object.getOwnPropertyDescriptor(Node.prototype, 'nodeType').get;
  const isConnected = Object.getOwnPropertyDescriptor(Node.prototype, 'isConnected').get;
  const NewEvent = Event;
  const NewWeakRef = WeakRef;

  // The handler props of the same kinds, as frameworks that delegate from
  // their root name them on each element (below).
  const HANDLERS = [
    ['onClick', 'click'], ['onDoubleClick', 'dblclick'], ['onMouseDown', 'mousedown'],
    ['onMouseUp', 'mouseup'], ['onPointerDown', 'pointerdown'], ['onPointerUp', 'pointerup'],
    ['onTouchStart', 'touchstart'], ['onTouchEnd', 'touchend'], ['onKeyDown', 'keydown'],
    ['onKeyUp', 'keyup'], ['onKeyPress', 'keypress'],
  ];
  const ownKeys = Reflect.ownKeys;
  const Observer = MutationObserver;
  const observe = Observer.prototype.observe;
  const takeRecords = Observer.prototype.takeRecords;
  const querySelectorAll = Element.prototype.querySelectorAll;
  const kinds = new WeakMap(); // element → the kinds of listener it was given
  const noted = new WeakSet(); // elements given a listener of KINDS
  let pending = []; // WeakRefs of noted elements not handed over yet

  const note = (target, kind) => {
    try {
      if (target === null || typeof target !== 'object' || apply(nodeType, target, []) !== 1) {
        return;
      }
    } catch {
      return; // not a node
    }
    let seen = kinds.get(target);
    if (!seen) kinds.set(target, (seen = new Set()));
    if (seen.size <= DELEGATE_KINDS) {
      seen.add(kind);
      if (seen.size > DELEGATE_KINDS) delegating(target);
    }
    if (KINDS.has(kind) && !noted.has(target)) {
      noted.add(target);
      pending.push(new NewWeakRef(target));
    }
  };

  // A Proxy of the native function: it reads as native to the page.
  EventTarget.prototype.addEventListener = new Proxy(add, {
    apply(target, self, args) {
      try {
        if (args[1]) note(self, String(args[0]));
      } catch {}
      return apply(target, self, args);
    },
  });
  for (const kind of KINDS) {
    const d = Object.getOwnPropertyDescriptor(HTMLElement.prototype, `on${kind}`);
    if (!d?.set || !d.configurable) continue;
    const set = new Proxy(d.set, {
      apply(target, self, args) {
        try {
          if (typeof args[0] === 'function') note(self, kind);
        } catch {}
        return apply(target, self, args);
      },
    });
    Object.defineProperty(HTMLElement.prototype, `on${kind}`, { ...d, set });
  }

  // Timers set for a moment later by anything but another timer (a submenu
  // a hover opens 300 ms later, suggestions after a typing debounce): an
  // observation waits for them (extension/src/ready.rs). Asked with an
  // `errand-timers-ask` event, it answers with an `errand-timers-pending`
  // event on the document while one is due. Timers set by timers (polls,
  // carousels) and intervals are not waited for.
  const SOON_MS = 1500;
  const TIMERS_ASK = 'errand-timers-ask';
  const TIMERS_PENDING = 'errand-timers-pending';
  const setTimer = window.setTimeout;
  const clearTimer = window.clearTimeout;
  const perf = performance;
  const perfNow = Performance.prototype.now;
  const time = () => apply(perfNow, perf, []);
  const due = new Map(); // timer id → when it is due
  let inTimer = 0;
  window.setTimeout = new Proxy(setTimer, {
    apply(target, self, args) {
      const callback = args[0];
      if (typeof callback !== 'function') return apply(target, self, args);
      let ms = 0;
      try {
        ms = Number(args[1]) || 0;
      } catch {}
      const tracked = inTimer === 0 && ms > 0 && ms <= SOON_MS;
      let id;
      args[0] = function () {
        due.delete(id);
        inTimer += 1;
        try {
          return apply(callback, this, arguments);
        } finally {
          inTimer -= 1;
        }
      };
      id = apply(target, self, args);
      if (tracked) due.set(id, time() + ms);
      return id;
    },
  });
  window.clearTimeout = new Proxy(clearTimer, {
    apply(target, self, args) {
      due.delete(args[0]);
      return apply(target, self, args);
    },
  });
  apply(add, document, [TIMERS_ASK, () => {
    const t = time();
    let pending = false;
    for (const [id, at] of due) {
      // Long overdue: a throttled or dropped timer, not waited for.
      if (at < t - 1000) due.delete(id);
      else pending = true;
    }
    if (pending) apply(dispatch, document, [new NewEvent(TIMERS_PENDING)]);
  }, true]);

  // Requests a page script starts (`fetch`, `XMLHttpRequest.send`), and
  // frame callbacks asked for by anything but another frame callback (a
  // handler drawing in the next frame; not animation loops): an action
  // that changed nothing, started no request and asked for no frame is
  // settled after one task, without asking the service worker's request
  // count (extension/src/watch.rs). Asked with an `errand-requests-ask`
  // event, it answers with an `errand-requests` and an `errand-frames`
  // event on the document whose `detail` is when the last one started or
  // was asked for (`performance.now()`; -1: none yet). A page forging the
  // answers only makes actions on itself settle sooner or later.
  const REQUESTS_ASK = 'errand-requests-ask';
  const REQUESTS = 'errand-requests';
  const FRAMES = 'errand-frames';
  const NewCustomEvent = CustomEvent;
  let lastRequest = -1;
  const noteRequest = {
    apply(target, self, args) {
      lastRequest = time();
      return apply(target, self, args);
    },
  };
  if (typeof window.fetch === 'function') window.fetch = new Proxy(window.fetch, noteRequest);
  const xhr = window.XMLHttpRequest?.prototype;
  if (xhr && typeof xhr.send === 'function') xhr.send = new Proxy(xhr.send, noteRequest);
  let lastFrame = -1;
  let inFrame = 0;
  if (typeof window.requestAnimationFrame === 'function') {
    window.requestAnimationFrame = new Proxy(window.requestAnimationFrame, {
      apply(target, self, args) {
        const callback = args[0];
        if (typeof callback !== 'function') return apply(target, self, args);
        if (inFrame === 0) lastFrame = time();
        args[0] = function () {
          inFrame += 1;
          try {
            return apply(callback, this, arguments);
          } finally {
            inFrame -= 1;
          }
        };
        return apply(target, self, args);
      },
    });
  }
  apply(add, document, [REQUESTS_ASK, () => {
    apply(dispatch, document, [new NewCustomEvent(REQUESTS, { detail: lastRequest })]);
    apply(dispatch, document, [new NewCustomEvent(FRAMES, { detail: lastFrame })]);
  }, true]);

  // A framework that delegates from its root (React's container) keeps
  // each element's handlers in props of its own on the node
  // (`__reactProps$…` holding `onClick`, `onDoubleClick`…), where no
  // `addEventListener` shows them. Under such a root, the elements whose
  // own (expando) properties hold an object with a handler of the kinds
  // above are noted too: all of them at the first ask after the root is
  // seen, then those added since (a `MutationObserver` on the root).
  const roots = []; // [WeakRef of the root, scanned yet]
  let added = []; // element nodes added under the roots since the last ask
  let rescan = false; // too many added: scan the roots whole
  const ADDED_MAX = 20000;
  const handlerKind = (el) => {
    let keys;
    try {
      keys = ownKeys(el);
    } catch {
      return null;
    }
    for (const key of keys) {
      if (typeof key !== 'string' || !(key.startsWith('__') || key.includes('$'))) continue;
      try {
        const props = el[key];
        if (props === null || typeof props !== 'object') continue;
        for (const [name, kind] of HANDLERS) {
          if (typeof props[name] === 'function') return kind;
        }
      } catch {}
    }
    return null;
  };
  const scan = (el, whole) => {
    const kind = handlerKind(el);
    if (kind) note(el, kind);
    if (!whole) return;
    let all;
    try {
      all = apply(querySelectorAll, el, ['*']);
    } catch {
      return;
    }
    for (const e of all) {
      const k = handlerKind(e);
      if (k) note(e, k);
    }
  };
  const took = (records) => {
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (added.length >= ADDED_MAX) {
          rescan = true;
          added = [];
          return;
        }
        if (apply(nodeType, n, []) === 1) added.push(n);
      }
    }
  };
  const watcher = new Observer(took);
  const delegating = (root) => {
    roots.push([new NewWeakRef(root), false]);
    try {
      apply(observe, watcher, [root, { childList: true, subtree: true }]);
    } catch {}
  };
  const scanRoots = () => {
    took(apply(takeRecords, watcher, []));
    for (const r of roots) {
      const root = r[0].deref();
      if (root && (!r[1] || rescan)) scan(root, true);
      r[1] = true;
    }
    rescan = false;
    const fresh = added;
    added = [];
    for (const el of fresh) scan(el, true);
  };

  apply(add, document, [ASK, () => {
    if (roots.length > 0) {
      try {
        scanRoots();
      } catch {}
    }
    const later = [];
    for (const ref of pending) {
      const el = ref.deref();
      if (!el || kinds.get(el).size > DELEGATE_KINDS) continue;
      // Not in the page yet: handed over once it is.
      if (!apply(isConnected, el, [])) {
        later.push(ref);
        continue;
      }
      apply(dispatch, el, [new NewEvent(MARK, { composed: true })]);
    }
    pending = later;
  }, true]);
})();
