// The History tab: past tasks, searchable; each opens with its steps and
// can be run again in the current tab.

import { $, h, when, spending, copyButton } from './dom.js';
import { request } from './host.js';
import { stepCard } from './steps.js';
import { runAgain, runRecipe } from './task.js';

const STATUS_TEXT = {
  running: 'Running',
  done: 'Done',
  stopped: 'Stopped',
  failed: 'Failed',
  step_limit: 'Out of steps',
  interrupted: 'Interrupted',
};

let openTab = () => {};
let opened = null; // the task shown in the detail view
let searchTimer = null;
let generation = 0;

function say(text) {
  $('history-status').textContent = text;
}

/** Lists the past tasks (matching the search box). */
export async function showHistory() {
  if (opened) return;
  const query = $('history-q').value.trim();
  const mine = ++generation;
  say(query ? 'Searching…' : 'Loading…');
  try {
    const reply = await request('list_tasks', query ? { query, limit: 50 } : { limit: 50 });
    if (mine !== generation) return;
    render(reply.tasks ?? [], query);
  } catch (e) {
    if (mine !== generation) return;
    $('history-list').replaceChildren();
    say(`Cannot read the history: ${e.message}`);
  }
  showRecipes();
}

// ---- recipes: saved tasks replayed without the model ----

async function showRecipes(request_ = 'list_recipes', fields = {}) {
  try {
    const reply = await request(request_, fields);
    renderRecipes(reply.recipes ?? []);
  } catch (e) {
    $('recipe-status').textContent = `Cannot read the recipes: ${e.message}`;
  }
}

function renderRecipes(recipes) {
  $('recipe-status').textContent = recipes.length ? '' : 'No recipes yet: open a finished task and save it as a recipe.';
  $('recipe-list').replaceChildren(...recipes.map((r) => {
    const inputs = r.params.map(([name, recorded]) => h('label', { class: 'param' }, `${name} `,
      h('input', { type: 'text', value: recorded, dataset: { param: name } })));
    const run = () => {
      const params = {};
      for (const i of inputs) {
        const input = i.querySelector('input');
        params[input.dataset.param] = input.value;
      }
      openTab('task');
      runRecipe(r.name, params);
    };
    return h('li', { class: 'recipe', dataset: { recipe: r.name } },
      h('span', { class: 'title' }, r.name),
      h('span', { class: 'snippet' }, `${r.task} · ${r.steps} step${r.steps === 1 ? '' : 's'}`),
      ...inputs,
      r.repairs?.length
        ? h('div', { class: 'repairs' },
          h('p', {}, `A replay repaired: ${r.repairs.join('; ')}`),
          h('button', { type: 'button', class: 'small accept-repairs', onclick: () => showRecipes('accept_repairs', { name: r.name }) }, 'Accept the repair'))
        : null,
      h('div', { class: 'buttons' }, h('button', { type: 'button', class: 'small run-recipe', onclick: run }, 'Run')));
  }));
}

function render(tasks, query) {
  const list = $('history-list');
  list.replaceChildren(...tasks.map((t) => h('li', { class: 'past', dataset: { task: t.task_id } },
    h('button', { type: 'button', class: 'open', onclick: () => openTask(t.task_id) },
      h('span', { class: 'title' }, t.task),
      t.answer || t.error ? h('span', { class: 'snippet' }, t.answer || t.error) : null,
      h('span', { class: 'meta' },
        h('span', { class: `badge ${t.status}` }, STATUS_TEXT[t.status] ?? t.status),
        ` ${when(t.started_at)}`,
        t.steps ? ` · ${t.steps} step${t.steps === 1 ? '' : 's'}` : '',
        spending(t.tokens, t.cost_usd) ? ` · ${spending(t.tokens, t.cost_usd)}` : '')))));
  if (!tasks.length) say(query ? `No past task matches “${query}”.` : 'No tasks yet. Tasks you run appear here.');
  else say(query ? `${tasks.length} matching task${tasks.length === 1 ? '' : 's'}.` : `${tasks.length} recent task${tasks.length === 1 ? '' : 's'}.`);
}

async function openTask(taskId) {
  say('Opening…');
  let detail;
  try {
    detail = await request('get_task', { task_id: taskId });
  } catch (e) {
    say(`Cannot open the task: ${e.message}`);
    return;
  }
  say('');
  opened = detail.task;
  const t = detail.task;
  $('detail-title').textContent = t.task;
  $('detail-meta').textContent = [
    STATUS_TEXT[t.status] ?? t.status,
    when(t.started_at),
    hostOf(t.url),
    spending(t.tokens, t.cost_usd),
  ].filter(Boolean).join(' · ');
  const outcome = $('detail-outcome');
  outcome.replaceChildren();
  if (t.answer) {
    outcome.append(h('section', { class: 'answer', 'aria-label': 'Answer' },
      h('div', { class: 'answer-head' }, h('h3', {}, 'Answer'), copyButton(() => t.answer)),
      h('p', { class: 'answer-text' }, t.answer)));
  }
  if (t.error) outcome.append(h('div', { class: 'problem' }, h('p', {}, `Failed: ${t.error}`)));
  $('detail-steps').replaceChildren(...(detail.steps ?? []).map(stepCard));
  if (!detail.steps?.length) $('detail-steps').append(h('li', { class: 'muted' }, 'No steps were recorded.'));
  $('save-recipe-status').textContent = '';
  $('history-browse').hidden = true;
  $('history-detail').hidden = false;
  $('history-back').focus();
}

function back() {
  opened = null;
  $('history-detail').hidden = true;
  $('history-browse').hidden = false;
  showHistory();
  $('history-q').focus();
}

export function initHistory(tabOpener) {
  openTab = tabOpener;
  $('history-q').addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(showHistory, 250);
  });
  $('history-q').addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      clearTimeout(searchTimer);
      showHistory();
    }
  });
  $('history-back').addEventListener('click', back);
  $('save-recipe').addEventListener('click', async () => {
    if (!opened) return;
    const status = $('save-recipe-status');
    status.textContent = 'Saving…';
    try {
      const reply = await request('save_recipe', { task_id: opened.task_id });
      const saved = (reply.recipes ?? []).filter((r) => r.from_task === opened.task_id);
      status.textContent = saved.length ? `Saved as the recipe “${saved[saved.length - 1].name}”.` : 'Saved.';
    } catch (e) {
      status.textContent = `Not saved: ${e.message}`;
    }
  });
  $('rerun').addEventListener('click', () => {
    if (!opened) return;
    const text = opened.task;
    openTab('task');
    runAgain(text);
  });
  // A task that ends appears in the list at once when it is shown.
  document.addEventListener('errand:task-ended', () => {
    if (!$('view-history').hidden && !opened) showHistory();
  });
}

function hostOf(url) {
  try {
    return url ? new URL(url).host : '';
  } catch {
    return '';
  }
}
