// The Task tab: the task box, the live steps, the controls (stop, pause,
// take over), questions and approvals, the answer and follow-ups.

import { $, h, copyButton, spending } from './dom.js';
import { request, on, state as hostState } from './host.js';
import { stepCard, describe } from './steps.js';
import { cannotRunOn, targetTab, watchTarget } from './page.js';
import { FILL_TASK, PENDING_KEY } from './shortcuts.js';
import { onSettings, loadSettings, saveSettings } from './settings.js';

const s = {
  task: null, // the id of the task shown live
  starting: false,
  paused: null, // null, or {take_over}
  last: null, // {id, text}: the last ended task, which a follow-up continues
  followUp: false,
  turn: null, // the current turn's parts
  restricted: null, // why Errand cannot work on the target tab's page
  tabId: null,
  mcp: null, // the MCP client driving Errand (`errand mcp`), while one does
};

// The host names an MCP session's task "Driven by <client> (MCP)".
const MCP_TASK = /^Driven by (.+) \(MCP\)$/;

const ENDED = new Set(['done', 'stopped', 'failed', 'step_limit', 'interrupted', 'error']);

// ---- status and controls ----

function setStatus(state, text) {
  const el = $('status');
  el.dataset.state = state;
  el.textContent = text;
  refresh();
}

/** Enables what makes sense now. */
function refresh() {
  const active = s.starting || s.task != null;
  const live = s.task != null;
  $('stop').disabled = !active;
  $('pause').disabled = !live || s.paused != null;
  $('takeover').disabled = !live || s.paused != null;
  $('pause').hidden = s.paused != null;
  $('resume').hidden = s.paused == null;
  $('resume').disabled = !live;
  $('takeover').hidden = s.paused != null;
  $('handtab').hidden = !(live && s.mcp && s.tabId != null);
  // An MCP session is not paused: its caller acts one call at a time; Stop ends it.
  if (s.mcp) {
    $('pause').hidden = true;
    $('takeover').hidden = true;
  }
  $('handtab').textContent = s.mcp ? `Let ${s.mcp} use this tab` : '';
  $('controls').dataset.active = String(active);
  // While a task runs the dock holds its status and controls only.
  $('dock').dataset.active = String(active);
  const blocked = hostState() === 'unavailable' || !!s.restricted;
  $('run').disabled = active || blocked;
  $('fill').disabled = active || blocked;
  $('run').title = s.restricted ? 'Errand cannot work on this page' : '';
  const following = s.followUp && s.last != null;
  $('followup').hidden = !following;
  $('followup-task').textContent = following ? s.last.text : '';
  $('task-label').textContent = following
    ? 'What next? Errand goes on from this task.'
    : 'What should Errand do in this tab?';
}

function setMeter(tokens, cost) {
  $('meter').textContent = spending(tokens, cost);
}

// ---- the thread ----

function newTurn(text, { fresh }) {
  if (fresh) $('thread').replaceChildren();
  // Steps, questions and approvals in the order they came.
  const steps = h('ol', { class: 'steps' });
  const asks = steps;
  const result = h('div', { class: 'result' });
  const el = h('article', { class: 'turn' },
    h('div', { class: 'you' }, h('span', { class: 'who' }, 'You'), h('p', { class: 'text' }, text)),
    steps, result);
  $('thread').append(el);
  s.turn = { el, steps, asks, result, text };
  el.scrollIntoView({ block: 'start' });
  return s.turn;
}

function turn() {
  return s.turn ?? newTurn('A task started elsewhere', { fresh: true });
}

// The thread follows the newest step while the user has not scrolled up.
let atEnd = true;

function scrollToEnd() {
  const main = document.querySelector('main');
  main.scrollTop = main.scrollHeight;
  atEnd = true;
}

