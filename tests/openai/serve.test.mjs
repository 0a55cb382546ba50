// `tinker-wasm serve`: the OpenAI-compatible handler on a local port (pkg/cli/commands/serve.js),
// started as a user starts it, with the tokenizer files from a directory (offline), against
// tinker-sim. openai-node and the AI SDK with its printed base URL; oracle: the same requests
// through openaiFetch in-process on the same simulator. Then Ctrl-C ends it with status 0.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText } from 'ai';
import { ServiceClient, openaiFetch } from 'tinker-wasm';
import { tokenizerFamilies, tokenizerIds } from '../../www/dev/static.mjs';
import { tokenizerOptions } from '../../pkg/cli/commands/serve.js';
import * as tinker from 'tinker-wasm';
import { startSim } from '../js/sim.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(root, 'pkg/cli/main.js');
const KEY = 'tml-serve-test';
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tinker-wasm-serve-'));
const tokDir = path.join(tmp, 'tokenizers');

let sim;
let server;
let baseURL;
let stderr = '';
let service;
let client;
let local;

const env = () => ({ PATH: process.env.PATH, HOME: tmp, TINKER_BASE_URL: sim.url, TINKER_API_KEY: KEY, TINKER_TELEMETRY: '0' });

/** A directory laid out as `--tokenizers` takes it: `<tokenizer id>/tokenizer.json`. */
async function tokenizerDir() {
  const families = tokenizerFamilies();
  for (const [id, key] of await tokenizerIds(families)) {
    fs.mkdirSync(path.join(tokDir, id), { recursive: true });
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.symlinkSync(path.join(families[key].dir, f), path.join(tokDir, id, f));
  }
}

before(async () => {
  sim = await startSim(['--api-key', KEY, '--seed', '33']);
  await tokenizerDir();
  server = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--tokenizers', tokDir], { env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
  server.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  baseURL = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.setEncoding('utf8').on('data', (d) => {
      out += d;
      const m = /at (http:\/\/\S+\/v1) /.exec(out);
      if (m) resolve(m[1]);
    });
    server.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out} ${stderr}`)));
  });
  service = new ServiceClient({ baseURL: sim.url, apiKey: KEY, telemetry: false, ...tokenizerOptions(tinker, tokDir) });
  client = new OpenAI({ baseURL, apiKey: 'any', maxRetries: 0 });
  local = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', maxRetries: 0, fetch: openaiFetch(service) });
});

after(async () => {
  if (server && server.exitCode === null) server.kill('SIGKILL');
  await service?.close();
  await sim?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const messages = [{ role: 'user', content: 'Say something about the sea.' }];

test('openai-node against tinker-wasm serve: the in-process answers, streamed too; models; errors', async () => {
  const req = { model: 'Qwen/Qwen3-8B', messages, max_tokens: 12, seed: 2, logprobs: true };
  const a = await client.chat.completions.create(req);
  const b = await local.chat.completions.create(req);
  assert.deepEqual({ ...a, id: '', created: 0 }, { ...b, id: '', created: 0 });
  let streamed = '';
  for await (const chunk of await client.chat.completions.create({ ...req, stream: true })) streamed += chunk.choices[0]?.delta.content ?? '';
  assert.equal(streamed, b.choices[0].message.content);
  // Another family, its tokenizer from the directory too (Llama 3).
  const llama = { model: 'meta-llama/Llama-3.1-8B-Instruct', messages, max_tokens: 5, seed: 1 };
  assert.equal((await client.chat.completions.create(llama)).choices[0].message.content, (await local.chat.completions.create(llama)).choices[0].message.content);
  assert.ok((await client.models.list()).data.some((m) => m.id === 'Qwen/Qwen3-8B'));
  await assert.rejects(client.chat.completions.create({ ...req, temperature: 'hot' }), (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  await assert.rejects(client.chat.completions.create({ ...req, model: 'No/Such' }), (e) => e instanceof OpenAI.NotFoundError);
  // A client that gives up: the server logs it as aborted and keeps serving.
  const ac = new AbortController();
  const gone = client.chat.completions.create({ ...req, max_tokens: 64 }, { signal: ac.signal });
  setImmediate(() => ac.abort());
  await assert.rejects(gone);
  assert.equal((await client.chat.completions.create(req)).choices[0].message.content, a.choices[0].message.content);
  assert.match(stderr, /^POST \/v1\/chat\/completions 200 \d+ms$/m);
});

test('the AI SDK against tinker-wasm serve: generateText and streamText', async () => {
  const provider = createOpenAICompatible({ name: 'tinker', baseURL, includeUsage: true });
  const oracle = await local.chat.completions.create({ model: 'Qwen/Qwen3-8B', messages, max_tokens: 9, seed: 7, temperature: 1 });
  const { text } = await generateText({ model: provider.chatModel('Qwen/Qwen3-8B'), messages, maxOutputTokens: 9, seed: 7, temperature: 1 });
  assert.equal(text, oracle.choices[0].message.content);
  const s = streamText({ model: provider.chatModel('Qwen/Qwen3-8B'), messages, maxOutputTokens: 9, seed: 7, temperature: 1 });
  let streamed = '';
  for await (const part of s.textStream) streamed += part;
  assert.equal(streamed, oracle.choices[0].message.content);
});

test('bad options fail at start with the CLI\'s error and status; Ctrl-C ends the server with 0', async () => {
  for (const [args, re] of [
    [['--port', '70000'], /Invalid --port: 70000/],
    [['--tokenizers', path.join(tmp, 'nope')], /Invalid --tokenizers/],
  ]) {
    const r = spawnSync(process.execPath, [CLI, 'serve', ...args], { env: env(), encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, re);
  }
  const none = spawnSync(process.execPath, [CLI, 'serve', '--port', '0'], { env: { ...env(), TINKER_API_KEY: '' }, encoding: 'utf8' });
  assert.equal(none.status, 1);
  assert.match(none.stderr, /api_key client option must be set/);
  const exited = new Promise((resolve) => server.once('exit', (code, signal) => resolve({ code, signal })));
  server.kill('SIGINT');
  assert.deepEqual(await exited, { code: 0, signal: null });
});
