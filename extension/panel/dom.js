// Small DOM helpers for the side panel's modules.

export const $ = (id) => document.getElementById(id);

/**
 * `h('li', {class: 'step', dataset: {step: 2}}, 'text', child)`: an element
 * with attributes, properties (`on…` handlers, `dataset`, `hidden`, `value`…)
 * and children (strings become text; null and false are skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value == null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key in el && typeof value !== 'string') el[key] = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child == null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Copies `text`; resolves whether it worked. */
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = h('textarea', { class: 'visually-hidden', 'aria-hidden': 'true' });
    area.value = text;
    document.body.append(area);
    area.select();
    const ok = document.execCommand('copy');
    area.remove();
    return ok;
  }
}

/** A button that copies `text()` and says so for a moment. */
export function copyButton(text, label = 'Copy') {
  const button = h('button', { type: 'button', class: 'small copy' }, label);
  button.addEventListener('click', async () => {
    const ok = await copyText(text());
    button.textContent = ok ? 'Copied' : 'Copy failed';
    setTimeout(() => { button.textContent = label; }, 1500);
  });
  return button;
}

/** `1234567` → `1,234,567`. */
export const number = (n) => Number(n ?? 0).toLocaleString('en-US');

/** Dollars for a running total: more digits for small sums. */
export function dollars(usd) {
  if (usd == null) return '';
  if (usd === 0) return '$0';
  if (usd < 0.01) return `$${usd.toFixed(4)}`;
  return `$${usd.toFixed(2)}`;
}

/** Tokens and cost in one short phrase. */
export function spending(tokens, costUsd) {
  const parts = [];
  if (tokens) parts.push(`${number(tokens)} tokens`);
  if (costUsd != null && costUsd > 0) parts.push(dollars(costUsd));
  return parts.join(' · ');
}

/** An RFC 3339 time as the user reads it. */
export function when(rfc3339) {
  const d = new Date(rfc3339);
  if (Number.isNaN(d.getTime())) return rfc3339 ?? '';
  const today = new Date();
  const sameDay = d.toDateString() === today.toDateString();
  return sameDay
    ? d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString(undefined, { day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit' });
}

/** Lines of a textarea, trimmed, without empty ones. */
export const lines = (text) => text.split('\n').map((l) => l.trim()).filter(Boolean);
