// Errand's service worker: a thin relay. It holds one native messaging port
// to the host (reconnecting when it drops), relays the side panels' requests
// to the host and the host's events to the panels, and carries out the
// host's browser requests: tabs, content-script injection, screenshots.
// Every message is built and checked by the Rust protocol crate
// (`envelope`, `check`); no message shape is written here.
import init, { envelope, check, page_command, net_request, net_answer, net_forget, frame_route, ChunkJoiner } from './pkg/worker/errand_page.js';
import { FILL_TASK, MENU_FILL, PENDING_KEY } from './panel/shortcuts.js';
// Rules written from Rust (errand-protocol's rules_js.rs): one copy of each.
import { CHUNK_TIMEOUT_MS, PANEL_KINDS } from './generated/rules.js';

const HOST = 'errand.host';
const INSTALL_HINT =
  'Errand\'s native host is not installed or failed to start. In the Errand folder, run ' +
  'scripts/install.sh (it runs `errand install`), then reopen this panel.';
const LOAD_TIMEOUT_MS = 30000;

const crate = init({ module_or_path: new URL('./pkg/worker/errand_page_bg.wasm', import.meta.url) });

let nextId = Math.floor(Math.random() * 2 ** 40);
let host = null; // the native port
let hostError = null; // why the host is unavailable
let retryMs = 1000;
let retryTimer = null;
const panels = new Set();

// The toolbar button and its keyboard shortcut (`_execute_action`) open the panel.
chrome.sidePanel?.setPanelBehavior?.({ openPanelOnActionClick: true }).catch(() => {});

// Right-click on a form field: "Fill this form with Errand" opens the panel
// for that tab and leaves it the task to start (the panel takes it from
// chrome.storage.session).
chrome.runtime.onInstalled.addListener(() => {
  chrome.contextMenus?.create(
    { id: MENU_FILL, title: 'Fill this form with Errand', contexts: ['editable'] },
    () => void chrome.runtime.lastError,
  );
});
chrome.contextMenus?.onClicked.addListener((info, tab) => {
  if (info.menuItemId !== MENU_FILL || tab?.id == null) return;
  // sidePanel.open must run in the click's user gesture: call it first.
  chrome.sidePanel.open({ tabId: tab.id }).catch((e) => console.error('errand: cannot open the panel:', e));
  chrome.storage.session.set({ [PENDING_KEY]: { tabId: tab.id, task: FILL_TASK, at: Date.now() } });
});

/** Builds an envelope through the protocol crate; returns it as an object. */
async function make(kind, fields = {}, re = undefined) {
  await crate;
  return JSON.parse(envelope(nextId++, re, kind, JSON.stringify(fields)));
}

async function errorTo(re, code, message) {
  return make('error', { code, message }, re);
}

// ---- the host ----

function connectHost() {
  let port;
  try {
    port = chrome.runtime.connectNative(HOST);
  } catch (e) {
    hostDown(String(e?.message ?? e));
    return;
  }
  host = port;
  port.onMessage.addListener((msg) => onHostMessage(msg).catch((e) => console.error('errand:', e)));
  port.onDisconnect.addListener(() => {
    const why = chrome.runtime.lastError?.message ?? 'the host exited';
    if (host === port) host = null;
    hostDown(why);
  });
  make('hello', { extension_version: chrome.runtime.getManifest().version }).then((m) => port.postMessage(m));
}

function hostDown(why) {
  hostError = why;
  broadcastHostDown();
  clearTimeout(retryTimer);
  retryTimer = setTimeout(() => {
    retryTimer = null;
    connectHost();
  }, retryMs);
  retryMs = Math.min(retryMs * 2, 30000);
}

async function broadcastHostDown() {
  const msg = await errorTo(undefined, 'host_unavailable', `${INSTALL_HINT} (${hostError})`);
  for (const p of panels) p.postMessage(msg);
}

async function toHost(msg) {
  if (!host) throw new Error('host unavailable');
  host.postMessage(msg);
}

