// The playground in headless Chromium (Debian's, through playwright-core), talking to
// tinker-sim through the relay Worker in miniflare, as `make playground` runs it. The
// assertions read the DOM (text, data attributes), never pixels; screenshots go to
// tests/artifacts/www/ for people.
//   node --test tests/www/browser.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStack } from '../../www/dev/stack.mjs';
import { launchChromium } from '../js/run-browser.mjs';

const artifacts = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../artifacts/www');

let stack;
let browser;
let page;
const pageErrors = [];
/** Everything the page got from the relay and everything it sent, for the key checks. */
const fromRelay = [];
const sent = [];

const shot = (name) => page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });

async function simConfig(body) {
  const r = await fetch(`${stack.simURL}/_sim/config`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(r.status, 200, await r.text());
}

const state = (sel) => page.getAttribute(sel, 'data-state');

before(async () => {
  await mkdir(artifacts, { recursive: true });
  stack = await startStack({});
  browser = await launchChromium();
  page = await browser.context.newPage();
  page.setDefaultTimeout(60_000);
  await page.setViewportSize({ width: 1280, height: 900 });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('request', (r) => sent.push({ url: r.url(), headers: r.headers(), body: r.postData() ?? '' }));
  page.on('response', async (r) => {
    if (!r.url().startsWith(stack.relayURL)) return;
    const entry = { url: r.url(), status: r.status(), headers: await r.allHeaders(), body: '' };
    fromRelay.push(entry);
    try {
      entry.body = (await r.body()).toString('latin1');
    } catch {
      // Preflights and aborted polls have no body to read.
    }
  });
  await page.goto(`${stack.siteURL}/`);
});

after(async () => {
  await browser?.close();
  await stack?.stop();
});

test('connects through the relay and renders the prompt with the chat template', async () => {
  await page.waitForSelector('body[data-connected="true"]');
  assert.match(await page.textContent('#conn-pill'), /Connected · relay/);
  assert.match(await page.textContent('#conn-detail'), /Relay OK/);
  await page.waitForSelector('#model-a option[value="base:Qwen/Qwen3-8B"]', { state: 'attached' });
  await page.waitForSelector('#rendered-text[data-tokens]', { state: 'attached' });
  const rendered = await page.textContent('#rendered-text');
  assert.equal(rendered, '<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n');
  assert.equal(await page.locator('#rendered-text .special').count(), 3, 'special tokens are marked');
});

test('type a prompt, sample, and see the tokens with their logprobs', async () => {
  await page.fill('#user', 'Tell me about the sea.');
  await page.fill('#system', 'You are a pirate.');
  await page.waitForFunction(() => document.querySelector('#rendered-text').textContent.includes('Tell me about the sea.'));
  assert.match(await page.textContent('#rendered-text'), /^<\|im_start\|>system\nYou are a pirate\.<\|im_end\|>/);
  await page.fill('#max-tokens', '16');
  await page.fill('#seed', '11');
  await page.fill('#num-samples', '2');
  // Ctrl+Enter in the prompt samples.
  await page.focus('#user');
  await page.keyboard.press('Control+Enter');
  await page.waitForSelector('#sample-status[data-state="done"]');
  const cols = page.locator('#results .col');
  assert.equal(await cols.count(), 1);
  assert.equal(await cols.first().getAttribute('data-model'), 'base:Qwen/Qwen3-8B');
  const seqs = page.locator('#results article.seq');
  assert.equal(await seqs.count(), 2);
  for (let i = 0; i < 2; i++) {
    const seq = seqs.nth(i);
    const n = Number(await seq.getAttribute('data-tokens'));
    assert.ok(n >= 1 && n <= 16, `sample ${i}: ${n} tokens`);
    const lps = await seq.locator('.tok').evaluateAll((els) => els.map((e) => e.dataset.logprob));
    assert.equal(lps.length, n, 'one span per token');
    for (const lp of lps) assert.ok(lp !== '' && Number(lp) <= 0 && Number.isFinite(Number(lp)), `logprob ${lp}`);
    const ids = await seq.locator('.tok').evaluateAll((els) => els.map((e) => Number(e.dataset.tokenId)));
    assert.ok(ids.every((id) => Number.isInteger(id) && id >= 0));
    assert.match(await seq.locator('header').textContent(), /mean logprob -\d/);
  }
  // Hover details: id, logprob, probability, alternatives.
  await seqs.first().locator('.tok').first().hover();
  await page.waitForSelector('#tooltip:not([hidden])');
  const tip = await page.textContent('#tooltip');
  assert.match(tip, /id \d+ · position 0/);
  assert.match(tip, /logprob -?\d+\.\d{3} · p [\d.]+%/);
  assert.match(tip, /alternatives:/);
  // The keyboard does the same: focus a sample, arrow through its tokens.
  await seqs.first().locator('.tokens').focus();
  await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => /position 1/.test(document.querySelector('#results .seq .inspector').textContent));
  assert.equal(await seqs.first().locator('.tok.active').getAttribute('data-i'), '1');
  await shot('1-sample');
});

