// The side panel's connection to the host, through the service worker's
// "panel" port. Every message is built and checked by the Rust protocol
// crate (`envelope`, `check`); replies are matched to requests by `re`.

import init, { envelope, check } from '../pkg/worker/errand_page.js';

const crate = init({ module_or_path: new URL('../pkg/worker/errand_page_bg.wasm', import.meta.url) });

let nextId = Math.floor(Math.random() * 2 ** 40);
const waiting = new Map(); // request id → {kind, resolve, reject}
const handlers = new Map(); // topic → [fn]
let port = null;
let hostState = 'connecting';
let retryMs = 2000;
let retryTimer = null;

/** Listens to `topic`: `event` (task_event), `status`, `host` (state changes). */
export function on(topic, fn) {
  if (!handlers.has(topic)) handlers.set(topic, []);
  handlers.get(topic).push(fn);
}

function emit(topic, ...args) {
  for (const fn of handlers.get(topic) ?? []) {
    try {
      fn(...args);
    } catch (e) {
      console.error(`errand: ${topic} handler failed`, e);
    }
  }
}

/** The host's state: `connecting`, `connected` or `unavailable`. */
export const state = () => hostState;

function setState(next, detail) {
  const changed = next !== hostState;
  hostState = next;
  if (next === 'connected') retryMs = 2000;
  if (changed || next === 'unavailable') emit('host', next, detail);
}

/** An error the host (or the service worker) answered with. */
export class HostError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/**
 * Sends `kind` with `fields` and resolves with the reply envelope, or
 * rejects with a [`HostError`] (the reply was `error`, or the host went away).
 */
export async function request(kind, fields = {}) {
  await crate;
  if (!port) connect();
  const msg = JSON.parse(envelope(nextId++, undefined, kind, JSON.stringify(fields)));
  return new Promise((resolve, reject) => {
    waiting.set(msg.id, { kind, resolve, reject });
    try {
      port.postMessage(msg);
    } catch (e) {
      waiting.delete(msg.id);
      reject(new HostError('host_unavailable', `the service worker is not reachable: ${e?.message ?? e}`));
    }
  });
}

function failAll(code, message) {
  const pending = [...waiting.values()];
  waiting.clear();
  for (const w of pending) w.reject(new HostError(code, message));
}

function receive(raw) {
  let msg;
  try {
    msg = JSON.parse(check(JSON.stringify(raw)));
  } catch (e) {
    console.error('errand: unreadable message', e);
    return;
  }
  const mine = msg.re != null ? waiting.get(msg.re) : undefined;
  if (mine) waiting.delete(msg.re);
  if (msg.kind === 'error') {
    if (msg.code === 'host_unavailable') {
      setState('unavailable', msg.message);
      failAll('host_unavailable', msg.message);
      mine?.reject(new HostError(msg.code, msg.message));
      scheduleRetry();
      return;
    }
    mine?.reject(new HostError(msg.code, msg.message));
    if (!mine && msg.re == null) console.warn('errand: the host reported', msg.code, msg.message);
    return;
  }
  if (hostState !== 'connected') setState('connected');
  if (mine) {
    mine.resolve(msg);
  } else if (msg.kind === 'task_event') {
    emit('event', msg.task_id, msg.event);
  }
  if (msg.kind === 'status') emit('status', msg);
}

/** Asks for the host's status now; the answer reaches `on('status')`. */
export function refreshStatus() {
  clearTimeout(retryTimer);
  retryTimer = null;
  return request('get_status').catch(() => null);
}

function scheduleRetry() {
  if (retryTimer) return;
  retryTimer = setTimeout(() => {
    retryTimer = null;
    refreshStatus();
  }, retryMs);
  retryMs = Math.min(retryMs * 2, 30000);
}

/** Opens the port to the service worker (again, when it dropped). */
export function connect() {
  port = chrome.runtime.connect({ name: 'panel' });
  port.onMessage.addListener((raw) => crate.then(() => receive(raw)));
  port.onDisconnect.addListener(() => {
    port = null;
    failAll('host_unavailable', 'the connection to Errand\'s service worker was lost');
    setTimeout(() => {
      connect();
      refreshStatus();
    }, 500);
  });
}