async function onHostMessage(raw) {
  await crate;
  let text = JSON.stringify(raw);
  if (raw?.kind === 'chunk' && (text = joinChunk(text)) === null) return; // wait for the rest
  let msg;
  try {
    msg = JSON.parse(check(text));
  } catch (e) {
    console.error('errand: bad message from host:', e);
    return;
  }
  retryMs = 1000;
  if (msg.kind === 'welcome') {
    hostError = null;
    return;
  }
  const handler = browserRequests[msg.kind];
  if (handler) {
    let reply;
    try {
      reply = await handler(msg);
    } catch (e) {
      reply = await errorTo(msg.id, e.code ?? 'tab_unavailable', String(e?.message ?? e));
    }
    host?.postMessage(reply);
    return;
  }
  // Task events and replies to panels' requests: every panel gets them.
  for (const p of panels) p.postMessage(msg);
}

// ---- messages over 1 MiB from the host ----
// The browser refuses a host → extension message over 1 MiB, so the host
// sends a longer one as `chunk` envelopes (`Body::Chunk` in
// shared/src/lib.rs): slices of the message's JSON text, back to back, in
// order, each with `of` (the message's id), `index` and `count`.
// The crate's `ChunkJoiner` joins them: the protocol crate's joiner, the
// one copy of the rules (in order, one message at a time, the size limit,
// the announced id), fuzzed with the host. `joinChunk` returns `null` for a
// chunk while the message is incomplete (or when its set is bad: logged,
// dropped), and the joined message's JSON after the last chunk; the caller
// then checks it with the crate like any other message. Chunks never reach
// a panel. An incomplete set is dropped after CHUNK_TIMEOUT_MS (a timer
// here: the crate keeps no clock). The crate is initialised before the
// first message is handled (`await crate` above), so the joiner adds no
// start-up work of its own.
let joiner = null; // made on the first chunk
let chunkTimer = null;

function joinChunk(text) {
  joiner ??= new ChunkJoiner();
  clearTimeout(chunkTimer);
  let joined = null;
  let why = null;
  try {
    joined = joiner.accept(text) ?? null;
  } catch (e) {
    why = e?.message ?? String(e);
  }
  const superseded = joiner.superseded(); // a set started before the last one completed
  if (superseded) console.error(`errand: ${superseded}`);
  if (why) console.error(`errand: ${why}`);
  if (joiner.pending()) {
    chunkTimer = setTimeout(() => {
      const why = joiner.expire();
      if (why) console.error(`errand: ${why}`);
    }, CHUNK_TIMEOUT_MS);
  }
  return joined;
}

// ---- what the host asks of the browser ----

