// The Profile tab: the facts Errand fills forms with, and secrets (names
// and sites only: a secret's value is never shown again).

import { $, h, lines } from './dom.js';
import { request } from './host.js';

function say(text, state = '') {
  const el = $('profile-status');
  el.textContent = text;
  el.dataset.state = state;
}

function render(profile) {
  const facts = profile.facts ?? [];
  $('facts').replaceChildren(...facts.map(factRow));
  if (!facts.length) $('facts').append(h('li', { class: 'muted empty-row' }, 'No details yet. Add your name, e-mail, address…'));
  const secrets = profile.secrets ?? [];
  $('secrets').replaceChildren(...secrets.map(secretRow));
  if (!secrets.length) $('secrets').append(h('li', { class: 'muted empty-row' }, 'No secrets.'));
}

function factRow(fact) {
  const id = `fact-${fact.name.replace(/[^a-z0-9_-]/gi, '_')}`;
  const input = h('input', { type: 'text', id, value: fact.value, autocomplete: 'off' });
  const save = h('button', { type: 'button', class: 'small', disabled: true }, 'Save');
  input.addEventListener('input', () => { save.disabled = input.value === fact.value; });
  input.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); save.click(); } });
  save.addEventListener('click', () => change('set_fact', { name: fact.name, value: input.value }, `Saved ${fact.name}.`));
  return h('li', { class: 'row fact', dataset: { name: fact.name } },
    h('label', { for: id, class: 'name' }, fact.name),
    h('div', { class: 'edit' }, input, save, forgetButton(fact.name)));
}

function secretRow(secret) {
  return h('li', { class: 'row secret', dataset: { name: secret.name } },
    h('span', { class: 'name' }, secret.name),
    h('div', { class: 'edit' },
      h('span', { class: 'masked', 'aria-label': 'hidden value' }, '••••••••'),
      forgetButton(secret.name)),
    h('span', { class: 'origins muted' }, `Only on: ${(secret.origins ?? []).join(', ') || 'no site'}; ${secret.any_field ? 'any field' : 'password, code and card fields only'}`));
}

function forgetButton(name) {
  return h('button', {
    type: 'button', class: 'small danger forget', 'aria-label': `Forget ${name}`,
    onclick: () => change('forget', { name }, `Forgot ${name}.`),
  }, 'Forget');
}

async function change(kind, fields, done) {
  say('Saving…');
  try {
    const reply = await request(kind, fields);
    render(reply);
    say(done, 'ok');
    return true;
  } catch (e) {
    say(`Not saved: ${e.message}`, 'error');
    return false;
  }
}

/** Loads the profile (when the tab is shown). */
export async function showProfile() {
  say('Loading…');
  try {
    render(await request('get_profile'));
    say('');
  } catch (e) {
    say(`Cannot read the profile: ${e.message}`, 'error');
  }
}

export function initProfile() {
  $('add-fact').addEventListener('submit', async (e) => {
    e.preventDefault();
    const name = $('fact-name').value.trim();
    const value = $('fact-value').value.trim();
    if (!name || !value) return;
    if (await change('set_fact', { name, value }, `Added ${name}.`)) {
      $('fact-name').value = '';
      $('fact-value').value = '';
      $('fact-name').focus();
    }
  });
  $('add-secret').addEventListener('submit', async (e) => {
    e.preventDefault();
    const name = $('secret-name').value.trim();
    const value = $('secret-value').value;
    const origins = lines($('secret-origins').value.replaceAll(',', '\n'));
    const any_field = $('secret-any-field').checked;
    if (!name || !value || !origins.length) {
      say('A secret needs a name, a value and at least one site.', 'error');
      return;
    }
    // The value leaves the field at once: it is only ever sent to the host.
    $('secret-value').value = '';
    if (await change('set_secret', { name, value, origins, any_field }, `Added the secret ${name}.`)) {
      $('secret-name').value = '';
      $('secret-origins').value = '';
      $('secret-any-field').checked = false;
    }
  });
}
