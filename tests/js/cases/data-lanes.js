// The two lanes of the JS → core data conversion (src/wasm/convert.rs `data`): datums of
// the usual form (typed arrays; what datumFromTokens builds) are read a block at a time
// and copied in one call; every other datum is converted one field at a time. Both must
// give the same request bytes and the same errors, across block boundaries (a block is
// ~500 datums). The request bytes come from the SDK's own forwardBackward body builder
// (the hidden benchmark export: JS data → core → protobuf, no network).
import * as tinker from 'tinker-wasm';
import { assert } from '../harness.js';

const encode = (data, lossFn = 'cross_entropy') => tinker.__benchEncodeForwardBackward(data, lossFn, { bytes: true });

/** A deterministic PRNG (xorshift32). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const N = 1100; // more than two blocks

/** Typed datums of varied forms (all usual), mirroring datumFromTokens and its variants. */
function typedBatch(seed) {
  const r = rng(seed);
  return Array.from({ length: N }, (_, i) => {
    const n = 1 + Math.floor(r() * 40);
    const v = i % 5;
    // v 3: two chunks, so the loss inputs have two more positions.
    const m = v === 3 ? n + 2 : n;
    const tokens = Uint32Array.from({ length: n }, () => Math.floor(r() * 150000));
    const target = Int32Array.from({ length: m }, () => Math.floor(r() * 150000));
    const weights = Float32Array.from({ length: m }, () => (r() < 0.3 ? 0 : r()));
    const chunks = [{ type: 'encoded_text', tokens: v === 1 ? Int32Array.from(tokens) : tokens }];
    if (v === 3) chunks.push({ type: 'encoded_text', tokens: Uint32Array.of(7, 8) });
    const d = {
      model_input: { chunks },
      loss_fn_inputs: {
        target_tokens: { data: v === 2 ? Uint32Array.from(target) : target, dtype: 'int64', ...(v === 3 ? { shape: [m] } : {}) },
        weights: v === 4 ? { data: weights, shape: [m] } : { data: weights, dtype: 'float32' },
      },
    };
    return d;
  });
}

/** The same datums with plain arrays (never the fast lane). */
const plain = (d) => ({
  model_input: { chunks: d.model_input.chunks.map((c) => ({ type: c.type, tokens: Array.from(c.tokens) })) },
  loss_fn_inputs: Object.fromEntries(
    Object.entries(d.loss_fn_inputs).map(([k, t]) => [k, { ...t, data: Array.from(t.data), ...(t.shape ? { shape: [...t.shape] } : {}) }]),
  ),
});

/** `d` with `model_input` behind a getter counting its reads. */
function counted(d, counter) {
  const mi = d.model_input;
  const o = { loss_fn_inputs: d.loss_fn_inputs };
  Object.defineProperty(o, 'model_input', {
    enumerable: true,
    get() {
      counter.reads++;
      return mi;
    },
  });
  return o;
}

const bytesEqual = (a, b, what) => {
  assert.equal(a.length, b.length, `${what}: body length`);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) assert.equal(a[i], b[i], `${what}: body byte ${i}`);
};

/** The error `fn` throws. */
function caught(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error');
}

