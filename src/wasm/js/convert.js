// The JS half of src/wasm/convert.rs (imported by its `#[wasm_bindgen(module)]`): the
// readers of the data path, which read a JS object's fields in one call and write their
// kinds and lengths into wasm memory, and the typed-array copies. Checked by `make
// typecheck` (tests/types/tsconfig.json, checkJs).
// @ts-check

const TAG = Symbol.toStringTag;
const TYPED = Object.assign(Object.create(null), { Int8Array: 5, Uint8Array: 6, Uint8ClampedArray: 7,
  Int16Array: 8, Uint16Array: 9, Int32Array: 10, Uint32Array: 11, Float32Array: 12, Float64Array: 13,
  BigInt64Array: 14, BigUint64Array: 15 });
const VIEWS = [, , , , , Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array,
  Uint32Array, Float32Array, Float64Array];
const TA_LENGTH = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Int8Array.prototype), 'length').get;
export function kind(v) {
  if (v === undefined) return 0;
  if (v === null) return 1;
  if (typeof v !== 'object') return 2;
  if (Array.isArray(v)) return 4;
  if (!ArrayBuffer.isView(v) || v instanceof DataView) return 3;
  // What Object.prototype.toString shows: the @@toStringTag if a string, else 'Object'.
  const t = v[TAG];
  if (typeof t !== 'string') return 16;
  return t === '' ? 3 : (TYPED[t] ?? 16);
}
function get(o, k) {
  if (o === null || (typeof o !== 'object' && typeof o !== 'function')) return undefined;
  try { return o[k]; } catch { return undefined; }
}
function taLength(v) {
  try { return TA_LENGTH.call(v); } catch { return 0; }
}
// The length of an array (its `length`) or typed array (its own) of kind k, else 0.
function len(v, k) {
  if (k === 4) { const n = get(v, 'length'); return typeof n === 'number' ? n : 0; }
  return k >= 5 ? taLength(v) : 0;
}
export function length(v, k) { return len(v, k); }
// Views of the whole wasm memory by kind, remade when it grows (the old buffer detaches).
let mem8 = new Uint8Array(0);
let views = [];
function view(mem, k) {
  if (mem8.byteLength === 0) { mem8 = new Uint8Array(mem.buffer); views = []; }
  return views[k] || (views[k] = new VIEWS[k](mem8.buffer));
}
export function copy_typed(mem, k, src, s, ptr, n) {
  if (s >= 0) src = S[s];
  if (taLength(src) !== n) return false;
  view(mem, k).set(src, ptr / VIEWS[k].BYTES_PER_ELEMENT);
  return true;
}
export function copy_numbers(mem, a, ptr, n) {
  const d = view(mem, 13);
  const at = ptr / 8;
  for (let i = 0; i < n; i++) {
    const x = a[i];
    if (typeof x !== 'number') return i;
    d[at + i] = x;
  }
  return -1;
}
function unknown(o, allowed) {
  const ks = Object.keys(o);
  for (let i = 0; i < ks.length; i++) {
    const k = ks[i];
    if (allowed.includes(k)) continue;
    let x;
    try { x = Reflect.get(o, k); } catch { continue; }
    if (x !== undefined) return k;
  }
  return undefined;
}
export function unknown_key(o, allowed) { return unknown(o, allowed); }
const dtypeCode = (v) =>
  v === undefined ? 0 : v === 'float32' ? 1 : v === 'int64' ? 2 : typeof v === 'string' ? 3 : 4;
