// A tiny runtime-neutral test harness: the same case files run in Node (node:test), in
// headless Chromium, in workerd, in Bun and in Deno. Cases are `async (ctx) => {}`
// functions; `ctx` carries `runtime` ('node' | 'browser' | 'workerd' | 'bun' | 'deno'),
// `module` ('full' | 'lite': which entry `tinker-wasm` is mapped to, see matrix.js) and `env`
// (e.g. the simulator URL).
import { selectCases } from './matrix.js';

export class AssertionError extends Error {
  constructor(message) {
    super(message);
    this.name = 'AssertionError';
  }
}

const show = (v) => {
  try {
    return typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));
  } catch {
    return String(v);
  }
};

function deepEqual(a, b) {
  if (Object.is(a, b)) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) {
    if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a.constructor !== b.constructor || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k]));
}

export const assert = {
  ok(v, msg) {
    if (!v) throw new AssertionError(msg ?? `expected a truthy value, got ${show(v)}`);
  },
  equal(a, b, msg) {
    if (!Object.is(a, b)) throw new AssertionError(`${msg ? msg + ': ' : ''}expected ${show(b)}, got ${show(a)}`);
  },
  notEqual(a, b, msg) {
    if (Object.is(a, b)) throw new AssertionError(`${msg ? msg + ': ' : ''}expected a value other than ${show(b)}`);
  },
  deepEqual(a, b, msg) {
    if (!deepEqual(a, b)) throw new AssertionError(`${msg ? msg + ': ' : ''}expected ${show(b)}, got ${show(a)}`);
  },
  match(s, re, msg) {
    if (typeof s !== 'string' || !re.test(s)) throw new AssertionError(`${msg ? msg + ': ' : ''}expected ${show(s)} to match ${re}`);
  },
  less(a, b, msg) {
    if (!(a < b)) throw new AssertionError(`${msg ? msg + ': ' : ''}expected ${show(a)} < ${show(b)}`);
  },
  /** Asserts `fn` throws (sync) an error matching `check` (a class, a RegExp on the message, or a predicate). */
  throws(fn, check, msg) {
    let threw = false;
    try {
      fn();
    } catch (e) {
      threw = true;
      matchError(e, check, msg);
    }
    if (!threw) throw new AssertionError(`${msg ? msg + ': ' : ''}expected an exception`);
  },
  /** Asserts the promise (or async fn) rejects with an error matching `check`. Returns the error. */
  async rejects(p, check, msg) {
    try {
      await (typeof p === 'function' ? p() : p);
    } catch (e) {
      matchError(e, check, msg);
      return e;
    }
    throw new AssertionError(`${msg ? msg + ': ' : ''}expected a rejection`);
  },
};

function matchError(e, check, msg) {
  const pre = msg ? msg + ': ' : '';
  if (check === undefined) return;
  if (check instanceof RegExp) {
    if (!check.test(String(e?.message))) throw new AssertionError(`${pre}error message ${show(e?.message)} does not match ${check}`);
  } else if (typeof check === 'function' && check.prototype instanceof Error) {
    if (!(e instanceof check)) throw new AssertionError(`${pre}expected ${check.name}, got ${e?.name}: ${e?.message}`);
  } else if (typeof check === 'function') {
    if (!check(e)) throw new AssertionError(`${pre}unexpected error ${e?.name}: ${e?.message}`);
  } else if (typeof check === 'object') {
    for (const [k, v] of Object.entries(check)) {
      const got = e?.[k];
      const good = v instanceof RegExp ? v.test(String(got)) : v === Error || (typeof v === 'function' && v.prototype instanceof Error) ? e instanceof v : Object.is(got, v);
      if (!good) throw new AssertionError(`${pre}error.${k}: expected ${v instanceof RegExp ? v : show(v)}, got ${show(got)} (${e?.name}: ${e?.message})`);
    }
  }
}

/** Rejects with a clear error when `p` takes longer than `ms` (so a hang fails the case). */
export function withTimeout(p, ms, what) {
  let timer;
  const t = new Promise((_, rej) => {
    timer = setTimeout(() => rej(new AssertionError(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/**
 * Runs the cases selected for `module` ('full' | 'lite': see matrix.js) in order, in one
 * runtime, and reports each result. Used by the browser, workerd, Bun and Deno runners; the
 * Node runner registers the same selection with node:test.
 */
export async function runSuites(suites, ctx, { filter = null, module = 'full', timeoutMs = 120_000 } = {}) {
  const results = [];
  for (const { name, fn } of selectCases(suites, { module, filter })) {
    const t0 = Date.now();
    try {
      await withTimeout(Promise.resolve().then(() => fn(ctx)), timeoutMs, name);
      results.push({ name, ok: true, ms: Date.now() - t0 });
    } catch (e) {
      const cause = e?.cause ? `\ncaused by ${e.cause?.name ?? 'Error'}: ${e.cause?.message ?? e.cause}${e.cause?.code ? ` (${e.cause.code})` : ''}` : '';
      results.push({ name, ok: false, ms: Date.now() - t0, error: `${e?.name}: ${e?.message}${cause}\n${e?.stack ?? ''}` });
    }
  }
  return results;
}

/** Prints results TAP-style with a runtime tag; returns the number of failures. */
export function report(runtime, results) {
  let failed = 0;
  for (const r of results) {
    if (r.ok) console.log(`ok - [${runtime}] ${r.name} (${r.ms} ms)`);
    else {
      failed++;
      console.log(`not ok - [${runtime}] ${r.name}\n  ${r.error.replace(/\n/g, '\n  ')}`);
    }
  }
  console.log(`# [${runtime}] ${results.length - failed}/${results.length} passed`);
  if (results.length === 0) {
    console.log(`# [${runtime}] no cases ran`);
    return 1;
  }
  return failed;
}
