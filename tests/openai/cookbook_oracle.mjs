// Our side of tests/openai/cookbook_oracle.py: each case's OpenAI request (a JSON body)
// through `openaiFetch(service)` (pkg/openai.js over crates/openai), in order, one at a time,
// against the tinker-sim at --base-url; what each answered is written to --out as JSON
// (status, and the parts of the answer the cookbook's shim also returns).
//
//   node tests/openai/cookbook_oracle.mjs --cases FILE --out FILE --tokenizer-dir DIR --base-url URL
import * as fs from 'node:fs';
import { ServiceClient, Tokenizer, openaiFetch } from 'tinker-wasm';
import { localService } from '../cookbook/local-service.mjs';

const argv = process.argv.slice(2);
const a = new Map();
for (let i = 0; i < argv.length; i += 2) a.set(argv[i].replace(/^--/, ''), argv[i + 1]);
const tokDir = a.get('tokenizer-dir');

const service = localService({ ServiceClient, Tokenizer }, a.get('base-url'), tokDir);
const handler = openaiFetch(service);

/** A handler over a service whose sampler returns `script` (tokens, logprobs, stop_reason): the
 * answer paths on answers tinker-sim's model never writes (tool calls, thinking). */
function scripted(script) {
  return openaiFetch({
    createSamplingClient: async () => ({ baseModel: 'Qwen/Qwen3-8B', sample: async () => ({ sequences: [script] }) }),
    getTokenizer: (model) => service.getTokenizer(model),
  });
}

/** The parts of one choice the comparison reads. */
function chatChoice(c) {
  return {
    content: c.message.content ?? null,
    reasoning_content: c.message.reasoning_content ?? null,
    tool_calls: c.message.tool_calls ?? null,
    finish_reason: c.finish_reason,
    logprobs: c.logprobs?.content?.map((t) => t.logprob) ?? null,
  };
}

/** Reassembles a chat stream's chunks into one answer per choice (content and finish reason). */
function fromStream(text) {
  const choices = [];
  let usage = null;
  for (const line of text.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6));
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices ?? []) {
      const o = (choices[c.index] ??= { content: '', reasoning_content: null, tool_calls: null, finish_reason: null, logprobs: null });
      o.content += c.delta?.content ?? '';
      o.finish_reason = c.finish_reason ?? o.finish_reason;
    }
  }
  return { choices, usage };
}

const cases = JSON.parse(fs.readFileSync(a.get('cases'), 'utf8'));
const out = [];
try {
  for (const c of cases) {
    const route = c.endpoint === 'completions' ? 'completions' : 'chat/completions';
    const r = await (c.script ? scripted(c.script) : handler)(`http://tinker.local/v1/${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(c.request) });
    const text = await r.text();
    if (r.status !== 200) {
      out.push({ name: c.name, status: r.status, error: JSON.parse(text).error, ...(c.script ? { scripted: true } : {}) });
      continue;
    }
    if (c.request.stream) {
      out.push({ name: c.name, status: 200, ...fromStream(text) });
      continue;
    }
    const body = JSON.parse(text);
    const choices = route === 'completions'
      ? body.choices.map((x) => ({ content: x.text, finish_reason: x.finish_reason, logprobs: x.logprobs?.token_logprobs ?? null }))
      : body.choices.map(chatChoice);
    out.push({ name: c.name, status: 200, choices, usage: body.usage, ...(c.script ? { scripted: true } : {}) });
  }
} finally {
  await service.close();
}
fs.writeFileSync(a.get('out'), JSON.stringify(out, null, 1));
