// Renderer parity through the npm package (make test-renderer-parity): every renderer
// name, over the cases tinker-cookbook 0.6.1's own renderers were run on by
// tests/renderers/oracle.py, compared token for token: generation prompts (with and
// without prefill), supervised examples and their weights for every train_on_what,
// build_supervised_examples, stop sequences, parsed responses, tool-declaring prefixes,
// and the model lineup. examples/renderer_parity.rs is the same comparison natively.
//
//   node tests/renderers/parity.mjs target/renderer-parity/expected.json [--only a,b] [--verbose]
//
// Fails on any difference, and when a filter leaves nothing to compare.
import { readFileSync } from 'node:fs';
import * as tinker from '../../pkg/index.js';

const args = process.argv.slice(2);
const path = args.find((a) => !a.startsWith('--') && args[args.indexOf(a) - 1] !== '--only');
if (!path) {
  console.error('usage: node tests/renderers/parity.mjs EXPECTED_JSON [--only a,b] [--verbose]');
  process.exit(2);
}
const only = args.includes('--only') ? args[args.indexOf('--only') + 1].split(',') : null;
const verbose = args.includes('--verbose');
const expected = JSON.parse(readFileSync(path, 'utf8'));

/** Ours in the oracle's shape: `{ ok }` or `{ error }`. */
function outcome(f) {
  try {
    return { ok: f() };
  } catch (e) {
    return { error: `${e?.name}: ${e?.message}` };
  }
}

/** A model input as the oracle writes it: adjacent text chunks merged, images by token count. */
function chunks(mi) {
  const out = [];
  for (const c of mi.chunks) {
    if (c.type === 'encoded_text') {
      const last = out.at(-1);
      if (last?.tokens) last.tokens.push(...c.tokens);
      else out.push({ tokens: [...c.tokens] });
    } else if (c.type === 'image') {
      out.push({ image_tokens: c.expected_tokens });
    } else {
      out.push({ other: c.type });
    }
  }
  return out;
}

const supervised = (s) => ({ chunks: chunks(s.model_input), weights: [...s.weights] });

/** The oracle's image chunks name their format (the cookbook re-encodes JPEG); ours keep
 * the caller's bytes, so only the token count is compared. */
function withoutImageFormat(v) {
  if (Array.isArray(v)) return v.map(withoutImageFormat);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.entries(v)
        .filter(([k]) => !(k === 'format' && 'image_tokens' in v))
        .map(([k, x]) => [k, withoutImageFormat(x)]),
    );
  }
  return v;
}

const jsonError = (v) => typeof v === 'string' && v.startsWith('Invalid JSON: ');

function eq(a, b, key) {
  if (typeof a === 'number' && typeof b === 'number') return a === b || Math.abs(a - b) <= 1e-6 * Math.max(Math.abs(a), Math.abs(b));
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => eq(x, b[i]));
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && eq(a[k], b[k], k));
  }
  // Python's json and serde word JSON errors differently: only their kind is compared.
  if (key === 'error' && jsonError(a) && jsonError(b)) return true;
  return a === b;
}

function same(want, got) {
  want = withoutImageFormat(want);
  if ('error' in want || 'error' in got) return 'error' in want && 'error' in got;
  return eq(want, got);
}

function firstDiff(p, a, b) {
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (!eq(a[i], b[i])) return firstDiff(`${p}[${i}]`, a[i], b[i]);
    return `${p}: length ${a.length} vs ${b.length}`;
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const k of Object.keys(a)) {
      if (!(k in b)) return `${p}.${k}: missing in ours`;
      if (!eq(a[k], b[k], k)) return firstDiff(`${p}.${k}`, a[k], b[k]);
    }
    for (const k of Object.keys(b)) if (!(k in a)) return `${p}.${k}: only in ours`;
  }
  const s = (v) => JSON.stringify(v)?.slice(0, 300);
  return `${p}: cookbook ${s(a)} | ours ${s(b)}`;
}

