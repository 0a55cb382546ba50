// The OpenAI-compatible handler: `openaiFetch(service, options)` is a function with fetch's
// signature that serves the OpenAI API shape from a ServiceClient, in-process (hand it to
// `new OpenAI({ baseURL, fetch })` or the AI SDK's `createOpenAICompatible({ baseURL, fetch })`),
// or behind any server. The request's reading and checking and the responses are the Rust
// crate's (crates/openai, through the module's __openai* functions); this file routes,
// renders with the model's renderer, samples, and parses the answer.

/**
 * @param {any} glue the module
 * @returns {(service: any, options?: import('./gen/full/tinker_wasm.js').OpenAIFetchOptions) => (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>}
 */
export function openaiHandler(glue) {
  return function openaiFetch(service, options) {
    if (service === null || typeof service !== 'object' || typeof service.createSamplingClient !== 'function') {
      throw new TypeError('openaiFetch: service must be a ServiceClient');
    }
    // Read and checked by the module (OpenAIFetchOptions, declared once in src/wasm/openai.rs):
    // by default a sampler's 429 is answered with a 429 (OpenAI clients back off and retry on
    // their own), unless the caller asks the handler to wait it out as the SDK does.
    const { renderer, backpressure } = glue.__openaiOptions(options);
    /** Samplers by `model`, created once. @type {Map<string, Promise<any>>} */
    const samplers = new Map();
    const sampler = (/** @type {any} */ plan) => {
      if (!samplers.has(plan.model)) {
        const target = Object.fromEntries(Object.entries(plan.target).filter(([, v]) => v !== null));
        const p = service.createSamplingClient(target);
        p.catch(() => samplers.delete(plan.model));
        samplers.set(plan.model, p);
      }
      return /** @type {Promise<any>} */ (samplers.get(plan.model));
    };
    return async function fetch(input, init = {}) {
      // A Request is read as one; a URL with `init` (what OpenAI clients pass) directly, without
      // building a Request (its construction is a good part of the handler's own cost).
      const request = input instanceof Request ? input : null;
      const method = (request?.method ?? init.method ?? 'GET').toUpperCase();
      const signal = init.signal ?? request?.signal;
      const url = new URL(request?.url ?? String(input));
      const text = () => (request ? request.text() : typeof init.body === 'string' ? Promise.resolve(init.body) : new Response(init.body ?? null).text());
      const route = url.pathname.replace(/^.*?\/v1\//, '/v1/');
      try {
        if (method === 'GET' && route === '/v1/models') return json(200, await models());
        if (method === 'POST' && route === '/v1/chat/completions') return await chat(await text(), signal);
        if (method === 'POST' && route === '/v1/completions') return await completion(await text(), signal);
        throw glue.__openaiError(404, `no route ${method} ${url.pathname} (this server has POST /v1/chat/completions, POST /v1/completions and GET /v1/models)`);
      } catch (e) {
        // Aborted: reject as fetch does, with the signal's reason (an AbortError by default).
        if (signal?.aborted) throw signal.reason ?? e;
        const err = /** @type {any} */ (e);
        if (err && typeof err.status === 'number' && typeof err.body === 'string' && !(err instanceof Error)) return new Response(err.body, { status: err.status, headers: { 'content-type': 'application/json' } });
        return failure(err);
      }
    };

    /** A failure of the Tinker calls, as OpenAI answers it. @param {any} e */
    function failure(e) {
      const message = String(e?.message ?? e);
      const status = e?.status === 429 ? 429 : /unknown base_model|not found|does not exist/i.test(message) ? 404 : e?.status === 400 ? 400 : 500;
      const { body } = glue.__openaiError(status, message, undefined);
      /** @type {Record<string, string>} */
      const headers = { 'content-type': 'application/json' };
      // The sampler's own wait, if it named one, for the client's backoff.
      for (const h of status === 429 ? ['retry-after', 'retry-after-ms'] : []) if (typeof e?.headers?.[h] === 'string') headers[h] = e.headers[h];
      return new Response(body, { status, headers });
    }

    async function models() {
      const caps = await service.getServerCapabilities();
      /** @type {[string, string][]} */
      const list = caps.supported_models.map((/** @type {any} */ m) => [m.model_name, 'tinker']);
      try {
        const page = await service.restClient().listUserCheckpoints({ limit: 100 });
        for (const c of page.checkpoints ?? page.data ?? []) if (c.checkpoint_type === 'sampler') list.push([c.tinker_path, 'user']);
      } catch {
        // Listing checkpoints is optional (a key that cannot list them still serves models).
      }
      return glue.__openaiModels(JSON.stringify(list));
    }

    /** The renderer and tokenizer of the plan's model. @param {any} plan @param {any} s */
    async function rendering(plan, s) {
      const base = plan.target.base_model ?? s.baseModel;
      const tokenizer = await service.getTokenizer(base);
      const name = plan.renderer ?? renderer;
      try {
        return { tokenizer, renderer: name ? new glue.Renderer(name, tokenizer) : glue.Renderer.forModel(base, tokenizer) };
      } catch (e) {
        throw glue.__openaiError(400, `renderer: ${/** @type {any} */ (e)?.message ?? e}`, 'renderer');
      }
    }

    /** The sample of `prompt` on the plan's sampler, `stop` the renderer's unless the request names some. */
    async function sample(/** @type {any} */ s, /** @type {any} */ plan, /** @type {any} */ prompt, /** @type {any} */ stop, /** @type {number} */ topk, /** @type {any} */ signal) {
      const p = Object.fromEntries(Object.entries(plan.sampling_params).filter(([, v]) => v !== null));
      const stops = plan.sampling_params.stop ?? stop;
      return s.sample({ prompt, num_samples: plan.n, sampling_params: { ...p, ...(stops === undefined ? {} : { stop: stops }) }, ...(topk ? { topk_sample_logprobs: topk } : {}) }, { signal, backpressure });
    }

    /** One sampled sequence as the crate reads it. */
    function choice(/** @type {any} */ seq, /** @type {any} */ tokenizer, /** @type {any} */ message) {
      const tokens = Array.from(seq.tokens);
      const text = (/** @type {number} */ t) => tokenizer.decode([t]);
      return {
        message: JSON.stringify(message),
        stop_reason: seq.stop_reason,
        texts: tokens.map(text),
        logprobs: Array.from(seq.logprobs ?? tokens.map(() => 0)),
        top: (seq.topk_logprobs ?? []).map((/** @type {any} */ alts) => (alts ?? []).map(([t, lp]) => [text(t), lp])),
      };
    }

    async function chat(/** @type {string} */ body, /** @type {any} */ signal) {
      const plan = JSON.parse(glue.__openaiChatPlan(body));
      const s = await sampler(plan);
      const { tokenizer, renderer } = await rendering(plan, s);
      let messages = plan.messages;
      if (plan.tools) {
        // The tools declared the renderer's way, the system prompt with them.
        const system = messages[0]?.role === 'system' && typeof messages[0].content === 'string' ? messages[0].content : undefined;
        messages = [...renderer.createConversationPrefixWithTools(plan.tools, system), ...messages.slice(system === undefined ? 0 : 1)];
      }
      const prompt = renderer.buildGenerationPrompt(messages);
      const r = await sample(s, plan, prompt, renderer.stopSequences, plan.top_logprobs, signal);
      const answer = {
        id: `chatcmpl-${crypto.randomUUID()}`,
        created: Math.floor(Date.now() / 1000),
        // The prompt's length as the service counts it (Python's ModelInput.length): an image
        // chunk counts its expected_tokens, as OpenAI's usage counts image tokens.
        prompt_tokens: prompt.chunks.reduce((/** @type {number} */ n, /** @type {any} */ c) => n + (c.tokens?.length ?? c.expected_tokens ?? 0), 0),
        choices: r.sequences.map((/** @type {any} */ seq) => choice(seq, tokenizer, renderer.parseResponse(Array.from(seq.tokens)).message)),
      };
      return respond(plan.stream, glue.__openaiChatResponse(body, answer));
    }

    async function completion(/** @type {string} */ body, /** @type {any} */ signal) {
      const plan = JSON.parse(glue.__openaiCompletionPlan(body));
      const s = await sampler(plan);
      const tokenizer = await service.getTokenizer(plan.target.base_model ?? s.baseModel);
      // With the tokenizer's special tokens (BOS for Llama 3), as the cookbook's shim and vLLM encode it.
      const ids = typeof plan.prompt === 'string' ? Array.from(tokenizer.encode(plan.prompt, { add_special_tokens: true })) : plan.prompt;
      // No stop unless the request names some: the server's default (end of text), as OpenAI's
      // completions and the cookbook's shim do.
      const r = await sample(s, plan, ids, undefined, plan.logprobs ?? 0, signal);
      const answer = {
        id: `cmpl-${crypto.randomUUID()}`,
        created: Math.floor(Date.now() / 1000),
        prompt_tokens: ids.length,
        choices: r.sequences.map((/** @type {any} */ seq) => choice(seq, tokenizer, null)),
      };
      return respond(plan.stream, glue.__openaiCompletionResponse(body, answer));
    }
  };
}

/** @param {number} status @param {string} body */
function json(status, body) {
  return new Response(body, { status, headers: { 'content-type': 'application/json' } });
}

/** The response body, or its chunks as server-sent events ending in `[DONE]`. @param {boolean} stream @param {string[]} parts */
function respond(stream, parts) {
  if (!stream) return json(200, parts[0]);
  const events = parts.map((p) => `data: ${p}\n\n`).join('') + 'data: [DONE]\n\n';
  return new Response(events, { status: 200, headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
}