function followTheEnd() {
  const main = document.querySelector('main');
  main.addEventListener('scroll', () => {
    atEnd = main.scrollTop + main.clientHeight >= main.scrollHeight - 40;
  }, { passive: true });
  // The panel resized, or the dock grew: keep the newest content in view.
  const keep = () => {
    if (atEnd && s.turn && !$('view-task').hidden) main.scrollTop = main.scrollHeight;
  };
  const observer = new ResizeObserver(keep);
  observer.observe(main);
  observer.observe($('dock'));
}

/** Plain words for an error reply. */
export function plainError(e) {
  switch (e?.code) {
    case 'busy': return 'Errand is already doing a task. Stop it, or wait until it ends.';
    case 'host_unavailable': return 'Errand\'s helper program is not running (see the note above).';
    case 'tab_unavailable': return `Errand cannot work in this tab: ${e.message}`;
    case 'no_task': return 'That task is not running any more.';
    case 'not_allowed': return `The panel may not do that: ${e.message}`;
    default: return e?.message ?? String(e);
  }
}

const MODEL_TROUBLE = /model|connect|unreachable|refused|timed? ?out|dns|resolve|api key|401|403|404|429|5\d\d/i;

function problem(text, { settingsHint = false } = {}) {
  const box = h('div', { class: 'problem', role: 'alert' }, h('p', {}, text));
  if (settingsHint) {
    box.append(h('p', { class: 'muted' }, 'Check the model in Settings, then try again.'),
      h('button', { type: 'button', class: 'small', onclick: () => openTab('settings') }, 'Open Settings'));
  }
  return box;
}

let openTab = () => {};
/** How the Task tab switches tabs (set by panel.js). */
export function setTabOpener(fn) {
  openTab = fn;
}

// ---- starting ----

async function start(text, { fillTab, recipe } = {}) {
  const task = text.trim();
  if (!task || s.starting || s.task) return;
  const followUp = s.followUp && s.last && !fillTab;
  let tabId = fillTab;
  if (!followUp && tabId == null) {
    const tab = await targetTab();
    tabId = tab?.id;
  }
  newTurn(task, { fresh: !followUp });
  s.starting = true;
  s.paused = null;
  setMeter(0, null);
  setStatus('running', 'Starting…');
  $('task').value = '';
  try {
    const reply = recipe
      ? await request('run_recipe', tabId == null ? recipe : { ...recipe, tab_id: tabId })
      : followUp
      ? await request('follow_up', { task_id: s.last.id, task })
      : await request('start_task', tabId == null ? { task } : { task, tab_id: tabId });
    s.task = reply.task_id;
    s.turn.el.dataset.task = reply.task_id;
  } catch (e) {
    s.turn.result.append(problem(plainError(e)));
    setStatus('error', plainError(e));
    $('task').value = task;
  } finally {
    s.starting = false;
    refresh();
  }
}

// ---- events ----

function onEvent(taskId, event) {
  if (s.task == null) {
    if (s.starting) return; // our own task's id is on its way
    // A task started elsewhere (another panel, the terminal): show it.
    s.task = taskId;
    newTurn(event.type === 'started' ? event.task : 'A task started elsewhere', { fresh: true });
    s.turn.el.dataset.task = taskId;
  }
  if (taskId !== s.task) return;
  const t = turn();
  switch (event.type) {
    case 'started':
      s.mcp = MCP_TASK.exec(event.task ?? '')?.[1] ?? null;
      setStatus('running', s.mcp ? `Driven by ${s.mcp}.` : `Working on ${hostOf(event.url)}…`);
      break;
    case 'thinking':
      setStatus('running', `Thinking about step ${event.step}…`);
      break;
    case 'step':
      t.steps.append(stepCard(event));
      setMeter(event.total_tokens, event.total_cost_usd);
      if (s.paused == null) setStatus('running', `Step ${event.step} done.`);
      scrollToEnd();
      break;
    case 'question':
      showQuestion(t, event);
      break;
    case 'approval':
      showApproval(t, event);
      break;
    case 'paused':
      s.paused = { take_over: !!event.take_over };
      setStatus('paused', event.take_over
        ? 'You have the page. Do what you need there, then press Resume.'
        : 'Paused. Press Resume to go on.');
      break;
    case 'resumed':
      s.paused = null;
      setStatus('running', 'Going on…');
      break;
    case 'finished':
      finish(t, event.outcome);
      break;
    default:
      break;
  }
}

