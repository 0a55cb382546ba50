// Foundation smoke: the package loads in this runtime and its wasm works (exported
// functions, serde round trips through serde-wasm-bindgen, timers through gloo-timers).
import * as tinker from 'tinker-wasm';
import * as lite from 'tinker-wasm/lite';
import { assert } from '../harness.js';

export default {
  'exports the SDK version'() {
    assert.match(tinker.version(), /^\d+\.\d+\.\d+/);
    assert.equal(lite.version(), tinker.version(), 'lite and full builds carry the same version');
  },

  'fills AdamParams defaults through the core type'() {
    assert.deepEqual(tinker.normalizeAdamParams({ learning_rate: 0.01 }), {
      learning_rate: 0.01,
      beta1: 0.9,
      beta2: 0.95,
      eps: 1e-12,
      weight_decay: 0,
      grad_clip_norm: 0,
    });
  },

  'rejects an unknown AdamParams field by name'() {
    assert.throws(() => tinker.normalizeAdamParams({ learning_rat: 0.01 }), /learning_rat/);
  },

  async 'sleeps on the runtime timer'() {
    // Timers never fire early, so the elapsed time bounds it from below; ordering against a
    // 0 ms timer would depend on the process not being descheduled between the two calls.
    let fired = false;
    const t0 = performance.now();
    const p = tinker.sleep(40).then(() => (fired = true));
    assert.equal(fired, false, 'sleep resolved synchronously');
    await Promise.resolve();
    assert.equal(fired, false, 'sleep resolved on a microtask');
    await p;
    const elapsed = performance.now() - t0;
    assert.ok(elapsed >= 35, `sleep(40) resolved after ${elapsed.toFixed(1)} ms`);
  },
};