const browserRequests = {
  async open_tab(msg) {
    const tab = await chrome.tabs.create({ url: msg.url, active: true });
    // Its `loading` may have come before `create` answered.
    if (tab.status && !tabStatus.has(tab.id)) tabStatus.set(tab.id, tab.status);
    drive(tab.id);
    return tabReady(msg.id, await loaded(tab.id));
  },
  async active_tab(msg) {
    const [tab] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
    if (!tab) throw withCode(new Error('there is no active tab'), 'tab_unavailable');
    drive(tab.id);
    return tabReady(msg.id, await loaded(tab.id));
  },
  async navigate(msg) {
    drive(msg.tab_id);
    await chrome.tabs.update(msg.tab_id, { url: msg.url });
    return tabReady(msg.id, await loaded(msg.tab_id));
  },
  async activate_tab(msg) {
    drive(msg.tab_id);
    const tab = await chrome.tabs.update(msg.tab_id, { active: true });
    await chrome.windows.update(tab.windowId, { focused: true }).catch(() => {});
    return tabReady(msg.id, await loaded(msg.tab_id));
  },
  async close_tab(msg) {
    await chrome.tabs.remove(msg.tab_id);
    return make('ack', {}, msg.id);
  },
  async list_tabs(msg) {
    const tabs = (await chrome.tabs.query({}))
      .filter((t) => t.id !== undefined && !(t.url ?? '').startsWith('chrome-extension://'))
      .map((t) => ({ tab_id: t.id, url: t.url ?? '', title: t.title ?? '', active: !!t.active }));
    return make('tabs', { tabs }, msg.id);
  },
  async capture(msg) {
    const tab = await chrome.tabs.get(msg.tab_id);
    // Let the page paint what the last command drew (the marks) first.
    await chrome.scripting.executeScript({
      target: { tabId: msg.tab_id },
      func: () => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true)))),
    }).catch(() => {});
    const shot = await chrome.tabs.captureVisibleTab(tab.windowId, { format: 'jpeg', quality: 90 });
    return make('captured', { data_url: await fitScreenshot(shot) }, msg.id);
  },
  async page(msg) {
    drive(msg.tab_id);
    // An action goes to a tab known to be loaded without asking again; any
    // other command (the observation after an action that started loading
    // a page) asks the browser, and waits for the new page.
    let forward;
    try {
      forward = await toTab(msg);
    } catch (e) {
      return errorTo(msg.id, 'bad_message', String(e?.message ?? e));
    }
    await (msg.command?.op === 'act' ? settled(msg.tab_id) : loaded(msg.tab_id));
    let answer;
    try {
      answer = await chrome.tabs.sendMessage(msg.tab_id, forward, { frameId: 0 });
    } catch (e) {
      if (/No tab with id/i.test(String(e?.message ?? e))) {
        // Closed since its last word (no `tabs.get` before sending now).
        throw withCode(new Error(`tab ${msg.tab_id} was closed`), 'tab_unavailable');
      }
      if (!/Receiving end does not exist|Could not establish connection/i.test(String(e?.message ?? e))) {
        // The content script got the command but its page went away before
        // answering (a navigation or reload mid-action). Never replay the
        // command on the new page: say what happened.
        throw withCode(new Error(
          'the page navigated or reloaded while the command ran; look at the new page before going on'),
        'page_unavailable');
      }
      // No content script in this document yet: inject the loader, retry.
      await inject(msg.tab_id);
      answer = await chrome.tabs.sendMessage(msg.tab_id, forward, { frameId: 0 });
    }
    if (answer?.ok) return answer.ok;
    throw withCode(new Error(answer?.failed ?? 'the content script did not answer'), 'page_unavailable');
  },
};
// A `page` envelope as its tab's content script takes it: the command in
// the crate's wire form (postcard's bytes in base64, `extension/src/wire.rs`),
// which the content script reads without the serde code of the protocol's
// JSON; throws the protocol's sentence for a bad command.
async function toTab(msg) {
  await crate;
  return { v: msg.v, id: msg.id, kind: 'page', wire: page_command(JSON.stringify(msg)) };
}
globalThis.errandToTab = toTab; // for the benchmarks (tests/examples/)

// The end-to-end suite reaches a tab's content script through this same
// relay (tests/src/content.rs), not a copy of it. A service worker's
// globals are reachable only from the extension's own contexts.
globalThis.errandBrowserRequests = browserRequests;

// Screenshots for the model: at most 1280 px wide, JPEG, and small enough
// for one host-bound message (the reply envelope stays far below the
// 1 MiB a message to the host may not exceed in the other direction, so
// the host can forward it to the side panel too).
const SHOT_MAX_WIDTH = 1280;
const SHOT_MAX_BYTES = 900 * 1024;

async function fitScreenshot(dataUrl) {
  const bitmap = await createImageBitmap(await (await fetch(dataUrl)).blob());
  const scale = Math.min(1, SHOT_MAX_WIDTH / bitmap.width);
  const width = Math.max(1, Math.round(bitmap.width * scale));
  const height = Math.max(1, Math.round(bitmap.height * scale));
  const canvas = new OffscreenCanvas(width, height);
  canvas.getContext('2d').drawImage(bitmap, 0, 0, width, height);
  bitmap.close();
  for (const quality of [0.8, 0.65, 0.5, 0.35, 0.2]) {
    const blob = await canvas.convertToBlob({ type: 'image/jpeg', quality });
    const url = await blobToDataUrl(blob);
    if (url.length <= SHOT_MAX_BYTES) return url;
  }
  throw withCode(new Error('the screenshot does not fit in one message'), 'internal');
}