function hostOf(url) {
  try {
    return new URL(url).host || 'the page';
  } catch {
    return 'the page';
  }
}

const OUTCOME_TEXT = {
  done: 'Done.',
  stopped: 'Stopped.',
  step_limit: 'Stopped: it used every step it was allowed (see Settings to allow more).',
  interrupted: 'Interrupted: the helper program stopped while the task ran.',
};

function finish(t, outcome) {
  // Questions and approvals nobody answered are moot now.
  for (const box of t.asks.querySelectorAll('.ask:not(.answered)')) {
    box.classList.add('answered');
    for (const b of box.querySelectorAll('button, input')) b.disabled = true;
  }
  if (outcome.status === 'done') {
    const answer = outcome.answer ?? '';
    t.result.append(
      h('section', { class: `answer ${outcome.success === false ? 'unsuccessful' : ''}`, 'aria-label': 'Answer' },
        h('div', { class: 'answer-head' },
          h('h2', {}, outcome.success === false ? 'Could not finish' : 'Answer'),
          copyButton(() => answer)),
        h('p', { class: 'answer-text' }, answer)),
    );
    setStatus('done', outcome.success === false ? 'Finished without success.' : 'Done.');
  } else if (outcome.status === 'failed') {
    const error = outcome.error ?? 'unknown error';
    t.result.append(problem(`Failed: ${error}`, { settingsHint: MODEL_TROUBLE.test(error) }));
    // The details are in the thread (an alert); the status line stays short.
    setStatus('failed', 'Failed: see why above.');
  } else {
    t.result.append(h('p', { class: 'ended muted' }, OUTCOME_TEXT[outcome.status] ?? outcome.status));
    setStatus(outcome.status, OUTCOME_TEXT[outcome.status] ?? outcome.status);
  }
  s.last = { id: s.task, text: t.text };
  s.followUp = true;
  s.task = null;
  s.mcp = null;
  s.paused = null;
  refresh();
  scrollToEnd();
  document.dispatchEvent(new CustomEvent('errand:task-ended'));
}

// The agent asked something (`ask_user`): the task waits for the answer.
function showQuestion(t, event) {
  const input = h('input', { type: 'text', class: 'reply', autocomplete: 'off', required: true, id: `reply-${event.step}` });
  const form = h('form', { class: 'ask question' },
    h('label', { for: input.id }, h('span', { class: 'who' }, 'Errand asks'), h('span', { class: 'q' }, event.question)),
    input,
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary' }, 'Answer')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || form.classList.contains('answered')) return;
    form.classList.add('answered');
    for (const b of form.querySelectorAll('button, input')) b.disabled = true;
    setStatus('running', 'Thanks, going on…');
    try {
      await request('answer', s.task ? { task_id: s.task, text } : { text });
      form.append(h('p', { class: 'decision' }, `You answered: ${text}`));
    } catch (err) {
      form.classList.remove('answered');
      for (const b of form.querySelectorAll('button, input')) b.disabled = false;
      setStatus('waiting', plainError(err));
    }
  });
  t.asks.append(h('li', { class: 'ask-item' }, form));
  setStatus('waiting', 'Errand needs your answer.');
  scrollToEnd();
  input.focus();
}

