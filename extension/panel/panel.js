// Errand's side panel: the task box, the live steps, Stop. Messages are built
// and checked by the Rust protocol crate (`envelope`, `check`).
import init, { envelope, check } from '../pkg/wasm/errand_page.js';

const $ = (id) => document.getElementById(id);
const crate = init({ module_or_path: new URL('../pkg/wasm/errand_page_bg.wasm', import.meta.url) });

let nextId = Math.floor(Math.random() * 2 ** 40);
const waiting = new Map(); // request id → what it was for
let currentTask = null;
let port = null;

async function send(kind, fields = {}) {
  await crate;
  const msg = JSON.parse(envelope(nextId++, undefined, kind, JSON.stringify(fields)));
  waiting.set(msg.id, kind);
  port.postMessage(msg);
  return msg.id;
}

function connect() {
  port = chrome.runtime.connect({ name: 'panel' });
  port.onMessage.addListener((raw) => crate.then(() => receive(raw)));
  port.onDisconnect.addListener(() => setTimeout(connect, 500));
  send('get_status');
}

function setHost(state, text) {
  const el = $('host');
  el.dataset.state = state;
  el.textContent = text;
}

function setStatus(state, text) {
  const el = $('status');
  el.dataset.state = state;
  el.textContent = text;
  const busy = state === 'running';
  $('run').disabled = busy;
  $('stop').disabled = !busy;
}

function receive(raw) {
  let msg;
  try {
    msg = JSON.parse(check(JSON.stringify(raw)));
  } catch (e) {
    console.error('errand: unreadable message', e);
    return;
  }
  const askedFor = msg.re != null ? waiting.get(msg.re) : undefined;
  if (msg.re != null) waiting.delete(msg.re);
  switch (msg.kind) {
    case 'status':
      setHost('connected', `Connected · ${msg.model}`);
      if (msg.running_task && !currentTask) {
        currentTask = msg.running_task;
        setStatus('running', 'A task is running…');
      }
      break;
    case 'task_accepted':
      currentTask = msg.task_id;
      break;
    case 'task_event':
      if (!currentTask || msg.task_id === currentTask) {
        currentTask = msg.task_id;
        showEvent(msg.event);
      }
      break;
    case 'error':
      if (msg.code === 'host_unavailable') {
        setHost('unavailable', msg.message);
        if (askedFor === 'start_task' || currentTask) setStatus('error', msg.message);
      } else if (askedFor) {
        setStatus('error', msg.message);
      }
      break;
    default:
      break;
  }
}

function showEvent(event) {
  switch (event.type) {
    case 'started':
      setStatus('running', `Working in ${event.url || 'the tab'}…`);
      break;
    case 'thinking':
      setStatus('running', `Thinking about step ${event.step}…`);
      break;
    case 'step':
      $('steps').append(stepCard(event));
      setStatus('running', `Step ${event.step} done.`);
      break;
    case 'question':
      showQuestion(event.question);
      break;
    case 'finished':
      $('question-box').hidden = true;
      finish(event.outcome);
      break;
    default:
      break;
  }
}

function stepCard(step) {
  const li = document.createElement('li');
  li.className = 'step';
  li.dataset.step = String(step.step);
  const goal = document.createElement('div');
  goal.className = 'goal';
  goal.textContent = `${step.step}. ${step.next_goal || 'Next step'}`;
  li.append(goal);
  if (step.evaluation) {
    const ev = document.createElement('div');
    ev.className = 'eval';
    ev.textContent = step.evaluation;
    li.append(ev);
  }
  const list = document.createElement('ul');
  for (const record of step.actions) {
    const item = document.createElement('li');
    item.className = record.ok ? 'ok' : 'failed';
    item.textContent = `${describe(record.action)} → ${record.detail}`;
    list.append(item);
  }
  li.append(list);
  return li;
}

/** `{"click":{"index":3}}` → `click [3]`; `{"fill":{"index":2,"text":"Ada"}}` → `fill [2] "Ada"`. */
function describe(action) {
  const [name, args] = Object.entries(action)[0] ?? ['?', {}];
  const parts = [name];
  if (args && args.index != null) parts.push(`[${args.index}]`);
  for (const [k, v] of Object.entries(args ?? {})) {
    if (k !== 'index') parts.push(typeof v === 'string' ? JSON.stringify(v) : `${k}=${JSON.stringify(v)}`);
  }
  return parts.join(' ');
}

const OUTCOME_TEXT = {
  done: 'Done.',
  stopped: 'Stopped.',
  failed: 'Failed.',
  step_limit: 'Stopped: it used every step it was allowed.',
  interrupted: 'Interrupted: the host stopped while the task ran.',
};

function finish(outcome) {
  const text = outcome.status === 'failed' ? `Failed: ${outcome.error}` : OUTCOME_TEXT[outcome.status] ?? outcome.status;
  setStatus(outcome.status, text);
  if (outcome.status === 'done') {
    $('answer').textContent = outcome.answer;
    $('answer-box').hidden = false;
  }
  currentTask = null;
}

// The agent asked the user something (`ask_user`): the task waits for the answer.
function showQuestion(question) {
  setStatus('waiting', 'Errand needs your answer.');
  $('question').textContent = question;
  $('reply').value = '';
  $('question-box').hidden = false;
  $('reply').focus();
}

$('question-box').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = $('reply').value.trim();
  if (!text) return;
  $('question-box').hidden = true;
  setStatus('running', 'Thanks, going on…');
  send('answer', currentTask ? { task_id: currentTask, text } : { text });
});

async function targetTab() {
  const fromUrl = new URLSearchParams(location.search).get('tab');
  if (fromUrl) return Number(fromUrl);
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab?.id;
}

$('ask').addEventListener('submit', async (e) => {
  e.preventDefault();
  const task = $('task').value.trim();
  if (!task) return;
  $('steps').replaceChildren();
  $('answer-box').hidden = true;
  currentTask = null;
  setStatus('running', 'Starting…');
  const tab_id = await targetTab();
  send('start_task', tab_id == null ? { task } : { task, tab_id });
});

$('task').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $('ask').requestSubmit();
  }
});

$('stop').addEventListener('click', () => {
  send('stop_task', currentTask ? { task_id: currentTask } : {});
});

connect();
