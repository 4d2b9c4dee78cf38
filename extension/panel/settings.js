// Settings: the host's settings shown and edited. The host owns them (its
// config file); the API key is sent to the host and never kept here.

import { $, h, lines } from './dom.js';
import { request } from './host.js';

let current = null; // the last SettingsView the host sent
let dirty = false; // the form holds changes not saved yet
const listeners = [];

/** Calls `fn(settings)` whenever the host tells the settings. */
export function onSettings(fn) {
  listeners.push(fn);
  if (current) fn(current);
}

function got(settings) {
  current = settings;
  for (const fn of listeners) fn(settings);
  return settings;
}

/** Asks the host for its settings. */
export async function loadSettings() {
  const reply = await request('get_settings');
  return got(reply.settings);
}

/** Sends a change; resolves with the settings as they now are. */
export async function saveSettings(update) {
  const reply = await request('save_settings', { update });
  return got(reply.settings);
}

const TEXT = ['model', 'base_url'];
const SWITCHES = ['vision', 'marks', 'planner', 'validate'];
const LISTS = ['allow_sites', 'deny_sites', 'ask_first_sites'];

const isLocked = (s, name) =>
  (s.locked ?? []).includes(name) || (name === 'api_key' && (s.locked ?? []).includes('api_key_set'));

function fillKey(s) {
  $('s-api_key').placeholder = s.api_key_set ? 'Leave empty to keep the key' : 'Paste your API key';
  $('s-api_key-hint').textContent = s.api_key_set
    ? `A key is set (${s.api_key_hint ?? 'hidden'}).${isLocked(s, 'api_key') ? '' : ' Type a new one to replace it.'}`
    : 'No key set. Local servers (Ollama) need none.';
  $('remove-key').hidden = !s.api_key_set || isLocked(s, 'api_key');
}

/** Shows `s` in the form, unless the user is editing it. */
function show(s) {
  if (dirty) {
    fillKey(s);
    return;
  }
  fill(s);
}

function fill(s) {
  dirty = false;
  $('s-provider').value = s.provider || 'openai';
  for (const name of TEXT) $(`s-${name}`).value = s[name] ?? '';
  for (const name of SWITCHES) $(`s-${name}`).checked = !!s[name];
  for (const name of LISTS) $(`s-${name}`).value = (s[name] ?? []).join('\n');
  $('s-max_steps').value = s.max_steps ?? '';
  $('s-max_tokens').value = s.max_tokens ?? '';
  $('s-max_cost_usd').value = s.max_cost_usd ?? '';
  $('s-api_key').value = '';
  fillKey(s);

  for (const field of document.querySelectorAll('#settings-form [data-setting]')) {
    const name = field.dataset.setting;
    const locked = isLocked(s, name);
    field.classList.toggle('locked', locked);
    for (const input of field.querySelectorAll('input, select, textarea')) input.disabled = locked;
    let note = field.querySelector('.locked-note');
    if (locked && !note) {
      note = h('span', { class: 'locked-note' }, 'set by the environment');
      field.append(note);
    } else if (!locked && note) {
      note.remove();
    }
  }
}

const num = (v) => (v.trim() === '' ? null : Number(v));
const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** What the form changes, compared to the settings shown (absent = unchanged). */
function changes(s) {
  const u = {};
  const put = (name, value, before) => {
    if (!isLocked(s, name) && !same(value, before)) u[name] = value;
  };
  put('provider', $('s-provider').value, s.provider);
  for (const name of TEXT) put(name, $(`s-${name}`).value.trim(), s[name] ?? '');
  for (const name of SWITCHES) put(name, $(`s-${name}`).checked, !!s[name]);
  for (const name of LISTS) put(name, lines($(`s-${name}`).value), s[name] ?? []);
  const steps = num($('s-max_steps').value);
  if (steps != null) put('max_steps', Math.max(1, Math.round(steps)), s.max_steps);
  const tokens = num($('s-max_tokens').value);
  put('max_tokens', tokens ? Math.round(tokens) : (s.max_tokens ? 0 : null), s.max_tokens ?? null);
  const cost = num($('s-max_cost_usd').value);
  put('max_cost_usd', cost ? cost : (s.max_cost_usd ? 0 : null), s.max_cost_usd ?? null);
  for (const k of Object.keys(u)) if (u[k] === null) delete u[k];
  const key = $('s-api_key').value.trim();
  if (key && !isLocked(s, 'api_key')) u.api_key = key;
  return u;
}

