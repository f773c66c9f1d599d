// Walks kbroker's web console in Debian's chromium, headless, as a person
// would, and checks what the pages show. Run by compat/console_browser_test.go:
//
//   node console.mjs '<json>'
//
// where the JSON names the console's URL, the directory for screenshots and
// what the test put into the broker (topic, partitions, group and its
// expected lag, a record's key and header, a transactional id, a topic to
// create). Each step saves a screenshot; the script prints one line per
// screenshot ("screenshot <path>") and exits 1 with the reason on the first
// check that fails.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const cfg = JSON.parse(process.argv[2]);
const profile = mkdtempSync(join(tmpdir(), 'kbroker-chromium-'));
// A fresh profile (--user-data-dir) per run: playwright passes it for a
// persistent context.
const browser = await chromium.launchPersistentContext(profile, {
  executablePath: cfg.chromium || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = browser.pages()[0] || await browser.newPage();
page.setDefaultTimeout(15000);
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(String(e)));
page.on('response', (r) => { if (r.status() >= 400) consoleErrors.push(`${r.status()} ${r.url()}`); });

let step = 'start';
async function shot(name) {
  const path = join(cfg.screenshots, name + '.png');
  await page.screenshot({ path, fullPage: true });
  console.log('screenshot ' + path);
}
function check(ok, what) {
  if (!ok) throw new Error(`${step}: ${what}`);
}
async function text(selector) {
  return (await page.locator(selector).first().innerText()).trim();
}

try {
  step = 'brokers';
  await page.goto(cfg.url + '/');
  check((await text('h1')) === 'Brokers', 'the front page is titled Brokers');
  check((await text('#brokers')).includes('controller'), 'the broker table names the controller');
  // The throughput panel is live: console.js turns two polls into a rate.
  await page.waitForFunction(() => document.querySelector('[data-k="messagesIn"]').textContent.endsWith('/s'));
  await shot('01-brokers');

  step = 'topics';
  await page.click('nav >> text=Topics');
  const link = page.locator('#topics a', { hasText: cfg.topic });
  check(await link.count() === 1, `topic ${cfg.topic} is listed`);
  await shot('02-topics');

  step = 'topic';
  await link.click();
  await page.waitForSelector('#partitions');
  const rows = await page.locator('#partitions tr').count() - 1;
  check(rows === cfg.partitions, `topic page shows ${cfg.partitions} partitions, not ${rows}`);
  const p0 = await page.locator('#partitions tr').nth(1).locator('td').allInnerTexts();
  // Partition, Leader, Epoch, Replicas, ISR, Offline, Log start, Log end, Size
  check(p0[7] === String(cfg.records), `partition 0 ends at ${cfg.records}, shows ${p0[7]}`);
  await shot('03-topic');

  step = 'groups';
  await page.click('nav >> text=Consumer groups');
  const glink = page.locator('#groups a', { hasText: cfg.group });
  check(await glink.count() === 1, `group ${cfg.group} is listed`);
  await shot('04-groups');
  await glink.click();
  const lag = await text('#total-lag');
  check(lag === String(cfg.lag), `group ${cfg.group} shows lag ${lag}, want ${cfg.lag}`);
  await shot('05-group');

  step = 'transactions';
  await page.click('nav >> text=Transactions');
  const txns = await text('#transactions');
  check(txns.includes(cfg.txnID) && txns.includes('Ongoing'), `transaction ${cfg.txnID} shows as Ongoing:\n${txns}`);
  await shot('06-transactions');

  step = 'messages';
  await page.click('nav >> text=Messages');
  await page.selectOption('select[name=topic]', cfg.topic);
  await page.fill('input[name=partition]', '0');
  await page.fill('input[name=offset]', '0');
  await page.click('form.browse button');
  await page.waitForSelector('#records');
  const records = await text('#records');
  check(records.includes(cfg.key), `the browser shows key ${cfg.key}`);
  check(records.includes(cfg.headerKey) && records.includes(cfg.headerValue), `the browser shows header ${cfg.headerKey}: ${cfg.headerValue}`);
  check(await page.locator('#records pre.json').count() > 0, 'a JSON value is pretty-printed');
  check(await page.locator('#records pre.hex').count() > 0, 'a binary value is a hex dump');
  await shot('07-messages');

  step = 'create topic';
  await page.click('nav >> text=Topics');
  await page.fill('form.action input[name=topic]', cfg.newTopic);
  await page.fill('form.action input[name=partitions]', '2');
  await page.click('form.action button');
  const summary = await text('#summary');
  check(summary.includes(cfg.newTopic), `the confirmation names the topic: ${summary}`);
  await shot('08-create-confirm');
  await page.click('#confirm');
  const result = await text('#result');
  check(result.startsWith('Created topic'), `the result says created: ${result}`);
  await shot('09-create-result');
  // The topic list reads fresh metadata; reload until the new topic shows.
  const deadline = Date.now() + 10000;
  for (;;) {
    await page.click('nav >> text=Topics');
    if (await page.locator('#topics a', { hasText: cfg.newTopic }).count() === 1) break;
    check(Date.now() < deadline, `the new topic ${cfg.newTopic} is listed`);
    await page.waitForTimeout(200);
  }
  await shot('10-topics-after-create');

  check(consoleErrors.length === 0, `no JavaScript errors: ${consoleErrors.join('; ')}`);
} catch (e) {
  try { await shot('failed-' + step.replace(/\W+/g, '-')); } catch { /* the page may be gone */ }
  console.error(String(e && e.stack || e));
  process.exitCode = 1;
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
