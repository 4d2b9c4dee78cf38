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
// Usage: node reference_actions.mjs <playwright-core dir> <DevTools URL> <page URL>

const [pwDir, endpoint, url] = process.argv.slice(2);
const { chromium } = await import(`${pwDir}/index.mjs`);
const browser = await chromium.connectOverCDP(endpoint);
const context = browser.contexts()[0];
const page = await context.newPage();
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
const times = { click: [], fill: [], select_option: [], form: [] };
// One warm-up of each, as the Errand side has its first answer's actions.
await click('//button[@id="tap"]');
await fill(field(1), 'warm');
await select('//select[@name="pick"]', 'Two');
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
const taps = await page.evaluate(() => document.getElementById('tap').dataset.n);
await page.close();
console.log(JSON.stringify({ taps: Number(taps), times }));
process.exit(0); // leaves the browser (not Playwright's) running