// The readers below read the fields of one data object, keep them in S for Rust to
// take (take(i)) when it needs them, and write their kinds and lengths as f64s into
// wasm memory at ptr. They decide nothing: every check is made in Rust from these.
// S: 0-3 datum fields, 4 chunks, 5 chunk, 6 tokens, 8-12 tensor fields, 16.. loss inputs.
// The functions taking (v, s) use S[s] instead of v when s >= 0.
/** @type {unknown[]} */
let S = [];
export function take(/** @type {number} */ i) { return S[i]; }
// Re-entrancy: a getter of the caller's data may run SDK code that converts data too.
// Each top-level conversion is a frame (Rust's `Frame` guard calls enter/leave): a nested
// one reads into fresh S and B, so it cannot overwrite what the outer one kept; the outer
// frame's arrays are restored when it leaves. The usual, unnested case allocates nothing.
/** @type {unknown[][]} */
const FRAMES = [];
let depth = 0;
export function enter() {
  if (depth++ > 0) { FRAMES.push(S, B); S = []; B = []; }
}
export function leave() {
  if (--depth > 0) { B = /** @type {unknown[]} */ (FRAMES.pop()); S = /** @type {unknown[]} */ (FRAMES.pop()); }
  else { S.length = 0; B.length = 0; }
}
// Fields are read with plain property loads (fast for objects of one shape) and, if a
// getter throws, again one by one with get() (which gives undefined for that field).
export function read_datum(mem, d, allowed, ptr) {
  if (kind(d) !== 3) return 0;
  const bad = unknown(d, allowed) !== undefined;
  let mi, lfi, ms, ls;
  try {
    mi = d.model_input; lfi = d.loss_fn_inputs; ms = d.model_input_spans; ls = d.loss_fn_input_spans;
  } catch {
    mi = get(d, 'model_input'); lfi = get(d, 'loss_fn_inputs');
    ms = get(d, 'model_input_spans'); ls = get(d, 'loss_fn_input_spans');
  }
  S[0] = mi; S[1] = lfi; S[2] = ms; S[3] = ls;
  const o = view(mem, 13), at = ptr / 8;
  o[at] = kind(mi); o[at + 1] = kind(lfi); o[at + 2] = kind(ms); o[at + 3] = kind(ls);
  return bad ? 1 : 2;
}
// Reads the one array field `key` of o into S[slot] and writes its kind and length.
function read_array_field(mem, o, key, slot, ptr) {
  let x;
  try { x = o[key]; } catch { x = undefined; }
  S[slot] = x;
  const k = kind(x);
  const out = view(mem, 13), at = ptr / 8;
  out[at] = k; out[at + 1] = len(x, k);
}
export function read_model_input(mem, v, s, allowed, ptr) {
  if (s >= 0) v = S[s];
  const bad = unknown(v, allowed) !== undefined;
  read_array_field(mem, v, 'chunks', 4, ptr);
  return bad ? 0 : 1;
}
export function read_chunk(mem, i, allowed, ptr) {
  const c = (S[5] = S[4][i]);
  if (kind(c) !== 3) return 0;
  if (get(c, 'type') !== 'encoded_text') return 1;
  const bad = unknown(c, allowed) !== undefined;
  read_array_field(mem, c, 'tokens', 6, ptr);
  return bad ? 2 : 3;
}
export function read_inputs(mem, o, s, known, ptr, cap) {
  if (s >= 0) o = S[s];
  const ks = Object.keys(o);
  const m = Math.min(ks.length, cap);
  for (let i = 0; i < m; i++) { S[16 + 2 * i] = ks[i]; S[17 + 2 * i] = get(o, ks[i]); }
  const o8 = view(mem, 13), at = ptr / 8;
  for (let i = 0; i < m; i++) { o8[at + 2 * i] = kind(S[17 + 2 * i]); o8[at + 2 * i + 1] = known.indexOf(ks[i]); }
  return ks.length;
}
export function read_tensor(mem, v, s, allowed, ptr) {
  if (s >= 0) v = S[s];
  const bad = unknown(v, allowed) !== undefined;
  let data, dtype, shape, crow, col;
  try {
    data = v.data; dtype = v.dtype; shape = v.shape; crow = v.sparse_crow_indices; col = v.sparse_col_indices;
  } catch {
    data = get(v, 'data'); dtype = get(v, 'dtype'); shape = get(v, 'shape');
    crow = get(v, 'sparse_crow_indices'); col = get(v, 'sparse_col_indices');
  }
  S[8] = data; S[9] = dtype; S[10] = shape; S[11] = crow; S[12] = col;
  const kd = kind(data), ks = kind(shape);
  const o = view(mem, 13), at = ptr / 8;
  o[at] = kd; o[at + 1] = dtypeCode(dtype); o[at + 2] = ks; o[at + 3] = kind(crow); o[at + 4] = kind(col);
  const n = len(shape, ks);
  o[at + 5] = len(data, kd); o[at + 6] = n; o[at + 7] = 0;
  // A short plain shape of numbers (the usual [n]) is copied here too.
  if (ks === 4 && n <= 4) {
    let i = 0;
    for (; i < n; i++) { const x = shape[i]; if (typeof x !== 'number') break; o[at + 8 + i] = x; }
    o[at + 7] = i === n ? 1 : 0;
  }
  return bad ? 0 : 1;
}
// The batch reader (data()'s fast lane). For each datum from index `from` whose parts all
// have the usual form (a datum of model_input and loss_fn_inputs; encoded_text chunks of
// Uint32Array/Int32Array tokens; known loss inputs as { data, dtype?, shape? } with
// Int32Array/Uint32Array/Float32Array data and no shape or one of one number >= 0), a record of
// kinds and lengths as f64s at ptr, the arrays kept in B for copy_batch:
//   1, chunk count, per chunk [kind, length, B index],
//   input count, per input [known index, kind, dtype code, length, shape's number or -1 (none), B index].
// Any other datum is the record [0]: Rust converts it the slow way, which makes every
// check and reports every error. Returns how many datums it read (as many records as fit
// in cap f64s). It decides which lane a datum takes, nothing else.
/** @type {unknown[]} */
let B = [];
function usual(d, o, at, end, keys) {
  if (kind(d) !== 3 || unknown(d, keys[0]) !== undefined) return -1;
  if (d.model_input_spans !== undefined || d.loss_fn_input_spans !== undefined) return -1;
  const mi = d.model_input, lfi = d.loss_fn_inputs;
  if (kind(mi) !== 3 || kind(lfi) !== 3 || unknown(mi, keys[1]) !== undefined) return -1;
  const chunks = mi.chunks;
  if (!Array.isArray(chunks)) return -1;
  const nc = chunks.length;
  if (at + 2 + 3 * nc > end) return -2;
  o[at++] = 1; o[at++] = nc;
  for (let c = 0; c < nc; c++) {
    const ch = chunks[c];
    if (kind(ch) !== 3 || ch.type !== 'encoded_text' || unknown(ch, keys[2]) !== undefined) return -1;
    const t = ch.tokens, k = kind(t);
    if (k !== 10 && k !== 11) return -1;
    o[at++] = k; o[at++] = taLength(t); o[at++] = B.push(t) - 1;
  }
  const ks = Object.keys(lfi);
  if (at + 1 + 6 * ks.length > end) return -2;
  o[at++] = ks.length;
  for (let i = 0; i < ks.length; i++) {
    const ki = keys[4].indexOf(ks[i]);
    if (ki < 0) return -1;
    const t = lfi[ks[i]];
    if (kind(t) !== 3 || unknown(t, keys[3]) !== undefined) return -1;
    if (t.sparse_crow_indices !== undefined || t.sparse_col_indices !== undefined) return -1;
    const data = t.data, shape = t.shape, k = kind(data);
    if (k !== 10 && k !== 11 && k !== 12) return -1;
    let dim = -1;
    if (shape !== undefined) {
      if (!Array.isArray(shape) || shape.length !== 1 || typeof shape[0] !== 'number') return -1;
      dim = shape[0];
      if (!(dim >= 0)) return -1;
    }
    o[at++] = ki; o[at++] = k; o[at++] = dtypeCode(t.dtype); o[at++] = taLength(data); o[at++] = dim;
    o[at++] = B.push(data) - 1;
  }
  return at;
}
export function read_batch(mem, data, from, ptr, cap, keys) {
  const o = view(mem, 13);
  const end = ptr / 8 + cap;
  let at = ptr / 8, i = from;
  for (; i < data.length; i++) {
    // Room for a datum of up to 64 f64s (a few chunks and inputs) or stop here, so that a
    // datum is rarely read twice (getters run again when a record does not fit).
    if (i > from && at + 64 > end) break;
    const b = B.length;
    let r;
    try { r = usual(data[i], o, at, end, keys); } catch { r = -1; }
    if (r >= 0) { at = r; continue; }
    B.length = b;
    if ((r === -2 && i > from) || at >= end) break;
    o[at++] = 0;
  }
  return i - from;
}
// Copies B's arrays into wasm memory: n entries of [B index, kind, ptr, length] (u32s at
// table). False (the copies may be partial) if one no longer has its length.
export function copy_batch(mem, table, n) {
  const t = view(mem, 11), at = table / 4;
  for (let i = 0; i < n; i++) {
    const e = at + 4 * i, k = t[e + 1], src = B[t[e]];
    if (taLength(src) !== t[e + 3]) return false;
    view(mem, k).set(src, t[e + 2] / VIEWS[k].BYTES_PER_ELEMENT);
  }
  return true;
}
export function release_batch() { B.length = 0; }
// Result objects of sample() in one call each (their shape is the wire's).
export function sample_sequence(tokens, logprobs, stop, sequence_id, topk_logprobs) {
  return { tokens, logprobs, stop_reason: stop ? 'stop' : 'length', sequence_id, topk_logprobs };
}
export function sample_response(sequences, prompt_logprobs, topk_prompt_logprobs, prompt_cache_hit_tokens, target_prompt_logprobs, prompt_alt_tokens) {
  return { sequences, prompt_logprobs, topk_prompt_logprobs, prompt_cache_hit_tokens, target_prompt_logprobs, prompt_alt_tokens };
}
// Whether every property of v is its own (its prototype is Object.prototype or null).
export function plain_proto(v) {
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}
// Element i of a BigInt64Array/BigUint64Array as a number (Number() of a BigInt never throws).
export function bigint_at(a, i) { return Number(a[i]); }
export function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (ArrayBuffer.isView(v)) return 'a ' + Object.prototype.toString.call(v).slice(8, -1);
  if (typeof v === 'string') return 'the string ' + JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return typeof v === 'object' ? 'an object' : typeof v;
}