let failed = 0;
let compared = 0;
function tally(name) {
  let ok = 0;
  let bad = 0;
  let shown = 0;
  return {
    check(what, want, got) {
      if (same(want, got)) ok++;
      else {
        bad++;
        if (verbose || shown++ < 3) console.log(`    DIFF ${what}: ${firstDiff('', withoutImageFormat(want), got)}`);
      }
    },
    done() {
      console.log(`${name}: ${ok} match, ${bad} differ`);
      failed += bad;
      compared += ok + bad;
    },
  };
}

if (!only) {
  const t = tally('lineup');
  // The lineup's models (and unknown names), then other names the cookbook answers (a
  // `:checkpoint` suffix, an Inkling it does not list).
  for (const m of [...expected.models, ...(expected.model_lookups ?? [])]) {
    const got = outcome(() => tinker.getModelAttributes(m.name));
    t.check(`model ${m.name}`, m.error ? { error: m.error } : { ok: m.attributes }, got);
    if (!m.error) {
      const r = outcome(() => tinker.getRecommendedRendererNames(m.name));
      t.check(`recommended ${m.name}`, { ok: m.attributes.recommended_renderers }, r);
    }
  }
  t.check('listModels', { ok: expected.models.filter((m) => !m.error).map((m) => m.name) }, outcome(() => tinker.listModels()));
  t.done();
}

const tokenizers = new Map();
for (const r of expected.renderers) {
  if (only && !only.includes(r.renderer)) continue;
  if (!tokenizers.has(r.tokenizer)) {
    const m = expected.tokenizers[r.tokenizer];
    tokenizers.set(r.tokenizer, tinker.Tokenizer.fromJSON(readFileSync(m.json), { config: readFileSync(m.config, 'utf8') }));
  }
  const tok = tokenizers.get(r.tokenizer);
  const t = tally(`${r.renderer} [${r.tokenizer}]`);
  // The cookbook cannot build some renderers (its entry then has an "error"): ours must
  // refuse them too.
  const made = outcome(() => new tinker.Renderer(r.renderer, tok, r.options ?? undefined));
  compared++;
  if (r.error || made.error) {
    if (r.error && made.error) console.log(`${r.renderer}: refused by both (${made.error})`);
    else {
      console.log(`${r.renderer}: DIFF cookbook ${r.error ?? 'builds it'} | ours ${made.error ?? 'builds it'}`);
      failed++;
    }
    continue;
  }
  const renderer = made.ok;
  t.check('has_extension_property', { ok: r.has_extension_property }, { ok: renderer.hasExtensionProperty });
  const wantStop = r.stop_sequences?.error ? r.stop_sequences : { ok: r.stop_sequences };
  t.check('stop_sequences', wantStop, outcome(() => renderer.stopSequences));
  for (const tp of r.tools_prefix ?? []) {
    t.check('tools_prefix', tp.result, outcome(() => renderer.createConversationPrefixWithTools(tp.tools, tp.system_prompt)));
  }
  for (const c of r.cases) {
    t.check(`${c.case} generation_prompt`, c.generation_prompt, outcome(() => chunks(renderer.buildGenerationPrompt(c.messages))));
    if (c.generation_prompt_prefill?.prefill !== undefined) {
      const { prefill, ...want } = c.generation_prompt_prefill;
      t.check(`${c.case} generation_prompt_prefill`, want, outcome(() => chunks(renderer.buildGenerationPrompt(c.messages, { prefill }))));
    }
    for (const [train, want] of Object.entries(c.supervised ?? {})) {
      t.check(`${c.case} supervised[${train}]`, want, outcome(() => supervised(renderer.buildSupervisedExample(c.messages, { train_on_what: train }))));
    }
    for (const [train, want] of Object.entries(c.supervised_examples ?? {})) {
      t.check(`${c.case} supervised_examples[${train}]`, want, outcome(() => renderer.buildSupervisedExamples(c.messages, { train_on_what: train }).map(supervised)));
    }
  }
  for (const p of r.parse ?? []) {
    t.check(`parse ${p.source}`, p.result, outcome(() => renderer.parseResponse(p.tokens)));
  }
  t.done();
}

if (compared === 0) {
  console.log('nothing compared (a filter that matches no renderer?)');
  process.exit(1);
}
if (failed) {
  console.log(`renderer parity: ${failed} differences`);
  process.exit(1);
}
console.log(`renderer parity: all ${compared} checks match`);
