// The Sample panel: a base model or checkpoint (optionally a second one to compare), a
// chat or raw prompt rendered with the model's template, sampling parameters, and the
// results with per-token logprobs.
import { $, h, isAbort, ms, num, setStatus, showError } from './ui.js';
import { isLoaded, familyName, modelInfo, pieces, rendererFor, tokenizerFor } from './tokenizers.js';
import { resultColumn } from './render.js';
import { parseModelKey } from './connection.js';
import { RAW, fillModelSelect, fillRendererSelect, modelSummary, rendererOf } from './pickers.js';
import { openaiRequest, openaiSnippets } from './openai-snippet.js';

/** A short label for a model key. */
export function modelLabel(key) {
  const { kind, id } = parseModelKey(key);
  if (kind === 'base') return id;
  const m = /^tinker:\/\/([^/]+)\/sampler_weights\/(.+)$/.exec(id);
  return m ? `${m[2]} (${m[1].slice(0, 8)}…)` : id;
}

/** Parses the stop field: a JSON array, or comma-separated strings (`\n` escapes). */
export function parseStop(text) {
  const t = text.trim();
  if (!t) return null;
  if (t.startsWith('[')) {
    const v = JSON.parse(t);
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string') && !v.every((x) => Number.isInteger(x))) {
      throw Object.assign(new TypeError('stop must be a JSON array of strings or of token ids'), { field: 'stop' });
    }
    return v;
  }
  return t.split(',').map((x) => x.trim().replace(/\\n/g, '\n').replace(/\\t/g, '\t')).filter(Boolean);
}

