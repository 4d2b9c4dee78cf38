// Errand's side panel: tabs (Task, History, Settings, Profile) and the
// notices a new user meets. It loads and relays; the host decides. Every
// message is built and checked by the Rust protocol crate (see host.js).

import { $, copyText } from './dom.js';
import { connect, on, refreshStatus } from './host.js';
import { initTask, setTabOpener } from './task.js';
import { initHistory, showHistory } from './history.js';
import { initSettings, showSettings } from './settings.js';
import { initProfile, showProfile } from './profile.js';

// ---- tabs (a WAI-ARIA tablist: arrows, Home and End move between tabs) ----

const TABS = ['task', 'history', 'settings', 'profile'];
const ON_SHOW = { history: showHistory, settings: showSettings, profile: showProfile };

const scrolled = {}; // each tab's scroll position, kept while another is shown

function openTab(name, { focus = false } = {}) {
  const main = document.querySelector('main');
  const before = document.body.dataset.tab;
  if (before) scrolled[before] = main.scrollTop;
  for (const t of TABS) {
    const tab = $(`tab-${t}`);
    const selected = t === name;
    tab.setAttribute('aria-selected', String(selected));
    tab.tabIndex = selected ? 0 : -1;
    $(`view-${t}`).hidden = !selected;
  }
  document.body.dataset.tab = name;
  if (before !== name) main.scrollTop = scrolled[name] ?? 0;
  if (focus) $(`tab-${name}`).focus();
  ON_SHOW[name]?.();
}

$('tabs').addEventListener('click', (e) => {
  const tab = e.target.closest('[role="tab"]');
  if (tab) openTab(tab.id.replace('tab-', ''));
});
$('tabs').addEventListener('keydown', (e) => {
  const current = TABS.indexOf(document.body.dataset.tab ?? 'task');
  const to = {
    ArrowRight: (current + 1) % TABS.length,
    ArrowLeft: (current + TABS.length - 1) % TABS.length,
    Home: 0,
    End: TABS.length - 1,
  }[e.key];
  if (to == null) return;
  e.preventDefault();
  openTab(TABS[to], { focus: true });
});

// ---- the host's state ----

function setHost(state, text) {
  const el = $('host');
  el.dataset.state = state;
  el.textContent = text;
}

on('host', (state, detail) => {
  if (state === 'unavailable') {
    setHost('unavailable', 'Not connected');
    $('notice-host').hidden = false;
    // The service worker's message ends with the browser's reason in brackets.
    const reason = /\(([^()]*)\)\s*$/.exec(detail ?? '')?.[1] ?? detail;
    $('notice-host-detail').textContent = reason ? `The browser says: ${reason}` : '';
  } else if (state === 'connected') {
    $('notice-host').hidden = true;
  }
});

on('status', (status) => {
  setHost('connected', `Connected · ${status.model}`);
  $('host').title = `Errand ${status.host_version} · ${status.base_url}`;
});

$('retry-host').addEventListener('click', () => {
  setHost('connecting', 'Connecting…');
  refreshStatus();
});
$('copy-install').addEventListener('click', async () => {
  const ok = await copyText($('install-command').textContent);
  $('copy-install').textContent = ok ? 'Copied' : 'Copy failed';
  setTimeout(() => { $('copy-install').textContent = 'Copy'; }, 1500);
});
$('open-settings').addEventListener('click', () => openTab('settings', { focus: true }));

setTabOpener((name) => openTab(name));
initTask();
initHistory((name) => openTab(name));
initSettings();
initProfile();
openTab('task');
connect();
refreshStatus();
