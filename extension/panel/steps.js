// Step cards: what the model made of the page, what it did, and what each
// action changed (as the host reports it). Used live and in the history.

import { h, spending, $ } from './dom.js';

/** `{"click":{"index":3}}` → `["click", "[3]"]`; `{"fill":{"index":2,"text":"Ada"}}` → `["fill", '[2] "Ada"']`. */
export function describe(action) {
  const [name, args] = Object.entries(action ?? {})[0] ?? ['?', {}];
  const parts = [];
  if (args && args.index != null) parts.push(`[${args.index}]`);
  for (const [k, v] of Object.entries(args ?? {})) {
    if (k === 'index') continue;
    parts.push(typeof v === 'string' ? JSON.stringify(v) : `${k}=${JSON.stringify(v)}`);
  }
  return [name.replaceAll('_', ' '), parts.join(' ')];
}

/** One step as a card (`li.step`). */
export function stepCard(step) {
  const li = h('li', { class: 'step', dataset: { step: String(step.step) } });
  li.append(
    h('div', { class: 'step-head' },
      h('span', { class: 'step-no' }, `Step ${step.step}`),
      step.next_goal ? h('span', { class: 'goal' }, step.next_goal) : null),
  );
  if (step.evaluation) li.append(h('p', { class: 'eval' }, step.evaluation));
  const list = h('ul', { class: 'actions' });
  for (const record of step.actions ?? []) {
    if (record.action?.done) {
      // The answer itself is shown below the steps.
      list.append(h('li', { class: `action ${record.ok ? 'ok' : 'failed'}` },
        h('span', { class: 'mark', 'aria-hidden': 'true' }, record.ok ? '✓' : '✗'),
        h('span', { class: 'what' }, h('b', {}, record.action.done.success === false ? 'gave up' : 'finished'))));
      continue;
    }
    if (record.action?.ask_user) {
      list.append(h('li', { class: 'action ok' },
        h('span', { class: 'mark', 'aria-hidden': 'true' }, '?'),
        h('span', { class: 'what' }, h('b', {}, 'asked you'), ` ${record.action.ask_user.question ?? ''}`),
        record.detail ? h('span', { class: 'detail' }, record.detail) : null));
      continue;
    }
    const [name, args] = describe(record.action);
    list.append(
      h('li', { class: `action ${record.ok ? 'ok' : 'failed'}` },
        h('span', { class: 'mark', 'aria-hidden': 'true' }, record.ok ? '✓' : '✗'),
        h('span', { class: 'visually-hidden' }, record.ok ? 'Worked: ' : 'Failed: '),
        h('span', { class: 'what' }, h('b', {}, name), args ? ` ${args}` : ''),
        record.detail ? h('span', { class: 'detail' }, record.detail) : null),
    );
  }
  if (list.children.length) li.append(list);
  if (step.screenshot) {
    const img = h('img', {
      class: 'thumb', src: step.screenshot, alt: `What the model saw at step ${step.step} (click to enlarge)`,
      loading: 'lazy', tabindex: '0', role: 'button',
    });
    const open = () => showScreenshot(step.screenshot, `What the model saw at step ${step.step}`);
    img.addEventListener('click', open);
    img.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); open(); }
    });
    li.append(img);
  }
  const spent = spending(step.total_tokens, step.total_cost_usd);
  if (spent) li.append(h('div', { class: 'meta' }, `So far: ${spent}`));
  return li;
}

function showScreenshot(src, alt) {
  const dialog = $('shot-dialog');
  const img = $('shot-full');
  img.src = src;
  img.alt = alt;
  dialog.showModal();
}