async function blobToDataUrl(blob) {
  const bytes = new Uint8Array(await blob.arrayBuffer());
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return `data:${blob.type};base64,${btoa(binary)}`;
}

function withCode(error, code) {
  error.code = code;
  return error;
}

async function tabReady(re, tab) {
  return make('tab_ready', { tab_id: tab.id, url: tab.url ?? '', title: tab.title ?? '' }, re);
}

// The content script's files as the manifest declares them (the WASM build's
// glue as a classic script, then the loader): one list, the manifest's.
const LOADER_FILES = chrome.runtime
  .getManifest()
  .content_scripts.find((c) => c.js.includes('extension/loader.js')).js;
globalThis.errandLoaderFiles = LOADER_FILES; // for the benchmarks (tests/examples/)

async function inject(tabId) {
  try {
    await chrome.scripting.executeScript({ target: { tabId }, files: LOADER_FILES });
  } catch (e) {
    throw withCode(new Error(`Errand cannot run in this tab: ${e?.message ?? e}`), 'tab_unavailable');
  }
}

// Each tab's loading state, from the browser's own events (the listener
// below, with the tabs a task drives), so that an action for a tab known to
// have finished loading goes at once, without asking the browser first
// (`chrome.tabs.get`, a round trip to the browser process on every action).
// A tab not known yet (the service worker restarted, or the tab is older
// than it) is asked about.
const tabStatus = new Map();

/** Resolves once the tab has finished loading: at once when it is known to have. */
async function settled(tabId) {
  if (tabStatus.get(tabId) !== 'complete') await loaded(tabId);
}

/** Resolves with the tab once it has finished loading. */
async function loaded(tabId) {
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  for (;;) {
    let tab;
    try {
      tab = await chrome.tabs.get(tabId);
    } catch {
      throw withCode(new Error(`tab ${tabId} was closed`), 'tab_unavailable');
    }
    if (tab.status) tabStatus.set(tabId, tab.status);
    if (tab.status === 'complete') return tab;
    if (Date.now() > deadline) throw withCode(new Error(`tab ${tabId} did not finish loading`), 'tab_unavailable');
    await new Promise((resolve) => {
      const done = () => {
        chrome.tabs.onUpdated.removeListener(onUpdated);
        clearTimeout(timer);
        resolve();
      };
      const onUpdated = (id, change) => {
        if (id === tabId && change.status === 'complete') done();
      };
      const timer = setTimeout(done, 250);
      chrome.tabs.onUpdated.addListener(onUpdated);
    });
  }
}

// ---- the tabs a task drives ----
// The tabs the host has opened, navigated, activated or sent a page command
// to. While one of them loads a document, its top frame's content script is
// told to prepare as soon as it is there (`document_idle`, often before
// `load`), and told again when the tab has loaded (`prepare` in
// extension/src/lib.rs: the crate loaded at once, the readiness watch
// begun, the page walked when it has loaded and is idle, kept, so that the
// task's first observation of it re-reads only what changed). Never sent
// to other tabs: the pages the user visits pay nothing for it.
const driven = new Set();
function drive(tabId) {
  if (!Number.isInteger(tabId)) return;
  const fresh = !driven.has(tabId);
  driven.add(tabId);
  const status = tabStatus.get(tabId);
  if (status === 'loading') prepareEarly(tabId);
  // Driven from now on, and loaded already (its `complete` came before
  // `tabs.create` answered, or the host took the active tab): told now.
  else if (fresh && status === 'complete') {
    chrome.tabs.sendMessage(tabId, { kind: 'prepare' }, { frameId: 0 }).catch(() => {});
  }
}

// How often a loading tab's content script is asked whether it is there.
const PREPARE_POLL_MS = 10;
// The tabs being asked (one asking loop each), by the loop's token.
const preparing = new Map();