export default {
  'typed and plain arrays give the same request bytes, across blocks and mixed in one batch'() {
    const typed = typedBatch(11);
    const slow = typed.map(plain);
    const a = encode(typed);
    bytesEqual(a, encode(slow), 'typed vs plain');
    bytesEqual(a, encode(typed.map((d, i) => (i % 3 === 0 ? slow[i] : d))), 'mixed');
    // Other loss inputs (advantages, logprobs) and importance_sampling.
    const rl = typed.filter((d) => d.model_input.chunks.length === 1).map((d) => {
      const n = d.loss_fn_inputs.weights.data.length;
      return {
        model_input: d.model_input,
        loss_fn_inputs: {
          target_tokens: d.loss_fn_inputs.target_tokens,
          advantages: { data: d.loss_fn_inputs.weights.data },
          logprobs: { data: Float32Array.from(d.loss_fn_inputs.weights.data, (x) => -x), dtype: 'float32', shape: [n] },
        },
      };
    });
    bytesEqual(encode(rl, 'importance_sampling'), encode(rl.map(plain), 'importance_sampling'), 'rl inputs');
  },

  'usual datums are read once (the fast lane); others go the slow way'() {
    const typed = typedBatch(12).slice(0, 600);
    const fast = { reads: 0 };
    encode(typed.map((d) => counted(d, fast)));
    assert.equal(fast.reads, 600, 'each usual datum is read once');
    const slow = { reads: 0 };
    encode(typed.map((d) => counted(plain(d), slow)));
    assert.equal(slow.reads, 1200, 'each plain datum is looked at, then converted the slow way');
  },

  'a bad value in a usual datum is reported as the slow way reports it, with its index'() {
    const at = 777; // in the second block
    const cases = [
      ['negative Int32Array token', (d) => (d.model_input.chunks[0].tokens = Int32Array.of(1, 2, 3, -5)), RangeError, `data[${at}].model_input.chunks[0].tokens[3]`, /-5/],
      ['NaN weight', (d) => (d.loss_fn_inputs.weights = { data: Float32Array.of(1, 1, NaN), dtype: 'float32' }), RangeError, `data[${at}].loss_fn_inputs.weights.data[2]`, /NaN/],
      ['shape that does not match', (d) => (d.loss_fn_inputs.weights = { data: Float32Array.of(1, 1), shape: [3] }), RangeError, `data[${at}].loss_fn_inputs.weights.shape`, /\[3\]/],
      ['fractional shape', (d) => (d.loss_fn_inputs.weights = { data: Float32Array.of(1, 1), shape: [1.5] }), RangeError, `data[${at}].loss_fn_inputs.weights.shape[0]`, /1\.5/],
      ['token id beyond 2^31', (d) => (d.model_input.chunks[0].tokens = Uint32Array.of(1, 2 ** 31)), RangeError, `data[${at}].model_input.chunks[0].tokens[1]`, /2147483648/],
      ['bad dtype', (d) => (d.loss_fn_inputs.target_tokens.dtype = 'int32'), TypeError, `data[${at}].loss_fn_inputs.target_tokens.dtype`, /int32/],
    ];
    for (const [label, spoil, cls, field, text] of cases) {
      const data = typedBatch(13);
      spoil(data[at]);
      const e = caught(() => encode(data));
      assert.ok(e instanceof cls, `${label}: a ${cls.name}, got ${e}`);
      assert.equal(e.field, field, label);
      assert.match(e.message, text, label);
      // The first bad datum is the one reported.
      spoil(data[N - 1]);
      assert.equal(caught(() => encode(data)).field, field, `${label}: the first bad datum`);
    }
  },

  'a getter of the data that converts data itself (re-entrancy) does not disturb the outer conversion'() {
    // The slow lane keeps a datum's fields in the JS readers' arrays while Rust reads them;
    // a getter that runs SDK conversions in the middle (here of model_input.chunks) must
    // not overwrite them: each conversion has its own frame.
    const want = encode(typedBatch(14).slice(0, 3).map(plain));
    let inner = 0;
    const data = typedBatch(14).slice(0, 3).map(plain).map((d) => {
      const chunks = d.model_input.chunks;
      return {
        ...d,
        model_input: {
          get chunks() {
            inner++;
            tinker.TensorData.fromArray([1, 2, 3], { dtype: 'float32' });
            encode([plain(typedBatch(15)[0])]);
            return chunks;
          },
        },
      };
    });
    bytesEqual(encode(data), want, 'the datums read around nested conversions');
    assert.ok(inner >= 3, `the getters ran (${inner})`);
  },
};
