// The Fine-tune panel: chat examples → supervised datums (the model's renderer) → N
// pipelined forwardBackward + optimStep steps on a new LoRA run, a live loss chart, then
// sampler weights and a sampling client on them.
import { $, isAbort, ms, num, setStatus, showError } from './ui.js';
import { conversationToDatum } from 'tinker-wasm';
import { familyName, isLoaded, modelInfo, rendererFor, tokenizerFor } from './tokenizers.js';
import { lossChart } from './chart.js';
import { resultColumn } from './render.js';
import { modelKey, parseModelKey } from './connection.js';
import { modelLabel } from './sample.js';
import { fillModelSelect, fillRendererSelect, modelSummary } from './pickers.js';

/** Steps submitted ahead of the one being awaited (requests run in call order). */
const PIPELINE_DEPTH = 2;

/**
 * Parses chat examples: JSONL (one `{"messages": […]}` or `[…]` per line) or one JSON
 * array of those. Returns `{ examples, errors }`; errors name the line.
 */
export function parseExamples(text) {
  const examples = [];
  const errors = [];
  const t = text.trim();
  if (!t) return { examples, errors: ['no examples'] };
  let items;
  if (t.startsWith('[') && !t.includes('\n{')) {
    try {
      const v = JSON.parse(t);
      items = (Array.isArray(v[0]) || v[0]?.messages ? v : [v]).map((x, i) => [`item ${i + 1}`, x]);
    } catch {
      items = null;
    }
  }
  items ??= t.split('\n').map((line, i) => [`line ${i + 1}`, line]).filter(([, l]) => l.trim()).map(([where, line]) => {
    try {
      return [where, JSON.parse(line)];
    } catch (e) {
      errors.push(`${where}: not JSON (${e.message})`);
      return null;
    }
  }).filter(Boolean);
  for (const [where, v] of items) {
    const messages = Array.isArray(v) ? v : v?.messages;
    if (!Array.isArray(messages) || !messages.length) {
      errors.push(`${where}: expected {"messages": [...]}`);
      continue;
    }
    const bad = messages.findIndex((m) => typeof m?.role !== 'string' || typeof m?.content !== 'string');
    if (bad >= 0) {
      errors.push(`${where}: message ${bad + 1} needs a string role and content`);
      continue;
    }
    if (!messages.some((m) => m.role === 'assistant')) {
      errors.push(`${where}: no assistant message to learn from`);
      continue;
    }
    examples.push(messages.map(({ role, content }) => ({ role, content })));
  }
  return { examples, errors };
}

