// The reference for the action benchmark (tests/examples/bench_actions.rs):
// the same actions on the same page, in the same Chromium, carried out the
// way browser-use 0.5.11 carries them out — Playwright (playwright-core,
// attached over the DevTools protocol), with browser-use's own sequence per
// action (browser_use/browser/session.py `_click_element_node`,
// `_input_text_element_node`; controller/service.py `select_dropdown_option`):
//
// - click: element by XPath, `click({timeout: 1500})`, `waitForLoadState()`;
// - fill: wait until stable, check visible, scroll into view, clear by
//   script, `click({timeout: 2000})`, sleep 100 ms, `keyboard.type(text)`;
// - select: `locator('//' + xpath).nth(0).selectOption({label}, {timeout: 1000})`.
//
// browser-use's fixed waits around actions (`wait_between_actions` 0.5 s,
// `minimum_wait_page_load_time` 0.25 s) are left out: they would add to
// every figure. Prints the times (ms) as JSON on stdout.
//
// Usage: node reference_actions.mjs <playwright-core dir> <DevTools URL> <page URL> [--serve]
//
// With `--serve` it does one warm-up of each action, prints `{"ready": true}`,
// then does one action per line read on stdin and prints its time as
// `{"ms": …}` (the bench interleaves these with Errand's actions):
// `{"do": "click"}`, `{"do": "fill", "field": 1..10, "text": …}`,
// `{"do": "select", "label": …}`, `{"do": "form", "value": …}` (the ten
// fills; `ms` their sum), `{"do": "taps"}` (`{"taps": n, "visible": bool}`;
// closes the page and exits).

const [pwDir, endpoint, url, mode] = process.argv.slice(2);
const { chromium } = await import(`${pwDir}/index.mjs`);
const browser = await chromium.connectOverCDP(endpoint);
const context = browser.contexts()[0];
// Interleaved with Errand's task (`--serve`), its page is in a window of
// its own: a tab behind Errand's would be hidden, and a hidden page draws no
// frames (Playwright's click waits for two to call the element stable).
const ownWindow = async () => {
  const cdp = await browser.newBrowserCDPSession();
  const opened = context.waitForEvent('page');
  await cdp.send('Target.createTarget', { url: 'about:blank', newWindow: true });
  return opened;
};
const page = mode === '--serve' ? await ownWindow() : await context.newPage();
await page.goto(url);
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

const handle = async (xpath) => {
  const h = await page.locator(`xpath=${xpath}`).elementHandle();
  if (!h) throw new Error(`no element at ${xpath}`);
  return h;
};
const click = async (xpath) => {
  const h = await handle(xpath);
  await h.click({ timeout: 1500 });
  await page.waitForLoadState();
};
const fill = async (xpath, text) => {
  const h = await handle(xpath);
  await h.waitForElementState('stable', { timeout: 1000 });
  if (await h.isVisible()) await h.scrollIntoViewIfNeeded({ timeout: 1000 });
  await h.evaluate((el) => { el.textContent = ''; el.value = ''; });
  await h.click({ timeout: 2000 });
  await sleep(100);
  await page.keyboard.type(text);
};
const select = async (xpath, label) => {
  await page.locator(`//${xpath.replace(/^\/+/, '')}`).nth(0).selectOption({ label }, { timeout: 1000 });
};
const timed = async (f) => {
  const t = performance.now();
  await f();
  return performance.now() - t;
};

const field = (i) => (i === 8 ? '//textarea[@name="f8"]' : `//input[@name="f${i}"]`);
const value = (v, i) => (i === 9 ? `${v}@example.com` : i === 10 ? '42' : v);
// One warm-up of each, as the Errand side has its first answer's actions.
await click('//button[@id="tap"]');
await fill(field(1), 'warm');
await select('//select[@name="pick"]', 'Two');
const form = async (v) => {
  let sum = 0;
  for (let i = 1; i <= 10; i++) sum += await timed(() => fill(field(i), value(v, i)));
  return sum;
};
const taps = async () => {
  const n = await page.evaluate(() => document.getElementById('tap').dataset.n);
  await page.close();
  return Number(n);
};

if (mode === '--serve') {
  const { createInterface } = await import('node:readline');
  const say = (v) => process.stdout.write(`${JSON.stringify(v)}\n`);
  say({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const c = JSON.parse(line);
    if (c.do === 'click') say({ ms: await timed(() => click('//button[@id="tap"]')) });
    else if (c.do === 'fill') say({ ms: await timed(() => fill(field(c.field), c.text)) });
    else if (c.do === 'select') say({ ms: await timed(() => select('//select[@name="pick"]', c.label)) });
    else if (c.do === 'form') say({ ms: await form(c.value) });
    else if (c.do === 'taps') {
      const visible = await page.evaluate(() => document.visibilityState === 'visible');
      say({ taps: await taps(), visible });
      process.exit(0);
    } else throw new Error(`unknown command ${line}`);
  }
  process.exit(1);
}

const times = { click: [], fill: [], select_option: [], form: [] };
for (let i = 0; i < 50; i++) times.click.push(await timed(() => click('//button[@id="tap"]')));
for (let r = 0; r < 5; r++) {
  for (let i = 1; i <= 10; i++) times.fill.push(await timed(() => fill(field(i), value(`v${r + 5}`, i))));
}
for (let r = 0; r < 5; r++) {
  for (let i = 0; i < 10; i++) {
    const pick = ['One', 'Two', 'Three'][(i + r + 10) % 3];
    times.select_option.push(await timed(() => select('//select[@name="pick"]', pick)));
  }
}
for (let i = 1; i <= 10; i++) times.form.push(await timed(() => fill(field(i), value('form', i))));
console.log(JSON.stringify({ taps: await taps(), times }));
process.exit(0); // leaves the browser (not Playwright's) running