// The next action needs the user's approval.
function showApproval(t, event) {
  const [name, args] = describe(event.action);
  const headId = `approval-${event.step}-${t.asks.children.length}-${Date.now()}`;
  const box = h('section', { class: 'ask approval', 'aria-labelledby': headId },
    h('h3', { id: headId }, h('span', { class: 'who' }, 'Approve this?'), event.summary || `${name} ${args}`),
    event.element ? h('p', { class: 'element' }, 'On ', h('code', {}, event.element)) : null,
    event.reason ? h('p', { class: 'reason muted' }, event.reason) : null);
  const approve = h('button', { type: 'button', class: 'primary approve' }, 'Approve');
  // An approval for the rest of the task, or always on the site, covers
  // this kind of action there (the host keeps and judges it).
  const site = event.site || '';
  const forTask = h('button', { type: 'button', class: 'approve-task' },
    site ? `Approve for this task on ${site}` : 'Approve for this task');
  const always = site
    ? h('button', { type: 'button', class: 'approve-site' }, `Always on ${site}`)
    : null;
  const reject = h('button', { type: 'button', class: 'danger reject' }, 'Reject');
  const buttons = [approve, forTask, always, reject].filter(Boolean);
  const said = {
    once: 'You approved it.',
    task: `You approved this kind of action on ${site || 'this site'} for this task.`,
    site: `You approved this kind of action on ${site} from now on (Settings lists it).`,
  };
  const decide = async (approved, scope) => {
    for (const b of buttons) b.disabled = true;
    try {
      await request('approve', { task_id: s.task, approved, ...(scope !== 'once' ? { scope } : {}) });
      box.classList.add('answered', approved ? 'approved' : 'rejected');
      box.append(h('p', { class: 'decision' }, approved ? said[scope] : 'You rejected it. Errand will not do it.'));
      setStatus('running', approved ? 'Approved, going on…' : 'Rejected, going on…');
    } catch (err) {
      for (const b of buttons) b.disabled = false;
      setStatus('waiting', plainError(err));
    }
  };
  approve.addEventListener('click', () => decide(true, 'once'));
  forTask.addEventListener('click', () => decide(true, 'task'));
  always?.addEventListener('click', () => decide(true, 'site'));
  reject.addEventListener('click', () => decide(false, 'once'));
  box.append(h('div', { class: 'buttons' }, ...buttons));
  t.asks.append(h('li', { class: 'ask-item' }, box));
  setStatus('waiting', 'Errand waits for your approval.');
  scrollToEnd();
  approve.focus();
}

// ---- controls ----

async function control(kind, fields, busyText) {
  const before = $('status').dataset.state;
  try {
    if (busyText) setStatus(before === 'paused' ? 'paused' : 'running', busyText);
    await request(kind, { task_id: s.task ?? undefined, ...fields });
  } catch (e) {
    setStatus(before, plainError(e));
  }
}

// ---- the page and the pending task from the right-click menu ----

async function onTarget(tab) {
  s.tabId = tab?.id ?? null;
  s.restricted = await cannotRunOn(tab?.url || tab?.pendingUrl);
  const note = $('page-note');
  note.hidden = !s.restricted;
  note.textContent = s.restricted ? `Errand cannot work on this page. ${s.restricted}` : '';
  refresh();
  takePending();
}

async function takePending() {
  if (hostState() !== 'connected' || s.starting || s.task) return;
  const stored = (await chrome.storage.session.get(PENDING_KEY))[PENDING_KEY];
  if (!stored) return;
  if (Date.now() - (stored.at ?? 0) > 120000) {
    await chrome.storage.session.remove(PENDING_KEY);
    return;
  }
  if (s.tabId != null && stored.tabId !== s.tabId) return;
  await chrome.storage.session.remove(PENDING_KEY);
  s.followUp = false;
  openTab('task');
  start(stored.task, { fillTab: stored.tabId });
}

// ---- status from the host ----

