// The OpenAI request that reproduces what the Sample panel just did (issue 35): the same
// model, prompt, renderer and sampling parameters as a chat-completions (or, for raw text, a
// completions) request, shown as openai-node code and as curl against the relay's `/v1/`
// (tinker-wasm's openaiFetch, run by the relay), ready to copy. Pure: no DOM here.

/**
 * The request body. `model`: a base model or a tinker:// sampler path; `mode` 'chat' or 'raw';
 * `params` the panel's (`samplingParams`, `numSamples`, `stop`, `alternatives`).
 */
export function openaiRequest({ model, mode, messages, raw, renderer, params }) {
  const sp = params.samplingParams;
  const body = { model };
  if (mode === 'chat') Object.assign(body, { messages, renderer });
  else body.prompt = raw;
  body.max_tokens = sp.max_tokens;
  body.temperature = sp.temperature;
  if (sp.top_p !== 1) body.top_p = sp.top_p;
  if (sp.top_k !== -1) body.top_k = sp.top_k;
  if (sp.seed !== undefined) body.seed = sp.seed;
  if (params.numSamples !== 1) body.n = params.numSamples;
  if (params.stop?.every((s) => typeof s === 'string')) body.stop = params.stop;
  if (mode === 'chat') {
    body.logprobs = true;
    if (params.alternatives) body.top_logprobs = params.alternatives;
  } else body.logprobs = params.alternatives || 1;
  return { path: mode === 'chat' ? '/v1/chat/completions' : '/v1/completions', body };
}

/** `text` inside single quotes for a POSIX shell. */
const shellQuote = (text) => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * The snippets for a request: `{ node, curl }`. Through a relay (`relayURL`), openai-node
 * and curl use its `/v1/` with a relay client key (TINKER_RELAY_KEY, one of the relay's
 * OPENAI_CLIENT_KEYS); without one, openai-node runs the handler in-process (curl: null).
 */
export function openaiSnippets({ path, body }, relayURL) {
  const json = JSON.stringify(body, null, 2);
  const call = path === '/v1/chat/completions' ? 'chat.completions' : 'completions';
  const print = path === '/v1/chat/completions' ? 'r.choices[0].message.content' : 'r.choices[0].text';
  if (!relayURL) {
    return {
      node: [
        "import OpenAI from 'openai';",
        "import { ServiceClient, openaiFetch } from 'tinker-wasm';",
        '',
        '// TINKER_API_KEY from the environment; tokenizerBaseURL: where your tokenizer files are.',
        "const service = new ServiceClient({ tokenizerBaseURL: 'https://example.com/tokenizers' });",
        "const client = new OpenAI({ baseURL: 'http://tinker.local/v1', apiKey: 'unused', fetch: openaiFetch(service) });",
        `const r = await client.${call}.create(${json});`,
        `console.log(${print});`,
        'await service.close();',
      ].join('\n'),
      curl: null,
    };
  }
  const base = `${relayURL.replace(/\/+$/, '')}/v1`;
  return {
    node: [
      "import OpenAI from 'openai';",
      '',
      `const client = new OpenAI({ baseURL: '${base}', apiKey: process.env.TINKER_RELAY_KEY });`,
      `const r = await client.${call}.create(${json});`,
      `console.log(${print});`,
    ].join('\n'),
    curl: [`curl -sS ${base}${path.slice(3)} \\`, '  -H "Authorization: Bearer $TINKER_RELAY_KEY" \\', "  -H 'Content-Type: application/json' \\", `  -d ${shellQuote(JSON.stringify(body))}`].join('\n'),
  };
}
