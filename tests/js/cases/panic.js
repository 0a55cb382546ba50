// A Rust panic inside the wasm module becomes a JS error and leaves the module usable
// (issue 9). `__testPanic(kind)` is a hidden export that panics on purpose: 'sync' in the
// call, 'async' inside the returned promise, 'task' in a background task nobody awaits.
// Runs in Node, Chromium and workerd; this suite runs last (a synchronous panic leaves
// std's panic state behind: see tests/NOTES-issue9.md).
import * as tinker from 'tinker-wasm';
import { assert, withTimeout } from '../harness.js';

const MESSAGE = /^tinker-wasm internal error \(a bug: please report it with this message\): panicked at .*poisoned input/s;

/** Collects uncaught exceptions and unhandled rejections while `fn` runs (any runtime). */
async function watchUncaught(fn) {
  const seen = [];
  const onErr = (e) => seen.push(e?.error ?? e?.reason ?? e);
  const onEvent = (ev) => {
    seen.push(ev?.error ?? ev?.reason ?? ev);
    ev?.preventDefault?.();
  };
  const proc = typeof process !== 'undefined' && typeof process.on === 'function' ? process : null;
  if (proc) {
    proc.on('uncaughtException', onErr);
    proc.on('unhandledRejection', onErr);
  } else if (typeof globalThis.addEventListener === 'function') {
    globalThis.addEventListener('error', onEvent);
    globalThis.addEventListener('unhandledrejection', onEvent);
  }
  try {
    await fn();
    // Let any stray exception or rejection be dispatched before looking.
    await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => setTimeout(r, 0));
  } finally {
    if (proc) {
      proc.off('uncaughtException', onErr);
      proc.off('unhandledRejection', onErr);
    } else if (typeof globalThis.removeEventListener === 'function') {
      globalThis.removeEventListener('error', onEvent);
      globalThis.removeEventListener('unhandledrejection', onEvent);
    }
  }
  return seen;
}

/** The module still works: pure exported code, and a real call against the simulator. */
async function stillUsable(ctx, label) {
  const mi = tinker.ModelInput.fromInts([5, 6, 7]);
  assert.deepEqual(mi.chunks[0].tokens, new Uint32Array([5, 6, 7]), `${label}: builder`);
  assert.throws(() => tinker.ModelInput.fromInts([1, -1]), (e) => e instanceof RangeError && e.field === 'tokens[1]', `${label}: validation`);
  const svc = new tinker.ServiceClient({ apiKey: 'tml-panic-tests', baseURL: ctx.env.SIM_URL, dangerouslyAllowBrowser: true, heartbeat: false, telemetry: false });
  const tc = await svc.createLoraTrainingClient({ base_model: 'Qwen/Qwen3-8B', rank: 8, seed: 3 });
  const data = [tinker.datumFromTokens([11, 12, 13, 14], { prompt_length: 2 })];
  const [out] = await Promise.all([tc.forwardBackward(data, 'cross_entropy'), tc.optimStep({ learning_rate: 0.01 })]);
  assert.ok(Number.isFinite(out.metrics['loss:sum']), `${label}: a real training step`);
  await svc.close();
}

export default {
  async 'an async panic rejects its promise with TinkerPanicError (no hang, no uncaught error)'(ctx) {
    let err;
    const uncaught = await watchUncaught(async () => {
      err = await assert.rejects(withTimeout(tinker.__testPanic('async'), 10_000, 'the panicking promise'), (e) => e instanceof Error && e.name === 'TinkerPanicError');
    });
    assert.match(err.message, MESSAGE);
    assert.match(err.message, /\(async, on purpose\)/);
    assert.deepEqual(uncaught.map(String), [], 'uncaught errors');
    // A second one works the same (the first left no state behind).
    const again = await assert.rejects(withTimeout(tinker.__testPanic('async'), 10_000, 'the second panicking promise'), (e) => e.name === 'TinkerPanicError');
    assert.match(again.message, /\(async, on purpose\)/);
    await stillUsable(ctx, 'after async panics');
  },

  async 'a background-task panic is reported on console.error, never an uncaught exception'(ctx) {
    const original = console.error;
    let reported;
    const got = new Promise((resolve) => {
      console.error = (...args) => {
        reported = args;
        resolve();
      };
    });
    let uncaught;
    try {
      uncaught = await watchUncaught(async () => {
        assert.equal(tinker.__testPanic('task'), undefined);
        await withTimeout(got, 10_000, 'the background panic report');
      });
    } finally {
      console.error = original;
    }
    assert.equal(reported.length, 1);
    assert.equal(reported[0]?.name, 'TinkerPanicError');
    assert.match(reported[0].message, /\(background task, on purpose\)/);
    assert.deepEqual(uncaught.map(String), [], 'uncaught errors');
    await stillUsable(ctx, 'after a task panic');
  },

  async 'a sync panic throws TinkerPanicError with the message; the module stays usable'(ctx) {
    const before = tinker.__testStackAddress();
    assert.throws(() => tinker.__testPanic('sync'), (e) => e instanceof Error && e.name === 'TinkerPanicError' && MESSAGE.test(e.message) && /\(sync, on purpose\)/.test(e.message));
    // What a synchronous panic leaks of the 1 MiB shadow stack (frames it abandoned).
    const leaked = before - tinker.__testStackAddress();
    assert.ok(leaked >= 0 && leaked < 16 * 1024, `shadow stack leak per sync panic: ${leaked} bytes`);
    await stillUsable(ctx, 'after a sync panic');
    // Later panics inside promises still reject (without the message: see the note).
    await assert.rejects(withTimeout(tinker.__testPanic('async'), 10_000, 'a panicking promise after a sync panic'), (e) => e.name === 'TinkerPanicError');
    await stillUsable(ctx, 'after a sync and an async panic');
  },
};