function say(text, state = '') {
  const el = $('settings-status');
  el.textContent = text;
  el.dataset.state = state;
}

// ---- Approvals given "always on this site" ----

const KIND_TEXT = {
  pay: 'Payments', publish: 'Sending and publishing', delete: 'Deleting',
  cancel: 'Cancelling', transfer: 'Money transfers', security: 'Security changes',
};

function showGrants(grants) {
  const list = $('grant-list');
  if (!grants.length) {
    list.replaceChildren(h('li', { class: 'muted' }, 'Nothing: Errand asks each time.'));
    return;
  }
  list.replaceChildren(...grants.map((g) => {
    const what = `${KIND_TEXT[g.kind] ?? g.kind} on ${g.site}`;
    return h('li', { class: 'grant' },
      h('span', {}, what),
      h('button', {
        type: 'button', class: 'revoke', 'aria-label': `Revoke: ${what}`,
        onclick: () => revokeGrant(g.site, g.kind, what),
      }, 'Revoke'));
  }));
}

async function loadGrants() {
  const status = $('grants-status');
  try {
    showGrants((await request('list_grants')).grants ?? []);
    status.textContent = '';
  } catch (e) {
    status.textContent = `Cannot read the approvals: ${e.message}`;
  }
}

async function revokeGrant(site, kind, what) {
  const status = $('grants-status');
  try {
    showGrants((await request('revoke_grant', { site, action_kind: kind })).grants ?? []);
    status.textContent = `Revoked: ${what}. Errand asks again.`;
  } catch (e) {
    status.textContent = `Not revoked: ${e.message}`;
  }
}

/** Loads the settings into the form (when the tab is shown). */
export async function showSettings() {
  loadGrants();
  if (dirty) return; // keep what the user is typing
  say('Loading…');
  try {
    await loadSettings();
    say('');
  } catch (e) {
    say(`Cannot read the settings: ${e.message}`, 'error');
  }
}

export function initSettings() {
  onSettings(show);
  for (const kind of ['input', 'change']) {
    $('settings-form').addEventListener(kind, () => { dirty = true; });
  }
  $('settings-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!current) {
      await showSettings();
      if (!current) return;
    }
    const update = changes(current);
    if (!Object.keys(update).length) {
      dirty = false;
      say('Nothing changed.');
      return;
    }
    $('save-settings').disabled = true;
    say('Saving…');
    try {
      dirty = false;
      await saveSettings(update);
      say('Saved. The next step uses them.', 'ok');
    } catch (err) {
      dirty = true;
      say(`Not saved: ${err.message}`, 'error');
    } finally {
      $('save-settings').disabled = false;
    }
  });
  $('remove-key').addEventListener('click', async () => {
    say('Removing the key…');
    try {
      await saveSettings({ api_key: '' });
      say('The key was removed.', 'ok');
    } catch (err) {
      say(`The key was not removed: ${err.message}`, 'error');
    }
  });
  $('test-connection').addEventListener('click', testConnection);
}

const LEVEL_TEXT = { ok: 'OK', info: 'Note', warn: 'Warning', problem: 'Problem' };

async function testConnection() {
  const out = $('connection');
  const button = $('test-connection');
  button.disabled = true;
  out.replaceChildren(h('p', { class: 'muted busy' }, 'Asking the model…'));
  try {
    // Unsaved changes would not be tested: save them first.
    if (current) {
      const update = changes(current);
      if (Object.keys(update).length) {
        dirty = false;
        await saveSettings(update);
      }
    }
    const reply = await request('test_connection');
    out.replaceChildren(
      h('p', { class: `verdict ${reply.ok ? 'ok' : 'bad'}` },
        reply.ok ? 'The model answers.' : 'The model cannot be used yet:'),
      h('ul', { class: 'checks' },
        (reply.checks ?? []).map((c) => h('li', { class: `check level-${c.level}` },
          h('span', { class: 'level' }, LEVEL_TEXT[c.level] ?? c.level),
          h('span', {}, h('b', {}, c.subject), ' ', c.detail)))),
    );
  } catch (e) {
    out.replaceChildren(h('p', { class: 'verdict bad' }, `The check did not run: ${e.message}`));
  } finally {
    button.disabled = false;
    out.scrollIntoView({ block: 'nearest' });
  }
}