async function onStatus(status) {
  const notice = $('notice-model');
  notice.hidden = status.configured !== false;
  $('notice-model-url').textContent = status.base_url || 'http://127.0.0.1:11434/v1';
  if (status.running_task && s.task == null && !s.starting) {
    s.task = status.running_task;
    s.paused = status.paused ? { take_over: false } : null;
    const t = newTurn('A task is running', { fresh: true });
    t.el.dataset.task = s.task;
    setStatus(status.paused ? 'paused' : 'running', status.paused ? 'Paused. Press Resume to go on.' : 'A task is running…');
    try {
      const detail = await request('get_task', { task_id: status.running_task });
      t.el.querySelector('.you .text').textContent = detail.task.task;
      t.text = detail.task.task;
      for (const step of detail.steps ?? []) t.steps.append(stepCard(step));
    } catch {
      // The steps so far are not essential: the next ones arrive live.
    }
  } else if (s.task != null && !s.starting && status.running_task !== s.task) {
    // The task ended while this panel was cut off (the browser restarted
    // Errand's service worker, or the host stopped): show how it ended, as
    // the host recorded it.
    const id = s.task;
    try {
      const { task } = await request('get_task', { task_id: id });
      if (s.task === id && task.status !== 'running') {
        finish(turn(), { status: task.status, answer: task.answer, error: task.error, steps: task.steps });
      }
    } catch (e) {
      if (s.task === id) finish(turn(), { status: 'failed', error: `the task's end was not heard: ${plainError(e)}` });
    }
  }
  refresh();
  takePending();
  loadSettings().catch(() => {});
}

export function initTask() {
  $('ask').addEventListener('submit', (e) => {
    e.preventDefault();
    if (!$('run').disabled) start($('task').value);
  });
  $('task').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('ask').requestSubmit();
    }
  });
  $('fill').addEventListener('click', () => {
    s.followUp = false;
    start(FILL_TASK);
  });
  $('new-task').addEventListener('click', () => {
    s.followUp = false;
    refresh();
    $('task').focus();
  });
  $('stop').addEventListener('click', () => control('stop_task', {}, 'Stopping…'));
  $('handtab').addEventListener('click', async () => {
    const client = s.mcp;
    try {
      await request('hand_tab', { tab_id: s.tabId });
      turn().result.append(h('p', { class: 'note' }, `${client} may use this tab now.`));
    } catch (e) {
      turn().result.append(problem(plainError(e)));
    }
  });
  $('pause').addEventListener('click', () => control('pause_task', { take_over: false }, 'Pausing…'));
  $('takeover').addEventListener('click', () => control('pause_task', { take_over: true }, 'Handing the page over…'));
  $('resume').addEventListener('click', () => control('resume_task', {}, 'Resuming…'));

  const marks = $('marks-toggle');
  onSettings((settings) => {
    marks.checked = !!settings.marks;
    marks.disabled = (settings.locked ?? []).includes('marks');
  });
  marks.addEventListener('change', async () => {
    const want = marks.checked;
    try {
      await saveSettings({ marks: want });
    } catch (e) {
      marks.checked = !want;
      setStatus($('status').dataset.state, `Could not change the marks: ${plainError(e)}`);
    }
  });

  on('event', onEvent);
  on('status', onStatus);
  on('host', (state) => {
    const idle = !s.starting && s.task == null && $('status').dataset.state === 'idle';
    if (idle) setStatus('idle', state === 'unavailable' ? 'Not connected to the helper program.' : 'Ready.');
    else refresh();
  });
  chrome.storage.onChanged.addListener((changes, area) => {
    if (area === 'session' && changes[PENDING_KEY]?.newValue) takePending();
  });
  watchTarget(onTarget);
  followTheEnd();
  refresh();
}

/** Starts `text` as a new task in the target tab (History's Rerun). */
export function runAgain(text) {
  if (s.task || s.starting) {
    setStatus($('status').dataset.state, 'Errand is already doing a task. Stop it first.');
    return;
  }
  s.followUp = false;
  start(text);
}

/** Replays a recipe (History tab) in the current tab. */
export function runRecipe(name, params) {
  if (s.task || s.starting) {
    setStatus($('status').dataset.state, 'Errand is already doing a task. Stop it first.');
    return;
  }
  s.followUp = false;
  start(`Run the recipe “${name}”`, { recipe: { name, params } });
}

export const isEnded = (state) => ENDED.has(state);