test('the Tokens panel shows live token boundaries, ids and the count', async () => {
  await page.click('#tab-tokens');
  await page.waitForSelector('#panel-tokens:not([hidden])');
  // The Sample prompt, as rendered: same count as the preview.
  const renderedCount = await page.getAttribute('#rendered-text', 'data-tokens');
  await page.waitForFunction((n) => document.querySelector('#tok-view').dataset.count === n, renderedCount);
  await page.check('input[name="tok-source"][value="custom"]');
  await page.fill('#tok-custom', 'Hello world, tinker!');
  await page.selectOption('#tok-family', 'qwen3');
  await page.waitForFunction(() => document.querySelector('#tok-view').dataset.count === '6' && document.querySelector('#tok-view').dataset.family === 'qwen3');
  const ids = await page.locator('#tok-view .chip').evaluateAll((els) => els.map((e) => Number(e.dataset.id)));
  assert.deepEqual(ids, [9707, 1879, 11, 259, 41112, 0]);
  assert.equal(await page.locator('#tok-view .chip .text').nth(1).textContent(), '·world', 'whitespace is visible');
  // Live: typing updates the view.
  await page.locator('#tok-custom').pressSequentially(' More');
  await page.waitForFunction(() => Number(document.querySelector('#tok-view').dataset.count) > 6);
  await page.fill('#tok-custom', 'Hello world, tinker!');
  await page.selectOption('#tok-family', 'llama3');
  await page.waitForFunction(() => document.querySelector('#tok-view').dataset.family === 'llama3');
  assert.deepEqual(await page.locator('#tok-view .chip').evaluateAll((els) => els.map((e) => Number(e.dataset.id))), [9906, 1917, 11, 259, 42212, 0]);
  assert.match(await page.textContent('#tok-summary'), /^6 tokens · 20 characters · Llama 3 tokenizer/);
  await shot('2-tokens');
  await page.selectOption('#tok-family', 'auto');
  await page.check('input[name="tok-source"][value="prompt"]');
});

let checkpoint;

test('a 5-step fine-tune: the loss chart falls, then weights are saved and sampled', async () => {
  // Keyboard: the tabs move with the arrow keys.
  await page.focus('#tab-tokens');
  await page.keyboard.press('ArrowRight');
  await page.waitForSelector('#panel-finetune:not([hidden])');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-finetune');
  await page.waitForFunction(() => document.querySelector('#ft-parse').dataset.examples === '6');
  await page.selectOption('#ft-model', 'base:Qwen/Qwen3-8B');
  await page.fill('#ft-steps', '5');
  await page.fill('#ft-lr', '0.1');
  await page.fill('#ft-name', 'browser-test');
  await page.click('#ft-run');
  await page.waitForSelector('#ft-status[data-state="done"]');
  const losses = JSON.parse(await page.getAttribute('#ft-chart', 'data-losses'));
  assert.equal(losses.length, 5);
  for (let i = 1; i < 5; i++) assert.ok(losses[i] < losses[i - 1], `loss falls at every step: ${losses}`);
  assert.ok(losses[4] < losses[0] * 0.9, `loss falls by over 10%: ${losses}`);
  const points = await page.locator('#ft-chart circle.pt').evaluateAll((els) => els.map((e) => Number(e.dataset.loss)));
  assert.equal(points.length, 5, 'the chart plots every step');
  points.forEach((p, i) => assert.ok(Math.abs(p - losses[i]) < 1e-4));
  assert.equal(await page.getAttribute('#ft-progress', 'value'), '5');
  assert.match(await page.textContent('#ft-status'), /Trained 5 steps/);
  const op = page.locator('#ops .op').first();
  assert.equal(await op.getAttribute('data-state'), 'done');
  assert.match(await op.textContent(), /Fine-tune · Qwen\/Qwen3-8B · 5 steps/);
  checkpoint = await page.getAttribute('#ft-after', 'data-path');
  assert.match(checkpoint, /^tinker:\/\/.+\/sampler_weights\/browser-test$/);
  await shot('3-finetune');
  // Sample from the new weights.
  await page.click('#ft-try-run');
  await page.waitForSelector('#ft-try-status[data-state="done"]');
  assert.equal(await page.getAttribute('#ft-try-results .col', 'data-model'), `ckpt:${checkpoint}`);
  assert.ok(await page.locator('#ft-try-results .tok').count() >= 1);
  // The new checkpoint is offered in the model pickers.
  await page.waitForSelector(`#model-a option[value="ckpt:${checkpoint}"]`, { state: 'attached' });
});