export function samplePanel(app) {
  const el = {
    form: $('#sample-form'), a: $('#model-a'), b: $('#model-b'), compare: $('#compare'), refresh: $('#refresh-models'),
    system: $('#system'), user: $('#user'), raw: $('#raw'), answer: $('#answer'), renderer: $('#renderer'), info: $('#model-info'),
    rendered: $('#rendered-text'), renderedCount: $('#rendered-count'),
    maxTokens: $('#max-tokens'), temperature: $('#temperature'), topK: $('#top-k'), topP: $('#top-p'), seed: $('#seed'),
    n: $('#num-samples'), stop: $('#stop'), alts: $('#topk-logprobs'), scorePrompt: $('#score-prompt'),
    run: $('#sample'), cancel: $('#sample-cancel'), status: $('#sample-status'), error: $('#sample-error'), results: $('#results'),
    snippet: $('#openai-snippet'), snippetNode: $('#openai-node'), snippetCurl: $('#openai-curl'),
  };
  let op = null;
  let renderSeq = 0;
  let pickSeq = 0;

  /** `chat` (a renderer is picked) or `raw`. */
  const mode = () => (el.renderer.value === RAW ? 'raw' : 'chat');
  /** The renderer for a model: model A's pick, or its counterpart for model B. */
  const rendererName = (baseModel) => rendererOf(baseModel, el.renderer.value);

  function messages() {
    const out = [];
    if (el.system.value.trim()) out.push({ role: 'system', content: el.system.value });
    out.push({ role: 'user', content: el.user.value });
    return out;
  }

  /** The prompt tokens for a base model, the default stop (end of turn in chat mode) and the renderer's name. */
  function buildPrompt(baseModel, tok) {
    const name = rendererName(baseModel);
    if (name !== RAW) {
      const renderer = rendererFor(baseModel, tok, name);
      const prompt = renderer.buildGenerationPrompt(messages());
      return { ids: Uint32Array.from(prompt.chunks.flatMap((c) => [...c.tokens])), stop: renderer.stopSequences, renderer: name };
    }
    return { ids: tok.encode(el.raw.value, { add_special_tokens: true }), stop: null, renderer: RAW };
  }

  /**
   * The reference answer after the prompt, as the model would produce it (chat mode: the
   * renderer's assistant turn, end-of-turn token included). Returns the whole sequence and
   * the positions (into it) of the answer's tokens.
   */
  function buildAnswer(baseModel, tok, promptIds) {
    const answer = el.answer.value;
    if (!answer.trim()) return null;
    const name = rendererName(baseModel);
    if (name !== RAW) {
      const renderer = rendererFor(baseModel, tok, name);
      const { model_input, weights } = renderer.buildSupervisedExample([...messages(), { role: 'assistant', content: answer }]);
      const seq = model_input.chunks.flatMap((c) => [...c.tokens]);
      const positions = [];
      weights.forEach((w, i) => w > 0 && positions.push(i));
      return { seq, positions };
    }
    const ids = tok.encode(answer);
    const seq = [...promptIds, ...ids];
    return { seq, positions: ids.length ? Array.from(ids, (_, i) => promptIds.length + i) : [] };
  }

  /** Model A changed: its renderers, its description, then the preview. */
  async function pickModel() {
    const seq = ++pickSeq;
    const key = el.a.value;
    if (!key || !app.conn) return;
    let baseModel;
    try {
      baseModel = await app.conn.baseModelOf(key);
    } catch (e) {
      if (seq === pickSeq) showError(el.error, e);
      return;
    }
    if (seq !== pickSeq) return;
    fillRendererSelect(el.renderer, baseModel);
    el.info.textContent = modelSummary(baseModel);
    el.info.dataset.model = baseModel;
    renderPreview();
  }

  /** Re-renders the prompt preview for model A and tells the Tokens panel. */
  async function renderPreview() {
    const seq = ++renderSeq;
    for (const [k, v] of Object.entries({ chat: mode() === 'chat', raw: mode() === 'raw' })) el.form.querySelector(`[data-prompt="${k}"]`).hidden = !v;
    const key = el.a.value;
    if (!key || !app.conn) return;
    let baseModel;
    try {
      baseModel = await app.conn.baseModelOf(key);
      const { family } = modelInfo(baseModel);
      if (family && !isLoaded(family)) {
        el.rendered.dataset.state = 'loading';
        el.renderedCount.textContent = `· loading the ${familyName(family)} tokenizer…`;
      }
      const tok = await tokenizerFor(baseModel);
      if (seq !== renderSeq) return;
      const { ids, renderer } = buildPrompt(baseModel, tok);
      const parts = pieces(tok, ids);
      el.rendered.replaceChildren(...parts.map((p) => (p.special ? h('span.special', {}, p.text) : p.text)));
      el.renderedCount.textContent = `· ${ids.length} tokens · ${baseModel} · ${renderer === RAW ? 'raw text' : renderer}`;
      el.rendered.dataset.tokens = String(ids.length);
      el.rendered.dataset.renderer = renderer;
      el.rendered.dataset.state = 'ok';
      app.bus.dispatchEvent(new CustomEvent('prompt', { detail: { model: baseModel, family, ids, tok } }));
    } catch (e) {
      if (seq !== renderSeq) return;
      el.rendered.textContent = e.name === 'NoTokenizer' ? `No tokenizer: ${e.message}.` : `(cannot render: ${e.message})`;
      el.rendered.dataset.state = e.name === 'NoTokenizer' ? 'no-tokenizer' : 'error';
      delete el.rendered.dataset.tokens;
      el.renderedCount.textContent = '';
      if (baseModel) app.bus.dispatchEvent(new CustomEvent('prompt', { detail: { model: baseModel, family: modelInfo(baseModel).family, error: e } }));
    }
  }

  function params() {
    const samplingParams = {
      max_tokens: num(el.maxTokens, { integer: true }),
      temperature: num(el.temperature),
      top_k: num(el.topK, { integer: true, fallback: -1 }),
      top_p: num(el.topP, { fallback: 1 }),
    };
    const seed = num(el.seed, { integer: true, fallback: null });
    if (seed !== null) samplingParams.seed = seed;
    return {
      samplingParams,
      numSamples: num(el.n, { integer: true }),
      stop: parseStop(el.stop.value),
      alternatives: num(el.alts, { integer: true, fallback: 0 }),
      scorePrompt: el.scorePrompt.checked,
    };
  }

  function busy(on) {
    el.run.disabled = on || !app.conn;
    el.cancel.disabled = !on;
    el.form.setAttribute('aria-busy', String(on));
  }

  async function sampleOne(key, p, signal, opRef) {
    const t0 = performance.now();
    const baseModel = await app.conn.baseModelOf(key);
    const tok = await tokenizerFor(baseModel);
    opRef.check();
    const { ids, stop, renderer } = buildPrompt(baseModel, tok);
    const client = await app.conn.samplingClient(key, { signal });
    opRef.setPhase(`sampling ${p.numSamples}× from ${modelLabel(key)}…`);
    const samplingParams = { ...p.samplingParams };
    const s = p.stop ?? stop;
    if (s) samplingParams.stop = s;
    const res = await client.sample({
      prompt: ids,
      num_samples: p.numSamples,
      sampling_params: samplingParams,
      include_prompt_logprobs: p.scorePrompt,
      topk_prompt_logprobs: p.scorePrompt && p.alternatives ? p.alternatives : undefined,
      topk_sample_logprobs: p.alternatives || undefined,
    }, { signal });
    let answer = null;
    const ref = buildAnswer(baseModel, tok, ids);
    if (ref && ref.positions.length) {
      opRef.setPhase(`scoring the reference answer with ${modelLabel(key)}…`);
      const lps = await client.computeLogprobs(ref.seq, {}, { signal });
      answer = { ids: ref.positions.map((i) => ref.seq[i]), logprobs: ref.positions.map((i) => lps[i]) };
    }
    return { key, baseModel, renderer, tok, ids, res, answer, elapsedMs: performance.now() - t0 };
  }

  /** The OpenAI request that reproduces model A's sample (openai-snippet.js). */
  function showSnippet(r, p) {
    const request = openaiRequest({ model: parseModelKey(r.key).id, mode: r.renderer === RAW ? 'raw' : 'chat', messages: messages(), raw: el.raw.value, renderer: r.renderer, params: p });
    const { node, curl } = openaiSnippets(request, app.conn.mode === 'relay' ? app.conn.baseURL : null);
    el.snippetNode.textContent = node;
    el.snippetCurl.textContent = curl ?? '';
    el.snippetCurl.parentElement.hidden = curl === null;
    el.snippet.dataset.request = JSON.stringify(request);
    el.snippet.hidden = false;
  }

  el.snippet.addEventListener('click', (e) => {
    const id = e.target.closest?.('button.copy')?.dataset.copy;
    if (!id) return;
    navigator.clipboard?.writeText($(`#${id}`).textContent).then(
      () => setStatus(el.status, 'done', 'Copied.'),
      () => setStatus(el.status, 'failed', 'The browser refused the clipboard: select the text and copy it.'),
    );
  });

  /** Samples from model A (and B when comparing). */
  async function run() {
    if (op?.active || !app.conn) return;
    showError(el.error, null);
    let p;
    try {
      p = params();
    } catch (e) {
      showError(el.error, e);
      setStatus(el.status, 'failed', 'Check the parameters.');
      return;
    }
    const keys = [el.a.value];
    if (el.compare.checked) {
      if (!el.b.value) return showError(el.error, Object.assign(new Error('pick a second model to compare'), { name: 'TypeError' }));
      keys.push(el.b.value);
    }
    const current = app.activity.start({ title: `Sample · ${keys.map(modelLabel).join(' vs ')}`, kinds: ['Sample'] });
    op = current;
    app.panelOps.set('panel-sample', current);
    busy(true);
    setStatus(el.status, 'running', 'Sampling…');
    current.onChange((o) => {
      if (o.state === 'waiting') setStatus(el.status, 'waiting', `Waiting on the server${o.queueState ? ` (queue: ${o.queueState})` : ''} · ${o.polls} poll${o.polls > 1 ? 's' : ''}…`);
      else if (o.state === 'cancelling') setStatus(el.status, 'cancelling', 'Cancelling…');
    });
    const t0 = performance.now();
    try {
      const done = await Promise.all(keys.map((k) => sampleOne(k, p, current.signal, current).catch((e) => {
        // One failure stops the other model's call too.
        current.controller.abort();
        throw e;
      })));
      el.results.replaceChildren(...done.map((r, i) => resultColumn({
        key: r.key,
        title: `${keys.length > 1 ? (i === 0 ? 'A · ' : 'B · ') : ''}${modelLabel(r.key)}`,
        subtitle: `${parseModelKey(r.key).kind === 'ckpt' ? `on ${r.baseModel} · ` : ''}${r.renderer === RAW ? 'raw text' : r.renderer}`,
        tok: r.tok,
        promptIds: r.ids,
        res: r.res,
        answer: r.answer,
        elapsedMs: r.elapsedMs,
      })));
      el.results.dataset.models = String(done.length);
      showSnippet(done[0], p);
      const n = done.reduce((a, r) => a + r.res.sequences.length, 0);
      current.finish(`${n} sample${n > 1 ? 's' : ''}`);
      setStatus(el.status, 'done', `${n} sample${n > 1 ? 's' : ''} in ${ms(performance.now() - t0)}.`);
    } catch (e) {
      current.fail(e);
      if (current.state === 'cancelled') {
        setStatus(el.status, 'cancelled', 'Cancelled.');
        if (!isAbort(e)) showError(el.error, e);
      } else {
        setStatus(el.status, 'failed', 'Sampling failed.');
        showError(el.error, e);
      }
    } finally {
      busy(false);
    }
  }

  el.form.addEventListener('submit', (e) => {
    e.preventDefault();
    run();
  });
  el.cancel.addEventListener('click', () => op?.cancel());
  el.compare.addEventListener('change', () => {
    el.b.disabled = !el.compare.checked;
  });
  el.refresh.addEventListener('click', () => app.refreshModels());
  for (const input of [el.system, el.user, el.raw, el.renderer]) {
    input.addEventListener(input.tagName === 'SELECT' ? 'change' : 'input', () => renderPreview());
  }
  el.a.addEventListener('change', () => pickModel());
  for (const ta of [el.system, el.user, el.raw, el.answer]) {
    ta.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        run();
      }
    });
  }
  busy(false);

  return {
    el,
    run,
    renderPreview,
    busy,
    setModels(models) {
      const before = el.a.value;
      fillModelSelect(el.a, models, { prefer: app.config.defaultModel });
      fillModelSelect(el.b, models, { prefer: app.config.defaultModel });
      if (!el.b.value || el.b.value === el.a.value) {
        const other = [...el.b.options].find((o) => o.value !== el.a.value && !o.closest('optgroup[label="Your sampler checkpoints"]'));
        if (other) el.b.value = other.value;
      }
      if (el.a.value !== before || !el.renderer.options.length) return pickModel();
      renderPreview();
    },
    /** Picks model A (a key) as the user would. */
    async selectModel(key) {
      el.a.value = key;
      await pickModel();
    },
    /** Sets up a comparison (e.g. base vs fine-tuned, with the renderer it was trained with) and runs it. */
    async compareWith({ a, b, user, system = '', answer = '', renderer = null }) {
      for (const [select, key] of [[el.a, a], [el.b, b]]) {
        if (![...select.options].some((o) => o.value === key)) select.append(h('option', { value: key }, modelLabel(key)));
        select.value = key;
      }
      el.compare.checked = true;
      el.b.disabled = false;
      await pickModel();
      if (renderer && [...el.renderer.options].some((o) => o.value === renderer)) el.renderer.value = renderer;
      else if (el.renderer.value === RAW && el.renderer.options.length > 1) el.renderer.selectedIndex = 0;
      el.user.value = user;
      el.system.value = system;
      el.answer.value = answer;
      renderPreview();
      return run();
    },
  };
}
