// Which tab the panel works on, and whether Errand can run there.

import { STORE_PAGES } from '../generated/rules.js';

/** Why Errand cannot work on `url`, or `null` when it can. */
export async function cannotRunOn(url) {
  if (!url) return null; // not known (yet): let the host decide
  let u;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  const scheme = u.protocol;
  const browserPages = ['chrome:', 'edge:', 'brave:', 'opera:', 'vivaldi:', 'chrome-untrusted:',
    'chrome-search:', 'devtools:', 'about:'];
  if (browserPages.includes(scheme)) {
    return 'This is one of the browser\'s own pages; extensions cannot work on them.';
  }
  if (scheme === 'chrome-extension:' || scheme === 'extension:' || scheme === 'moz-extension:') {
    return 'This page belongs to an extension; other extensions cannot work on it.';
  }
  if (scheme === 'view-source:') return 'This is a page\'s source view; extensions cannot work on it.';
  // The same list as the host's (native-host/src/sites.rs).
  const host = u.hostname.toLowerCase();
  const path = u.pathname.toLowerCase();
  if (STORE_PAGES.some((p) => host === p.host && path.startsWith(p.path))) {
    return 'The browser does not let extensions work on its extension store.';
  }
  // The host never opens local files (sites.rs), whatever the browser allows.
  if (scheme === 'file:' || scheme === 'filesystem:') {
    return 'This is a file on your computer; Errand works only on web pages.';
  }
  if (scheme === 'data:' || scheme === 'javascript:' || scheme === 'blob:') {
    return 'Extensions cannot work on this kind of page.';
  }
  return null;
}

const fixedTab = Number(new URLSearchParams(location.search).get('tab')) || null;

/** The tab the panel works on: `?tab=` when given, else its window's active tab. */
export async function targetTab() {
  if (fixedTab != null) {
    try {
      return await chrome.tabs.get(fixedTab);
    } catch {
      return null;
    }
  }
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab ?? null;
}

/** Calls `fn(tab)` now and whenever the target tab or its URL changes. */
export function watchTarget(fn) {
  let last = '';
  const check = async () => {
    const tab = await targetTab();
    const key = `${tab?.id}|${tab?.url ?? tab?.pendingUrl ?? ''}`;
    if (key === last) return;
    last = key;
    fn(tab);
  };
  chrome.tabs.onActivated.addListener(check);
  chrome.tabs.onUpdated.addListener((tabId, change) => {
    if (change.url || change.status === 'complete') check();
  });
  chrome.windows?.onFocusChanged?.addListener(check);
  check();
}
