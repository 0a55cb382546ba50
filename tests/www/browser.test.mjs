// The playground in headless Chromium (Debian's, through playwright-core), talking to
// tinker-sim through the relay Worker in miniflare, as `make playground` runs it. The
// assertions read the DOM (text, data attributes), never pixels; screenshots go to
// tests/artifacts/www/ for people.
//   node --test tests/www/browser.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tinker from 'tinker-wasm';
import { startStack } from '../../www/dev/stack.mjs';
import { launchChromium } from '../js/run-browser.mjs';

const artifacts = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../artifacts/www');

let stack;
let browser;
let page;
const pageErrors = [];
/** The relay's OpenAI client key (OPENAI_CLIENT_KEYS), for the snippets the page shows. */
const RELAY_CLIENT_KEY = 'playground-test-client-key';
/** Everything the page got from the relay and everything it sent, for the key checks. */
const fromRelay = [];
const sent = [];

const shot = (name) => page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });

async function simConfig(body) {
  const r = await fetch(`${stack.simURL}/_sim/config`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(r.status, 200, await r.text());
}

const state = (sel) => page.getAttribute(sel, 'data-state');

/** Waits until the Sample preview shows model A's prompt rendered with `renderer` (or 'raw'). */
const rendered = (renderer, p = page) => p.waitForFunction((r) => {
  const e = document.querySelector('#rendered-text');
  return e.dataset.state === 'ok' && e.dataset.renderer === r;
}, renderer);

/** The same tokenizer in Node, from the files the site serves (the page's must agree). */
const nodeTokenizers = new Map();
async function nodeTokenizer(family) {
  if (!nodeTokenizers.has(family)) {
    const { dir } = stack.site.tokenizers[family];
    nodeTokenizers.set(family, tinker.Tokenizer.fromJSON(await readFile(path.join(dir, 'tokenizer.json')), { config: await readFile(path.join(dir, 'tokenizer_config.json'), 'utf8') }));
  }
  return nodeTokenizers.get(family);
}

/** What the server offers, asked directly. */
async function serverModels() {
  const r = await fetch(`${stack.simURL}/api/v1/get_server_capabilities`, { headers: { 'x-api-key': stack.apiKey } });
  assert.equal(r.status, 200);
  return (await r.json()).supported_models.map((m) => m.model_name);
}

before(async () => {
  await mkdir(artifacts, { recursive: true });
  stack = await startStack({ clientKeys: [RELAY_CLIENT_KEY] });
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

  // The OpenAI request shown for model A's sample, run as shown (curl, and openai-node from a
  // file) against the relay's /v1/: the same tokens, so the same logprobs, as the page shows.
  assert.equal(await page.isHidden('#openai-snippet'), false);
  const request = JSON.parse(await page.getAttribute('#openai-snippet', 'data-request'));
  assert.deepEqual([request.path, request.body.model, request.body.seed, request.body.n], ['/v1/chat/completions', 'Qwen/Qwen3-8B', 11, 2]);
  const env = { ...process.env, TINKER_RELAY_KEY: RELAY_CLIENT_KEY };
  // (Not spawnSync: the relay loads the tokenizer from the site server in this process.)
  const run = promisify(execFile);
  const curl = await run('bash', ['-c', await page.textContent('#openai-curl')], { env });
  const answer = JSON.parse(curl.stdout);
  const shown = await seqs.evaluateAll((els) => els.map((s) => [...s.querySelectorAll('.tok')].map((t) => Number(t.dataset.logprob))));
  assert.deepEqual(answer.choices.map((c) => c.logprobs.content.map((t) => t.logprob)), shown);
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '.snippet.mjs');
  await writeFile(file, await page.textContent('#openai-node'));
  const node = await run(process.execPath, [file], { env });
  assert.equal(node.stdout, `${answer.choices[0].message.content}\n`);
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

test('a 5-epoch fine-tune with supervised.train: the losses fall, held-out points, checkpoints, then a sample', async () => {
  // Keyboard: the tabs move with the arrow keys.
  await page.focus('#tab-tokens');
  await page.keyboard.press('ArrowRight');
  await page.waitForSelector('#panel-finetune:not([hidden])');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'tab-finetune');
  await page.waitForFunction(() => document.querySelector('#ft-parse').dataset.examples === '6');
  await page.selectOption('#ft-model', 'base:Qwen/Qwen3-8B');
  // Six examples, one held out, every other one in each step: one step per epoch.
  await page.fill('#ft-epochs', '5');
  await page.fill('#ft-lr', '0.1');
  await page.selectOption('#ft-schedule', 'cosine');
  await page.fill('#ft-name', 'browser-test');
  await page.click('#ft-run');
  await page.waitForSelector('#ft-status[data-state="done"]');
  const losses = JSON.parse(await page.getAttribute('#ft-chart', 'data-losses'));
  assert.equal(losses.length, 5);
  // The held-out loss, measured before steps 1, 3 and 5 (eval_every 2), and falling too.
  const evals = JSON.parse(await page.getAttribute('#ft-chart', 'data-evals'));
  assert.deepEqual(evals.map(([i]) => i), [0, 2, 4]);
  assert.ok(evals[2][1] < evals[0][1], `held-out loss falls: ${JSON.stringify(evals)}`);
  assert.equal(await page.locator('#ft-chart rect.pt.eval').count(), 3);
  for (let i = 1; i < 5; i++) assert.ok(losses[i] < losses[i - 1], `loss falls at every step: ${losses}`);
  assert.ok(losses[4] < losses[0] * 0.9, `loss falls by over 10%: ${losses}`);
  const points = await page.locator('#ft-chart circle.pt').evaluateAll((els) => els.map((e) => Number(e.dataset.loss)));
  assert.equal(points.length, 5, 'the chart plots every step');
  points.forEach((p, i) => assert.ok(Math.abs(p - losses[i]) < 1e-4));
  assert.equal(await page.getAttribute('#ft-progress', 'value'), '1');
  assert.match(await page.textContent('#ft-status'), /^Trained 5 steps in .*Run browser-test, checkpoint final\.$/);
  const op = page.locator('#ops .op').first();
  assert.equal(await op.getAttribute('data-state'), 'done');
  assert.match(await op.textContent(), /Fine-tune · Qwen\/Qwen3-8B · 5 epochs/);
  checkpoint = await page.getAttribute('#ft-after', 'data-path');
  assert.match(checkpoint, /^tinker:\/\/.+\/sampler_weights\/final$/);
  // The run's checkpoints, from its checkpoints.jsonl in IndexedDB.
  assert.deepEqual(await page.locator('#ft-checkpoints li').evaluateAll((els) => els.map((e) => [e.dataset.name, e.dataset.samplerPath])), [['final', checkpoint]]);
  assert.match(await page.textContent('#ft-run-note'), /^Run browser-test has finished/);
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
  assert.match(await page.locator('#results .col').nth(1).locator('h3').textContent(), /^B · final/);
  await shot('4-compare');
});

test('RL with a reward function written in the page: the reward curve and the sampled groups, scored by it', async () => {
  await page.click('#tab-rl');
  await page.waitForSelector('#panel-rl:not([hidden])');
  await page.selectOption('#rl-model', 'base:Qwen/Qwen3-8B');
  // A reward that varies within a group, so every step trains.
  await page.fill('#rl-reward', 'return (answer.length % 7) / 7 + (prompt.length > 20 ? 1 : 0);');
  await page.fill('#rl-steps', '3');
  await page.fill('#rl-max-tokens', '12');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-status[data-state="done"]');
  const rewards = JSON.parse(await page.getAttribute('#rl-chart', 'data-losses'));
  assert.equal(rewards.length, 3);
  assert.equal(await page.locator('#rl-chart circle.pt').count(), 3);
  assert.match(await page.textContent('#rl-status'), /^Trained 3 steps in .*: mean reward/);
  // The last step's groups: two prompts, four answers each, every reward the function's.
  assert.equal(await page.getAttribute('#rl-sampled', 'data-step'), '2');
  const groups = await page.locator('#rl-sampled .group').evaluateAll((els) => els.map((g) => ({
    prompt: g.querySelector('h4').textContent,
    answers: [...g.querySelectorAll('li')].map((li) => ({ reward: Number(li.dataset.reward), text: li.textContent.replace(/^\S+ /, '') })),
  })));
  assert.equal(groups.length, 2);
  let sum = 0;
  for (const g of groups) {
    assert.equal(g.answers.length, 4);
    for (const a of g.answers) {
      const text = a.text === '(empty)' ? '' : a.text;
      assert.equal(a.reward, (text.length % 7) / 7 + (g.prompt.length > 20 ? 1 : 0), `${g.prompt} → ${a.text}`);
      sum += a.reward;
    }
  }
  // The chart's last point is the step's mean reward over its answers.
  assert.ok(Math.abs(rewards[2] - sum / 8) < 1e-5, `${rewards[2]} against ${sum / 8}`);
  assert.match(await page.locator('#ops .op').first().textContent(), /RL · Qwen\/Qwen3-8B · 3 steps/);
  await shot('4-rl');
  // Bad reward functions are refused with a clear message, nothing sent.
  await page.fill('#rl-reward', 'return (');
  await page.click('#rl-run');
  await page.waitForSelector('#rl-status[data-state="failed"]');
  assert.match(await page.textContent('#rl-error'), /the reward function does not compile/);
  await page.fill('#rl-reward', "return 'high';");
  await page.fill('#rl-steps', '1');
  await page.click('#rl-run');
  await page.waitForFunction(() => /returned "high"/.test(document.querySelector('#rl-error').textContent));
  assert.match(await page.textContent('#rl-error'), /the reward function returned "high" for the answer .*: it must return a finite number/);
  assert.equal(await page.getAttribute('#rl-status', 'data-state'), 'failed');
  await page.click('#tab-sample');
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
    await page.fill('#ft-epochs', '3');
    await page.fill('#ft-name', '');
    await page.click('#ft-run');
    await page.waitForSelector('#ops .op[data-state="waiting"]');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#ft-status[data-state="cancelled"]');
    assert.equal(await page.textContent('#ft-status'), 'Cancelled before the first step.');
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

test('a cancelled run saves where it stopped and resumes there after a reload', async () => {
  // Slow futures, so that Cancel lands mid-run.
  await simConfig({ future_delay_ms: 300 });
  let before;
  let stoppedAt;
  try {
    await page.click('#tab-finetune');
    await page.fill('#ft-epochs', '6');
    await page.fill('#ft-lr', '0.1');
    await page.fill('#ft-save-every', '0');
    await page.fill('#ft-name', 'resume-test');
    await page.click('#ft-run');
    await page.waitForFunction(() => JSON.parse(document.querySelector('#ft-chart').dataset.losses).length >= 1);
    await page.click('#ft-cancel');
    await page.waitForSelector('#ft-status[data-state="cancelled"]');
    // The steps in flight finish, then the run saves before the next one.
    const m = /^Cancelled after (\d) steps? of 6; saved before step (\d) \(checkpoint (\d{6})\): Train resumes it\.$/.exec(await page.textContent('#ft-status'));
    assert.ok(m, await page.textContent('#ft-status'));
    stoppedAt = Number(m[2]) - 1;
    assert.equal(Number(m[1]), stoppedAt);
    assert.equal(m[3], String(stoppedAt).padStart(6, '0'));
    assert.ok(stoppedAt >= 1 && stoppedAt < 6, `stopped before step ${stoppedAt + 1}`);
    before = JSON.parse(await page.getAttribute('#ft-chart', 'data-losses'));
    assert.equal(before.length, stoppedAt);
  } finally {
    await simConfig({ future_delay_ms: 10 });
  }
  // A reload (a new page on the same origin): the run is offered for resuming, by name.
  const other = await browser.context.newPage();
  other.on('pageerror', (e) => pageErrors.push(e.message));
  try {
    await other.goto(`${stack.siteURL}/`);
    await other.waitForSelector('body[data-connected="true"]');
    await other.click('#tab-finetune');
    await other.waitForFunction(() => document.querySelector('#ft-name').value === 'resume-test');
    assert.equal(await other.textContent('#ft-run-note'), `Run resume-test stopped at its checkpoint ${String(stoppedAt).padStart(6, '0')}: Train resumes it there.`);
    await other.waitForFunction(() => document.querySelector('#ft-parse').dataset.examples === '6');
    await other.waitForSelector('#ft-model option[value="base:Qwen/Qwen3-8B"]', { state: 'attached' });
    await other.selectOption('#ft-model', 'base:Qwen/Qwen3-8B');
    await other.fill('#ft-epochs', '6');
    await other.fill('#ft-lr', '0.1');
    await other.fill('#ft-save-every', '0');
    await other.click('#ft-run');
    await other.waitForSelector('#ft-status[data-state="done"]');
    // The chart holds the run's first steps (from its metrics.jsonl) and the rest.
    const losses = JSON.parse(await other.getAttribute('#ft-chart', 'data-losses'));
    assert.equal(losses.length, 6);
    assert.deepEqual(losses.slice(0, stoppedAt), before);
    assert.match(await other.textContent('#ft-status'), new RegExp(`^Trained ${6 - stoppedAt} steps? in `));
    const names = await other.locator('#ft-checkpoints li').evaluateAll((els) => els.map((e) => e.dataset.name));
    assert.deepEqual(names, [String(stoppedAt).padStart(6, '0'), 'final']);
  } finally {
    await other.close();
  }
  await page.click('#tab-sample');
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

test('every model the server reports is offered, grouped by organisation, with its attributes', async () => {
  const names = await serverModels();
  assert.equal(names.length, tinker.listModels().length, 'tinker-sim serves the cookbook lineup');
  const index = await (await fetch(`${stack.siteURL}/tokenizers/index.json`)).json();
  for (const picker of ['#model-a', '#model-b', '#ft-model']) {
    const groups = await page.locator(`${picker} optgroup`).evaluateAll((els) => els.map((g) => ({
      label: g.label,
      options: [...g.children].map((o) => ({ value: o.value, text: o.textContent, ...o.dataset })),
    })));
    const base = groups.filter((g) => g.label !== 'Your sampler checkpoints');
    // Every model, once, in the server's order within its organisation's group.
    assert.deepEqual(base.flatMap((g) => g.options.map((o) => o.value)).sort(), names.map((n) => `base:${n}`).sort(), picker);
    const orgs = [...new Set(names.map((n) => tinker.getModelAttributes(n).organization))];
    assert.deepEqual(base.map((g) => g.label), orgs, `${picker}: one group per organisation`);
    for (const g of base) {
      assert.deepEqual(g.options.map((o) => o.value), names.filter((n) => tinker.getModelAttributes(n).organization === g.label).map((n) => `base:${n}`));
      for (const o of g.options) {
        const name = o.value.slice(5);
        const a = tinker.getModelAttributes(name);
        assert.equal(o.kind, a.is_chat ? 'chat' : 'base', name);
        assert.equal(o.vision, String(a.is_vl), name);
        assert.match(o.text, new RegExp(`^${name.split('/')[1].replace(/[.]/g, '\\.')} · ${a.is_chat ? 'chat' : 'base'}${a.is_vl ? ' · vision' : ''}`), name);
        assert.ok(o.text.includes(a.size_str), name);
        // Whether the site has the model's tokenizer: its family is in the site's index.
        assert.equal(o.tokenizer, String(o.family in index.families), name);
        assert.equal(o.text.includes('no tokenizer on this site'), !(o.family in index.families), name);
      }
    }
  }
  // Families: a base model's is its chat siblings' (Qwen3-8B-Base reads with Qwen3).
  const family = (n) => page.getAttribute(`#model-a option[value="base:${n}"]`, 'data-family');
  assert.equal(await family('Qwen/Qwen3-8B-Base'), 'qwen3');
  assert.equal(await family('Qwen/Qwen3.5-9B-Base'), 'qwen3_5');
  assert.equal(await family('deepseek-ai/DeepSeek-V3.1-Base'), 'deepseek_v3');
  assert.equal(await family('meta-llama/Llama-3.2-1B'), 'llama3');
  assert.equal(await family('openai/gpt-oss-20b'), 'gpt_oss');
  assert.equal(await family('zai-org/GLM-5.3'), 'glm5');
  assert.equal(await family('thinkingmachines/Inkling'), 'o200k_base_chat');
  // The Tokens tab offers every family the site has.
  const offered = await page.locator('#tok-family option').evaluateAll((els) => els.map((o) => o.value));
  assert.deepEqual(offered, ['auto', ...Object.keys(index.families)]);
  assert.ok(['qwen3', 'llama3', 'gpt_oss'].every((f) => f in index.families), 'the npm families at least');
});

test('gpt-oss: its recommended renderer by default, its other one, a sample, and its tokens', async () => {
  await page.click('#tab-sample');
  await page.uncheck('#compare');
  await page.selectOption('#model-a', 'base:openai/gpt-oss-20b');
  await rendered('gpt_oss_no_sysprompt');
  const choices = await page.locator('#renderer option').evaluateAll((els) => els.map((o) => [o.value, o.textContent]));
  assert.deepEqual(choices, [
    ['gpt_oss_no_sysprompt', 'gpt_oss_no_sysprompt (recommended)'],
    ['gpt_oss_medium_reasoning', 'gpt_oss_medium_reasoning'],
    ['raw', 'raw text (no template)'],
  ]);
  assert.deepEqual(choices.slice(0, 2).map(([v]) => v), tinker.getRecommendedRendererNames('openai/gpt-oss-20b'));
  assert.match(await page.textContent('#model-info'), /^openai\/gpt-oss-20b: chat model · openai 1 · 21B-A3\.6B · renderers: gpt_oss_no_sysprompt, gpt_oss_medium_reasoning · gpt-oss \(o200k_harmony\) tokenizer$/);
  await page.fill('#system', '');
  await page.fill('#user', 'What is the capital of France?');
  await page.fill('#answer', '');
  await page.waitForFunction(() => document.querySelector('#rendered-text').textContent.includes('France?<|end|>') && !document.querySelector('#rendered-text').textContent.includes('pirate'));
  assert.equal(await page.textContent('#rendered-text'), '<|start|>user<|message|>What is the capital of France?<|end|><|start|>assistant');
  assert.deepEqual(await page.locator('#rendered-text .special').allTextContents(), ['<|start|>', '<|message|>', '<|end|>', '<|start|>']);
  // The page's tokens are the package's, in Node, with the same files and renderer.
  const tok = await nodeTokenizer('gpt_oss');
  const expected = new tinker.Renderer('gpt_oss_no_sysprompt', tok).buildGenerationPrompt([{ role: 'user', content: 'What is the capital of France?' }]).chunks.flatMap((c) => [...c.tokens]);
  assert.equal(await page.getAttribute('#rendered-text', 'data-tokens'), String(expected.length));
  // The family's other renderer.
  await page.selectOption('#renderer', 'gpt_oss_medium_reasoning');
  await rendered('gpt_oss_medium_reasoning');
  const text = await page.textContent('#rendered-text');
  assert.match(text, /^<\|start\|>system<\|message\|>You are ChatGPT, a large language model trained by OpenAI\.\nKnowledge cutoff: 2024-06\nCurrent date: \d{4}-\d\d-\d\d\n\nReasoning: medium/);
  assert.match(text, /<\|start\|>user<\|message\|>What is the capital of France\?<\|end\|><\|start\|>assistant$/);
  await page.selectOption('#renderer', 'gpt_oss_no_sysprompt');
  await rendered('gpt_oss_no_sysprompt');
  await page.fill('#max-tokens', '16');
  await page.fill('#seed', '5');
  await page.fill('#num-samples', '2');
  await page.click('#sample');
  await page.waitForSelector('#sample-status[data-state="done"]');
  assert.equal(await page.getAttribute('#results .col', 'data-model'), 'base:openai/gpt-oss-20b');
  assert.match(await page.textContent('#results .col h3'), /^openai\/gpt-oss-20b gpt_oss_no_sysprompt$/);
  const seqs = page.locator('#results article.seq');
  assert.equal(await seqs.count(), 2);
  for (let i = 0; i < 2; i++) {
    const toks = await seqs.nth(i).locator('.tok').evaluateAll((els) => els.map((e) => [Number(e.dataset.tokenId), Number(e.dataset.logprob), e.textContent]));
    assert.ok(toks.length >= 1 && toks.length <= 16);
    for (const [id, lp] of toks) assert.ok(Number.isInteger(id) && id >= 0 && id < tok.vocabSize && lp <= 0, `token ${id} logprob ${lp}`);
    // Each token reads as the gpt-oss tokenizer decodes it.
    const ids = toks.map(([id]) => id);
    assert.equal(toks.map(([, , t]) => t).join(''), tok.decode(ids));
  }
  await shot('8-gpt-oss');
  // The Tokens tab: the model's family by default, the prompt's exact ids.
  await page.click('#tab-tokens');
  await page.check('input[name="tok-source"][value="prompt"]');
  await page.selectOption('#tok-family', 'auto');
  await page.waitForFunction(() => document.querySelector('#tok-view').dataset.family === 'gpt_oss');
  assert.deepEqual(await page.locator('#tok-view .chip').evaluateAll((els) => els.map((e) => Number(e.dataset.id))), expected);
  assert.match(await page.textContent('#tok-summary'), new RegExp(`^${expected.length} tokens · \\d+ characters · gpt-oss \\(o200k_harmony\\) tokenizer \\(openai/gpt-oss-20b's\\)`));
  assert.match(await page.textContent('#tok-source-note'), /^Files: real · npm @lenml\/tokenizer-gptoss/);
  // Any text, with that family picked by hand.
  await page.check('input[name="tok-source"][value="custom"]');
  await page.selectOption('#tok-family', 'gpt_oss');
  await page.fill('#tok-custom', 'Hello world, tinker! 日本語');
  const want = [...tok.encode('Hello world, tinker! 日本語')];
  await page.waitForFunction((n) => document.querySelector('#tok-view').dataset.family === 'gpt_oss' && document.querySelector('#tok-view').dataset.count === n, String(want.length));
  assert.deepEqual(await page.locator('#tok-view .chip').evaluateAll((els) => els.map((e) => Number(e.dataset.id))), want);
  await shot('9-gpt-oss-tokens');
  await page.selectOption('#tok-family', 'auto');
  await page.check('input[name="tok-source"][value="prompt"]');
  await page.click('#tab-sample');
});

test('DeepSeek V3.1 with the generated tokenizer files: render, sample, and its tokens', async () => {
  // make test-www generates them first (the renderer-tokenizers target).
  assert.ok(stack.site.tokenizers.deepseek_v3, 'no DeepSeek tokenizer files: run `make renderer-tokenizers`');
  const model = 'deepseek-ai/DeepSeek-V3.1';
  await page.selectOption('#model-a', `base:${model}`);
  await rendered('deepseekv3');
  assert.deepEqual(await page.locator('#renderer option').evaluateAll((els) => els.map((o) => o.value)), [...tinker.getRecommendedRendererNames(model), 'raw']);
  assert.equal(await page.textContent('#rendered-text'), '<｜begin▁of▁sentence｜><｜User｜>What is the capital of France?<｜Assistant｜></think>');
  // Its control tokens, </think> (renamed from a placeholder for V3.1) included, are single added tokens.
  assert.deepEqual(await page.locator('#rendered-text .special').allTextContents(), ['<｜begin▁of▁sentence｜>', '<｜User｜>', '<｜Assistant｜>', '</think>']);
  const tok = await nodeTokenizer('deepseek_v3');
  const expected = new tinker.Renderer('deepseekv3', tok).buildGenerationPrompt([{ role: 'user', content: 'What is the capital of France?' }]).chunks.flatMap((c) => [...c.tokens]);
  assert.equal(expected.at(-1), 128799);
  await page.selectOption('#renderer', 'deepseekv3_thinking');
  await rendered('deepseekv3_thinking');
  assert.match(await page.textContent('#rendered-text'), /<｜Assistant｜><think>$/);
  await page.selectOption('#renderer', 'deepseekv3');
  await rendered('deepseekv3');
  await page.click('#sample');
  await page.waitForSelector('#sample-status[data-state="done"]');
  assert.equal(await page.getAttribute('#results .col', 'data-model'), `base:${model}`);
  assert.match(await page.textContent('#results .col h3'), /deepseekv3$/);
  const ids = await page.locator('#results article.seq').first().locator('.tok').evaluateAll((els) => els.map((e) => Number(e.dataset.tokenId)));
  assert.ok(ids.length >= 1 && ids.every((id) => id < tok.vocabSize));
  await page.click('#tab-tokens');
  await page.waitForFunction(() => document.querySelector('#tok-view').dataset.family === 'deepseek_v3');
  assert.deepEqual(await page.locator('#tok-view .chip').evaluateAll((els) => els.map((e) => Number(e.dataset.id))), expected);
  assert.match(await page.textContent('#tok-summary'), /DeepSeek V3\.1 tokenizer \(deepseek-ai\/DeepSeek-V3\.1's\) \(fast engine\)/);
  assert.match(await page.textContent('#tok-source-note'), /^Files: exported · /);
  await shot('10-deepseek-tokens');
  // Its base model reads with the same tokenizer, with role_colon or raw text.
  await page.click('#tab-sample');
  await page.selectOption('#model-a', 'base:deepseek-ai/DeepSeek-V3.1-Base');
  await rendered('role_colon');
  assert.match(await page.textContent('#model-info'), /base model .* DeepSeek V3\.1 tokenizer$/);
});

test('a base model: role_colon by default, or raw text', async () => {
  await page.click('#tab-sample');
  await page.selectOption('#model-a', 'base:Qwen/Qwen3-8B-Base');
  await rendered('role_colon');
  assert.deepEqual(await page.locator('#renderer option').evaluateAll((els) => els.map((o) => [o.value, o.textContent])), [
    ['role_colon', 'role_colon (recommended)'],
    ['raw', 'raw text (no template)'],
  ]);
  assert.equal(await page.textContent('#rendered-text'), 'User: What is the capital of France?\n\nAssistant:');
  assert.equal(await page.isVisible('#raw'), false);
  await page.selectOption('#renderer', 'raw');
  await rendered('raw');
  assert.equal(await page.isVisible('#raw'), true);
  assert.equal(await page.isVisible('#user'), false);
  await page.fill('#raw', 'The capital of France is');
  await page.waitForFunction(() => document.querySelector('#rendered-text').textContent === 'The capital of France is');
  await page.click('#sample');
  await page.waitForSelector('#sample-status[data-state="done"]');
  assert.match(await page.textContent('#results .col h3'), /^Qwen\/Qwen3-8B-Base raw text$/);
  // A chat model then: raw text stays picked (it is offered to every model).
  await page.selectOption('#model-a', 'base:Qwen/Qwen3-8B');
  await rendered('raw');
  await page.selectOption('#renderer', 'qwen3');
  await rendered('qwen3');
});

test('a model the cookbook cannot render says why; raw text still works for it', async () => {
  assert.ok(stack.site.tokenizers.kimi_k25, 'no Kimi tokenizer files: run `make renderer-tokenizers`');
  await page.selectOption('#model-a', 'base:moonshotai/Kimi-K3.1-Pro');
  await page.waitForFunction(() => document.querySelector('#rendered-text').dataset.state === 'error');
  assert.match(await page.textContent('#rendered-text'), /^\(cannot render: kimi_k31_pro_max_reasoning is not available: tinker-cookbook 0\.6\.1 renders Kimi K3\.1-Pro with the KimiK31Pro renderer/);
  await page.click('#sample');
  await page.waitForSelector('#sample-status[data-state="failed"]');
  assert.match(await page.textContent('#sample-error'), /kimi_k31_pro_max_reasoning is not available/);
  assert.equal(await page.getAttribute('#ops .op', 'data-state'), 'failed', 'a failure, not a cancellation');
  await page.selectOption('#renderer', 'raw');
  await rendered('raw');
  await page.selectOption('#model-a', 'base:Qwen/Qwen3-8B');
  await rendered('raw');
  await page.selectOption('#renderer', 'qwen3');
  await rendered('qwen3');
});

test('a model whose tokenizer the site lacks is still offered, with a clear message wherever one is needed', async () => {
  // The same site with GLM's files left out of its index.
  const other = await browser.context.newPage();
  other.setDefaultTimeout(60_000);
  const errors = [];
  other.on('pageerror', (e) => errors.push(e.message));
  await other.route('**/tokenizers/index.json', async (route) => {
    const res = await route.fetch();
    const index = await res.json();
    delete index.families.glm5;
    await route.fulfill({ response: res, json: index });
  });
  try {
    await other.goto(`${stack.siteURL}/`);
    await other.waitForSelector('body[data-connected="true"]');
    const glm = other.locator('#model-a option[value="base:zai-org/GLM-5.3"]');
    assert.equal(await glm.getAttribute('data-tokenizer'), 'false');
    assert.match(await glm.textContent(), /^GLM-5\.3 · chat · 744B-A40B · no tokenizer on this site$/);
    await other.selectOption('#model-a', 'base:zai-org/GLM-5.3');
    await other.waitForFunction(() => document.querySelector('#rendered-text').dataset.state === 'no-tokenizer');
    assert.match(await other.textContent('#rendered-text'), /^No tokenizer: this site has no tokenizer files for zai-org\/GLM-5\.3: it needs the GLM-5 tokenizer \(\/tokenizers\/glm5\/tokenizer\.json\)\. The model can still be picked/);
    assert.match(await other.textContent('#model-info'), /no tokenizer on this site \(needs GLM-5\)$/);
    // Its renderers are still offered.
    assert.deepEqual(await other.locator('#renderer option').evaluateAll((els) => els.map((o) => o.value)), [...tinker.getRecommendedRendererNames('zai-org/GLM-5.3'), 'raw']);
    await other.click('#sample');
    await other.waitForSelector('#sample-status[data-state="failed"]');
    assert.match(await other.textContent('#sample-error'), /^NoTokenizer.*GLM-5 tokenizer/s);
    assert.match(await other.textContent('#sample-error .hint'), /Deploying the page/);
    // The Tokens tab says so for the model's family, and offers the others.
    await other.click('#tab-tokens');
    await other.waitForSelector('#tok-error:not([hidden])');
    assert.match(await other.textContent('#tok-error'), /GLM-5 tokenizer/);
    const families = await other.locator('#tok-family option').evaluateAll((els) => els.map((o) => o.value));
    assert.ok(!families.includes('glm5') && families.includes('qwen3'));
    await other.check('input[name="tok-source"][value="custom"]');
    await other.selectOption('#tok-family', 'qwen3');
    await other.waitForFunction(() => document.querySelector('#tok-view').dataset.family === 'qwen3');
    assert.equal(await other.isHidden('#tok-error'), true);
    await other.screenshot({ path: path.join(artifacts, '11-no-tokenizer.png'), fullPage: true });
    // Fine-tuning it needs the tokenizer too.
    await other.click('#tab-finetune');
    await other.selectOption('#ft-model', 'base:zai-org/GLM-5.3');
    assert.equal(await other.inputValue('#ft-renderer'), 'glm5_3_max_reasoning');
    assert.deepEqual(await other.locator('#ft-renderer option').evaluateAll((els) => els.map((o) => o.value)), tinker.getRecommendedRendererNames('zai-org/GLM-5.3'));
    await other.waitForFunction(() => document.querySelector('#ft-parse').dataset.examples === '6');
    await other.click('#ft-run');
    await other.waitForSelector('#ft-status[data-state="failed"]');
    assert.match(await other.textContent('#ft-error'), /^NoTokenizer.*GLM-5 tokenizer/s);
    assert.deepEqual(errors, []);
  } finally {
    await other.close();
  }
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