test('compare the base model with the fine-tuned one, side by side', async () => {
  await page.fill('#ft-try-prompt', 'What is the capital of France?');
  await page.click('#ft-compare');
  await page.waitForSelector('#panel-sample:not([hidden])');
  await page.waitForSelector('#sample-status[data-state="done"]');
  await page.waitForFunction(() => document.querySelector('#results').dataset.models === '2');
  const models = await page.locator('#results .col').evaluateAll((els) => els.map((e) => e.dataset.model));
  assert.deepEqual(models, ['base:Qwen/Qwen3-8B', `ckpt:${checkpoint}`]);
  assert.equal(await page.isChecked('#compare'), true);
  const tokensOf = (i) => page.locator('#results .col').nth(i).locator('article.seq').first().locator('.tok').evaluateAll((els) => els.map((e) => e.dataset.tokenId).join(','));
  for (let i = 0; i < 2; i++) {
    const lps = await page.locator('#results .col').nth(i).locator('.tok').evaluateAll((els) => els.map((e) => Number(e.dataset.logprob)));
    assert.ok(lps.length >= 2 && lps.every((x) => x <= 0));
  }
  // Same prompt and seed: the trained weights draw a different sample.
  assert.notEqual(await tokensOf(0), await tokensOf(1));
  // The prompt is a training example's, so its answer is scored under both models: the
  // fine-tuned one finds it far more likely.
  assert.equal(await page.inputValue('#answer'), "Arr, 'tis Paris, matey! A fine port for a pirate.");
  const means = await page.locator('#results .col .answer-scores').evaluateAll((els) => els.map((e) => Number(e.dataset.meanLogprob)));
  assert.equal(means.length, 2);
  assert.ok(means[1] > means[0] + 1, `answer mean logprob: base ${means[0]}, fine-tuned ${means[1]}`);
  const answerTokens = await page.locator('#results .col').first().locator('.answer-scores .tok').evaluateAll((els) => els.map((e) => e.textContent).join(''));
  assert.match(answerTokens, /Arr, 'tis Paris, matey! A fine port for a pirate\.<\|im_end\|>$/);
  assert.match(await page.locator('#results .col').nth(1).locator('h3').textContent(), /^B · browser-test/);
  await shot('4-compare');
});

test('cancel a pending sample: the UI shows it cancelled and stays usable', async () => {
  await simConfig({ future_delay_ms: 600_000, poll_hold_ms: 100 });
  try {
    await page.uncheck('#compare');
    await page.click('#sample');
    // The server keeps answering "try again": the activity entry shows it waiting.
    await page.waitForSelector('#sample-status[data-state="waiting"]');
    await page.waitForSelector('#ops .op[data-state="waiting"]');
    assert.ok(Number(await page.getAttribute('#ops .op', 'data-polls')) >= 1);
    assert.match(await page.textContent('#ops .op .timing'), /waiting on the server \(queue: active\)/);
    assert.equal(await page.isEnabled('#sample-cancel'), true);
    await page.click('#sample-cancel');
    await page.waitForSelector('#sample-status[data-state="cancelled"]');
    assert.equal(await page.textContent('#sample-status'), 'Cancelled.');
    assert.equal(await page.getAttribute('#ops .op', 'data-state'), 'cancelled');
    assert.equal(await page.isHidden('#sample-error'), true, 'a cancellation is not an error');
    assert.equal(await page.isEnabled('#sample'), true);
    assert.equal(await page.isDisabled('#sample-cancel'), true);
    // Escape cancels the visible panel's operation: a fine-tune stuck creating its run.
    await page.click('#tab-finetune');
    await page.fill('#ft-steps', '3');
    await page.fill('#ft-name', '');
    await page.click('#ft-run');
    await page.waitForSelector('#ops .op[data-state="waiting"]');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#ft-status[data-state="cancelled"]');
    assert.match(await page.textContent('#ft-status'), /^Cancelled after 0 of 3 steps/);
    assert.equal(await page.getAttribute('#ft-chart', 'data-stopped'), 'true');
    assert.equal(await page.getAttribute('#ft-chart', 'data-losses'), '[]');
    assert.equal(await page.textContent('#ft-chart svg text'), 'Cancelled before the first step');
    await shot('5-cancelled');
  } finally {
    await simConfig({ future_delay_ms: 10, poll_hold_ms: 2000 });
  }
  // Still usable.
  await page.click('#tab-sample');
  await page.click('#sample');
  await page.waitForSelector('#sample-status[data-state="done"]');
  assert.equal(await page.locator('#results .col').count(), 1);
});

test('errors are shown clearly: bad parameters, and a refused key in direct mode', async () => {
  await page.fill('#max-tokens', '0');
  await page.click('#sample');
  await page.waitForSelector('#sample-error:not([hidden])');
  assert.match(await page.textContent('#sample-error'), /RangeError.*Max tokens must be an integer ≥ 1/s);
  assert.equal(await state('#sample-status'), 'failed');
  await page.fill('#max-tokens', '16');
  // Direct mode without the opt-in: the SDK's browser guard explains itself.
  await page.click('#connection summary');
  await page.check('input[name="mode"][value="direct"]');
  await page.fill('#direct-url', stack.simURL);
  await page.fill('#direct-key', 'tml-not-the-right-key');
  await page.click('#connect');
  await page.waitForSelector('#conn-error:not([hidden])');
  assert.match(await page.textContent('#conn-error'), /dangerouslyAllowBrowser/);
  // With the opt-in, the simulator refuses the wrong key.
  await page.check('#direct-ack');
  await page.click('#connect');
  await page.waitForFunction(() => /AuthenticationError \(HTTP 401/.test(document.querySelector('#conn-error').textContent));
  assert.equal(await state('#conn-pill'), 'error');
  await shot('6-error');
  // Back through the relay.
  await page.check('input[name="mode"][value="relay"]');
  await page.click('#connect');
  await page.waitForSelector('body[data-connected="true"]');
  await page.waitForSelector('#conn-error', { state: 'hidden' });
});

test('a page served from an origin the relay does not allow says so', async () => {
  const other = await browser.context.newPage();
  try {
    // Same server, another origin: http://localhost:PORT instead of http://127.0.0.1:PORT.
    await other.goto(`${stack.siteURL.replace('127.0.0.1', 'localhost')}/`);
    await other.waitForSelector('#conn-error:not([hidden])');
    assert.match(await other.textContent('#conn-error'), /RelayUnreachable.*ALLOWED_ORIGINS/s);
    assert.equal(await other.getAttribute('#conn-pill', 'data-state'), 'error');
  } finally {
    await other.close();
  }
  assert.ok(stack.relay.logs.some((l) => /\[relay\] GET \/relay\/status origin 403/.test(l)), 'the relay refused it');
});

test('readable on a narrow screen: nothing overflows sideways', async () => {
  await page.setViewportSize({ width: 390, height: 844 });
  await page.click('#tab-sample');
  await page.click('#sample');
  await page.waitForSelector('#sample-status[data-state="done"]');
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  assert.ok(overflow <= 0, `horizontal overflow of ${overflow}px`);
  await shot('7-narrow');
  await page.setViewportSize({ width: 1280, height: 900 });
});

test('the page never held the key: not in what it sent, not in what the relay answered', async () => {
  assert.deepEqual(pageErrors, [], 'no uncaught page errors');
  const relayAnswers = fromRelay.filter((r) => r.status !== 204);
  assert.ok(relayAnswers.length > 30, `${relayAnswers.length} relay answers checked`);
  for (const r of fromRelay) {
    const all = `${Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`).join('\n')}\n${r.body}`;
    assert.ok(!all.includes(stack.apiKey), `the key leaked in ${r.url}`);
  }
  for (const r of sent) {
    const all = `${r.url}\n${Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`).join('\n')}\n${r.body}`;
    assert.ok(!all.includes(stack.apiKey), `the page sent the key to ${r.url}`);
  }
  const toRelay = sent.filter((r) => r.url.startsWith(stack.relayURL) && r.headers['x-api-key']);
  assert.ok(toRelay.length > 10 && toRelay.every((r) => r.headers['x-api-key'] === 'tml-relay-placeholder'));
  assert.ok(!stack.relay.logs.join('\n').includes(stack.apiKey), 'nor in the relay log');
});