/**
 * Tells the content script of the document a driven tab is loading to
 * prepare as soon as it runs: asked every few milliseconds until it takes
 * the word (a document still loading) or the tab has loaded (then the
 * `complete` word below goes). A document that has loaded already (the
 * one a navigation is leaving) declines.
 */
async function prepareEarly(tabId) {
  if (preparing.has(tabId)) return;
  const token = {};
  preparing.set(tabId, token);
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  try {
    while (preparing.get(tabId) === token && tabStatus.get(tabId) === 'loading' && Date.now() < deadline) {
      const answer = await chrome.tabs
        .sendMessage(tabId, { kind: 'prepare', early: true }, { frameId: 0 })
        .catch(() => null);
      if (answer?.taken) return;
      await new Promise((resolve) => setTimeout(resolve, PREPARE_POLL_MS));
    }
  } finally {
    if (preparing.get(tabId) === token) preparing.delete(tabId);
  }
}

// Registered at the top level so that the events reach a restarted worker.
chrome.tabs.onUpdated.addListener((tabId, change) => {
  if (!change.status) return;
  tabStatus.set(tabId, change.status);
  if (!driven.has(tabId)) return;
  if (change.status === 'loading') {
    // A new document: ask again (a loop on the previous one ends).
    preparing.delete(tabId);
    prepareEarly(tabId);
    return;
  }
  if (change.status !== 'complete') return;
  preparing.delete(tabId);
  // No content script there (yet): nothing to prepare; a command injects it.
  chrome.tabs.sendMessage(tabId, { kind: 'prepare' }, { frameId: 0 }).catch(() => {});
});
chrome.tabs.onRemoved.addListener((tabId) => {
  tabStatus.delete(tabId);
  driven.delete(tabId);
  preparing.delete(tabId);
});

// ---- requests in flight, for the content script's settle wait ----
// After an action the content script waits until the page is still, the
// network included: it asks here how many requests its tab started since
// the action are in flight (`net_answer`). The books are kept by the crate
// (extension/src/net.rs); these listeners only hand it the events. They
// are registered at the top level so that the events wake the worker.
const netEvent = (event) => (d) => {
  if (d.tabId >= 0) crate.then(() => net_request(event, d.tabId, d.requestId, d.type, d.timeStamp));
};
const NET_FILTER = { urls: ['<all_urls>'] };
chrome.webRequest?.onBeforeRequest.addListener(netEvent('start'), NET_FILTER);
chrome.webRequest?.onCompleted.addListener(netEvent('end'), NET_FILTER);
chrome.webRequest?.onErrorOccurred.addListener(netEvent('end'), NET_FILTER);
chrome.tabs.onRemoved.addListener((tabId) => crate.then(() => net_forget(tabId)));
chrome.runtime.onMessage.addListener((message, sender, reply) => {
  // Only this extension's own content scripts ask.
  if (sender.id !== chrome.runtime.id || sender.tab?.id == null) return false;
  if (message?.errand_frame) {
    relayToFrame(message, sender).then(reply, (e) =>
      reply({ failed: String(e?.message ?? e), unreadable: e?.unreadable === true }));
    return true;
  }
  crate
    .then(() => net_answer(JSON.stringify(message), sender.tab.id))
    .then((answer) => reply(answer))
    .catch(() => reply(undefined));
  return true;
});

// ---- cross-origin frames (extension/src/frames.rs) ----
// A content script reaches the content script of a frame inside its own
// frame only through here: it sends `{errand_frame: {to, message}}`, where
// `to` is the frame's place: its path (its window's index in its parent's
// `frames`, from the top down), or for a frame in a shadow root its
// parent's path and its size. Every frame of the tab runs `framePath` to
// say where it is; the crate (`frame_route`) picks the frame and refuses any that is
// not inside the sender's; the message goes to that frame alone (its
// loader injected first when needed) and its reply comes back untouched.

/**
 * Where this frame is (runs in each frame): its path from the top window,
 * or, when its parent's `frames` does not list it (an iframe in a shadow
 * root), its parent's path and its viewport's size (`frames::Place`).
 */