export function finetunePanel(app) {
  const el = {
    form: $('#ft-form'), model: $('#ft-model'), rank: $('#ft-rank'), renderer: $('#ft-renderer'), info: $('#ft-model-info'), examples: $('#ft-examples'),
    file: $('#ft-file'), reset: $('#ft-reset'), parse: $('#ft-parse'), steps: $('#ft-steps'), lr: $('#ft-lr'),
    trainOn: $('#ft-train-on'), name: $('#ft-name'), run: $('#ft-run'), cancel: $('#ft-cancel'), progress: $('#ft-progress'),
    status: $('#ft-status'), error: $('#ft-error'), chart: $('#ft-chart'), after: $('#ft-after'), path: $('#ft-path'),
    tryForm: $('#ft-try'), tryPrompt: $('#ft-try-prompt'), tryRun: $('#ft-try-run'), compare: $('#ft-compare'),
    tryStatus: $('#ft-try-status'), tryError: $('#ft-try-error'), tryResults: $('#ft-try-results'),
  };
  const chart = lossChart(el.chart);
  let op = null;
  let trained = null; // { path, baseModel, renderer, tok, firstPrompt }
  let exampleSet = '';

  function checkExamples() {
    const { examples, errors } = parseExamples(el.examples.value);
    el.parse.textContent = errors.length ? `${examples.length} valid · ${errors.slice(0, 3).join('; ')}` : `${examples.length} example${examples.length === 1 ? '' : 's'}`;
    el.parse.dataset.examples = String(examples.length);
    el.parse.dataset.errors = String(errors.length);
    return { examples, errors };
  }

  /** The base model changed: its renderers (no raw text: training needs a chat template) and its description. */
  function pickModel() {
    if (!el.model.value) return;
    const baseModel = parseModelKey(el.model.value).id;
    fillRendererSelect(el.renderer, baseModel, { raw: false });
    el.info.textContent = modelSummary(baseModel);
    el.info.dataset.model = baseModel;
  }

  function busy(on) {
    el.run.disabled = on || !app.conn;
    el.cancel.disabled = !on;
    el.form.setAttribute('aria-busy', String(on));
  }

  async function train() {
    if (op?.active || !app.conn) return;
    showError(el.error, null);
    let steps;
    let lr;
    let rank;
    let examples;
    try {
      steps = num(el.steps, { integer: true });
      lr = num(el.lr);
      rank = Number(el.rank.value);
      const parsed = checkExamples();
      if (parsed.errors.length) throw Object.assign(new TypeError(`fix the examples first: ${parsed.errors.join('; ')}`), { field: 'examples' });
      examples = parsed.examples;
      if (el.name.value && !/^[A-Za-z0-9._-]+$/.test(el.name.value)) throw Object.assign(new TypeError('the checkpoint name may use letters, digits, . _ and -'), { field: 'name' });
    } catch (e) {
      showError(el.error, e);
      setStatus(el.status, 'failed', 'Check the inputs.');
      return;
    }
    const baseModel = parseModelKey(el.model.value).id;
    const current = app.activity.start({ title: `Fine-tune · ${baseModel} · ${steps} steps`, kinds: ['CreateModel', 'ForwardBackward', 'OptimStep', 'SaveWeightsForSampler'] });
    op = current;
    app.panelOps.set('panel-finetune', current);
    busy(true);
    el.after.hidden = true;
    chart.reset(steps);
    el.progress.max = steps;
    el.progress.value = 0;
    const say = (state, text) => {
      setStatus(el.status, state, text);
      current.setPhase(text);
    };
    current.onChange((o) => {
      if (o.state === 'cancelling') setStatus(el.status, 'cancelling', 'Cancelling…');
    });
    const t0 = performance.now();
    let done = 0;
    const pending = [];
    try {
      const { family } = modelInfo(baseModel);
      if (family && !isLoaded(family)) say('running', `Loading the ${familyName(family)} tokenizer…`);
      const tok = await tokenizerFor(baseModel);
      current.check();
      const renderer = rendererFor(baseModel, tok, el.renderer.value);
      const data = examples.map((m) => conversationToDatum(m, renderer, { train_on_what: el.trainOn.value, reduction: 'none' }));
      const weight = data.reduce((a, d) => a + d.loss_fn_inputs.weights.data.reduce((x, y) => x + y, 0), 0);
      if (weight === 0) throw Object.assign(new TypeError('no token of these examples is trained on (check "Train on")'), { field: 'examples' });
      say('running', `Creating a rank-${rank} LoRA run on ${baseModel}…`);
      const tc = await app.conn.svc.createLoraTrainingClient({ base_model: baseModel, rank }, { signal: current.signal });
      const { signal } = current;
      const submit = () => {
        // Not awaited in between: forwardBackward and optimStep go out back to back and
        // run as one server step.
        const step = Promise.all([
          tc.forwardBackward(data, 'cross_entropy', {}, { signal }),
          tc.optimStep({ learning_rate: lr }, { signal }),
        ]);
        step.catch(() => {}); // awaited below; this only silences the ones never reached
        pending.push(step);
      };
      for (let i = 0; i < steps; i++) {
        while (pending.length < Math.min(steps, i + PIPELINE_DEPTH)) submit();
        say('running', `Step ${i + 1}/${steps}…`);
        const [out] = await pending[i];
        const loss = out.metrics['loss:sum'] / weight;
        chart.add(loss);
        done = i + 1;
        el.progress.value = done;
      }
      const losses = chart.losses;
      const name = el.name.value || `playground-${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '').replace('T', '-')}`;
      say('running', `Saving sampler weights "${name}"…`);
      const { path } = await tc.saveWeightsForSampler(name, {}, { signal });
      say('running', 'Creating a sampler on the new weights…');
      const sampler = await app.conn.svc.createSamplingClient({ model_path: path }, { signal });
      const key = modelKey('ckpt', path);
      app.conn.adoptSampler(key, sampler, baseModel);
      const last = examples[0].filter((m) => m.role !== 'assistant');
      trained = { key, path, baseModel, renderer, rendererName: el.renderer.value, tok, messages: last, examples };
      el.path.textContent = path;
      el.tryPrompt.value = last.filter((m) => m.role === 'user').at(-1)?.content ?? '';
      el.after.hidden = false;
      el.after.dataset.path = path;
      const text = `Trained ${steps} steps in ${ms(performance.now() - t0)}: loss ${losses[0].toFixed(3)} → ${losses.at(-1).toFixed(3)} per token. Saved ${name}.`;
      current.finish(`loss ${losses[0].toFixed(2)} → ${losses.at(-1).toFixed(2)}`);
      setStatus(el.status, 'done', text);
      app.refreshModels();
    } catch (e) {
      current.fail(e);
      chart.stop(current.state === 'cancelled' ? 'Cancelled before the first step' : 'Failed before the first step');
      if (current.state === 'cancelled') {
        setStatus(el.status, 'cancelled', `Cancelled after ${done} of ${steps} steps${pending.length > done ? ' (steps already submitted may still run on the server)' : ''}.`);
        if (!isAbort(e)) showError(el.error, e);
      } else {
        setStatus(el.status, 'failed', `Training failed after ${done} of ${steps} steps.`);
        showError(el.error, e);
      }
    } finally {
      busy(false);
    }
  }

  async function trySample() {
    if (!trained || op?.active) return;
    showError(el.tryError, null);
    const current = app.activity.start({ title: `Sample · ${modelLabel(trained.key)}`, kinds: ['Sample'] });
    op = current;
    app.panelOps.set('panel-finetune', current);
    el.tryRun.disabled = true;
    setStatus(el.tryStatus, 'running', 'Sampling…');
    const t0 = performance.now();
    try {
      const messages = [...trained.messages.filter((m) => m.role === 'system'), { role: 'user', content: el.tryPrompt.value }];
      const prompt = trained.renderer.buildGenerationPrompt(messages);
      const ids = Uint32Array.from(prompt.chunks.flatMap((c) => [...c.tokens]));
      const sampler = await app.conn.samplingClient(trained.key, { signal: current.signal });
      const p = app.samplingParams();
      const res = await sampler.sample({ prompt: ids, num_samples: p.numSamples, sampling_params: { ...p.samplingParams, stop: p.stop ?? trained.renderer.stopSequences }, topk_sample_logprobs: p.alternatives || undefined }, { signal: current.signal });
      el.tryResults.replaceChildren(resultColumn({ key: trained.key, title: modelLabel(trained.key), subtitle: `fine-tuned ${trained.baseModel} · ${trained.rendererName}`, tok: trained.tok, promptIds: ids, res }));
      current.finish(`${res.sequences.length} samples`);
      setStatus(el.tryStatus, 'done', `Sampled in ${ms(performance.now() - t0)}.`);
    } catch (e) {
      current.fail(e);
      setStatus(el.tryStatus, current.state, current.state === 'cancelled' ? 'Cancelled.' : 'Sampling failed.');
      if (current.state !== 'cancelled') showError(el.tryError, e);
    } finally {
      el.tryRun.disabled = false;
    }
  }

  async function loadFile(file) {
    el.examples.value = await file.text();
    checkExamples();
  }

  el.form.addEventListener('submit', (e) => {
    e.preventDefault();
    train();
  });
  el.form.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      train();
    }
  });
  el.cancel.addEventListener('click', () => op?.cancel());
  el.examples.addEventListener('input', checkExamples);
  el.model.addEventListener('change', () => pickModel());
  el.file.addEventListener('change', () => el.file.files[0] && loadFile(el.file.files[0]));
  el.reset.addEventListener('click', () => {
    el.examples.value = exampleSet;
    checkExamples();
  });
  el.tryForm.addEventListener('submit', (e) => {
    e.preventDefault();
    trySample();
  });
  el.compare.addEventListener('click', async () => {
    if (!trained) return;
    await app.refreshModels();
    app.selectTab('tab-sample');
    // If the prompt is one of the training examples', score its answer too.
    const example = trained.examples.find((m) => m.filter((x) => x.role === 'user').at(-1)?.content === el.tryPrompt.value);
    app.sample.compareWith({
      a: modelKey('base', trained.baseModel),
      b: trained.key,
      user: el.tryPrompt.value,
      system: (example ?? trained.messages).find((m) => m.role === 'system')?.content ?? '',
      answer: example?.filter((m) => m.role === 'assistant').at(-1)?.content ?? '',
      renderer: trained.rendererName,
    });
  });
  busy(false);

  return {
    el,
    chart,
    busy,
    setModels(models) {
      fillModelSelect(el.model, models, { checkpoints: false, trainableOnly: true, prefer: app.config.defaultModel });
      pickModel();
    },
    setExampleSet(text) {
      exampleSet = text;
      if (!el.examples.value.trim()) el.examples.value = text;
      checkExamples();
    },
    setDefaults({ learningRate, steps } = {}) {
      if (learningRate !== undefined) el.lr.value = String(learningRate);
      if (steps !== undefined) el.steps.value = String(steps);
    },
  };
}