function framePath() {
  const pathOf = (start) => {
    const path = [];
    let w = start;
    for (let depth = 0; depth < 64 && w.parent !== w; depth++) {
      const parent = w.parent;
      let i = 0;
      while (i < parent.length && parent[i] !== w) i++;
      if (i === parent.length) return null;
      path.unshift(i);
      w = parent;
    }
    return path;
  };
  const path = pathOf(window);
  if (path || window.parent === window) return path;
  const parent = pathOf(window.parent);
  return parent && { parent, width: innerWidth, height: innerHeight };
}

// The frames' places, asked of every frame of the tab. The asks of one
// observation (one per frame, sent at once) share one look; a frame not
// found in a shared look is looked for again in a fresh one.
const locating = new Map();
function locateFrames(tabId) {
  let look = locating.get(tabId);
  if (!look) {
    look = chrome.scripting
      .executeScript({ target: { tabId, allFrames: true }, func: framePath, injectImmediately: true })
      .then((located) => JSON.stringify(located))
      .finally(() => locating.delete(tabId));
    locating.set(tabId, look);
  }
  return look;
}

async function relayToFrame(message, sender) {
  const tabId = sender.tab.id;
  const shared = locating.has(tabId);
  const located = await locateFrames(tabId);
  await crate;
  const route = (located) => JSON.parse(frame_route(JSON.stringify(message), sender.frameId ?? 0, located));
  let routed = route(located);
  if (routed.unreadable && shared) routed = route(await locateFrames(tabId));
  // No frame that runs Errand there: said so, to be remembered until the
  // frame loads another document (frames.rs).
  const unreadable = (why) => Object.assign(new Error(why), { unreadable: true });
  if (routed.unreadable) throw unreadable(routed.unreadable);
  const { frame_id: frameId, message: forward } = routed;
  const send = () => chrome.tabs.sendMessage(tabId, forward, { frameId });
  let answer;
  try {
    answer = await send();
  } catch (e) {
    if (!/Receiving end does not exist|Could not establish connection/i.test(String(e?.message ?? e))) {
      throw new Error('the frame navigated or was removed while the command ran');
    }
    // No content script in that frame yet.
    try {
      await chrome.scripting.executeScript({ target: { tabId, frameIds: [frameId] }, files: LOADER_FILES });
    } catch (why) {
      throw unreadable(`Errand cannot run in the frame: ${why?.message ?? why}`);
    }
    answer = await send();
  }
  if (answer?.ok) return { ok: answer.ok };
  throw new Error(answer?.failed ?? 'the frame did not answer');
}

// ---- the side panels ----

// PANEL_KINDS (imported above): the kinds a panel may send.

chrome.runtime.onConnect.addListener((port) => {
  if (port.name !== 'panel' || port.sender?.id !== chrome.runtime.id || port.sender?.tab?.url?.startsWith('http')) {
    port.disconnect();
    return;
  }
  panels.add(port);
  port.onDisconnect.addListener(() => panels.delete(port));
  port.onMessage.addListener(async (raw) => {
    await crate;
    let msg;
    try {
      msg = JSON.parse(check(JSON.stringify(raw)));
    } catch (e) {
      port.postMessage(await errorTo(raw?.id, 'bad_message', String(e?.message ?? e)));
      return;
    }
    if (!PANEL_KINDS.has(msg.kind)) {
      port.postMessage(await errorTo(msg.id, 'not_allowed', `a side panel may not send \`${msg.kind}\``));
      return;
    }
    if (!host && msg.kind === 'get_status' && retryTimer) {
      // The user asked again (the panel's "Try again"): do not wait for the backoff.
      clearTimeout(retryTimer);
      retryTimer = null;
      connectHost();
    }
    if (!host) {
      port.postMessage(await errorTo(msg.id, 'host_unavailable', `${INSTALL_HINT} (${hostError ?? 'not connected'})`));
      return;
    }
    toHost(msg);
  });
});

connectHost();
