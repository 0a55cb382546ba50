// `declareParams`: a parameter object of the package's own JavaScript methods (the
// downloads, the cookbook's classes) declared once, as the wasm module's are with Rust's
// `declare_params!`. From the one declaration come its reader (`read`, below: unknown keys
// refused naming the key and the keys allowed, each field checked against its declared
// type and named in its error, as the module's readers do) and its TypeScript with doc text
// (`typescript`, which scripts/params-ts.mjs writes to pkg/gen/params.d.ts at build time).

/**
 * @typedef {Record<string, [string, string]>} Fields  key → [TypeScript after the key ("?: string"), doc]
 * @typedef {{ name: string, what: string, doc: string, fields: Fields, read: (value: unknown) => Record<string, any> }} Declaration
 */

/** Request options: a key of them in a parameter object is a hint, not just an unknown key. */
const REQUEST_OPTIONS = ['signal', 'timeout', 'maxRetries', 'headers'];

/**
 * Declares the parameter object `name` (read as `what` in errors), documented by `doc`.
 * @param {string} name @param {string} what @param {string} doc @param {Fields} fields
 * @returns {Declaration}
 */
export function declareParams(name, what, doc, fields) {
  const checks = Object.entries(fields).map(([key, [ts]]) => ({ key, required: !ts.startsWith('?'), ...typeCheck(ts.replace(/^\??:\s*/, '')) }));
  const allowed = Object.keys(fields);
  return Object.freeze({ name, what, doc, fields, read: (/** @type {unknown} */ value) => read(value, what, allowed, checks) });
}

/**
 * The declared fields of `value` (undefined or null: none given); a TypeError naming the
 * field for an unknown key, a missing required field or a value of another type.
 * @param {unknown} value @param {string} what @param {string[]} allowed
 * @param {{ key: string, required: boolean, test: (v: unknown) => boolean, expected: string }[]} checks
 */
function read(value, what, allowed, checks) {
  if (value === undefined || value === null) value = {};
  if (typeof value !== 'object' || Array.isArray(value)) throw fieldError(what, `must be an options object, got ${describe(value)}`);
  const given = /** @type {Record<string, unknown>} */ (value);
  for (const k of Object.keys(given)) {
    if (allowed.includes(k) || given[k] === undefined) continue;
    const hint = REQUEST_OPTIONS.includes(k) && !allowed.includes('signal') ? ' (request options such as signal and timeout go in the next argument)' : '';
    throw fieldError(k, `unknown option for ${what}; expected one of: ${allowed.join(', ')}${hint}`);
  }
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const { key, required, test, expected } of checks) {
    const v = given[key];
    if (v === undefined) {
      if (required) throw fieldError(key, 'is required');
      continue;
    }
    if (!test(v)) throw fieldError(key, `must be ${expected}, got ${describe(v)}`);
    out[key] = v;
  }
  return out;
}

/**
 * The check of a TypeScript type: each alternative of a union by what it names (a
 * primitive, a literal, a function, an array, a record, or an object of a named type).
 * @param {string} ts
 * @returns {{ test: (v: unknown) => boolean, expected: string }}
 */
function typeCheck(ts) {
  const alternatives = splitTop(ts, '|').map((a) => alternative(a.trim()));
  if (alternatives.some((a) => a === null)) return { test: () => true, expected: 'anything' };
  const known = /** @type {{ test: (v: unknown) => boolean, expected: string }[]} */ (alternatives);
  return { test: (v) => known.some((a) => a.test(v)), expected: [...new Set(known.map((a) => a.expected))].join(' or ') };
}

/** @param {string} t @returns {{ test: (v: unknown) => boolean, expected: string } | null} */
function alternative(t) {
  if (t === 'unknown' || t === 'any') return null;
  if (t === 'string' || t === 'number' || t === 'boolean') return { test: (v) => typeof v === t, expected: `a ${t}` };
  if (t === 'null') return { test: (v) => v === null, expected: 'null' };
  if (/^'[^']*'$/.test(t)) return { test: (v) => v === t.slice(1, -1), expected: JSON.stringify(t.slice(1, -1)) };
  if (t.startsWith('(') || t.startsWith('typeof ')) return { test: (v) => typeof v === 'function', expected: 'a function' };
  if (t.endsWith('[]') || t.startsWith('Array<')) return { test: Array.isArray, expected: 'an array' };
  const object = (/** @type {unknown} */ v) => v !== null && typeof v === 'object' && !Array.isArray(v);
  if (t.startsWith('Record<') || t.startsWith('{')) return { test: object, expected: 'an object' };
  return { test: object, expected: `a ${t}` };
}

/** `s` split at each top-level `sep` (not inside brackets or quotes). @param {string} s @param {string} sep */
function splitTop(s, sep) {
  const parts = [];
  let depth = 0;
  let start = 0;
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "'") quoted = !quoted;
    else if (quoted) continue;
    else if ('([{<'.includes(c)) depth++;
    else if (')]}>'.includes(c) && s[i - 1] !== '=') depth--;
    else if (c === sep && depth === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

/** The module's description of a value in errors. @param {unknown} v */
function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (ArrayBuffer.isView(v)) return 'a ' + Object.prototype.toString.call(v).slice(8, -1);
  if (typeof v === 'string') return 'the string ' + JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return typeof v === 'object' ? 'an object' : typeof v;
}

/** A TypeError for `field`, with `field` set (as the module's). @param {string} field @param {string} message */
function fieldError(field, message) {
  return Object.assign(new TypeError(`${field}: ${message}`), { field });
}

/**
 * The declarations a module exports, in its namespace's order (by name).
 * @param {Record<string, unknown>} namespace
 * @returns {Declaration[]}
 */
export function declarationsOf(namespace) {
  return /** @type {Declaration[]} */ (Object.values(namespace).filter((d) => d !== null && typeof d === 'object' && typeof (/** @type {any} */ (d).read) === 'function' && 'fields' in d));
}

/**
 * The TypeScript of `declarations`: one exported interface each, with their doc text.
 * @param {Declaration[]} declarations
 */
export function typescript(declarations) {
  const comment = (/** @type {string} */ doc, /** @type {string} */ indent) => `${indent}/** ${doc.replace(/\*\//g, '*\\/')} */\n`;
  return declarations
    .map((d) => {
      const fields = Object.entries(d.fields).map(([k, [ts, doc]]) => `${comment(doc, '  ')}  ${k}${ts};\n`);
      return `${comment(d.doc, '')}export interface ${d.name} {\n${fields.join('')}}\n`;
    })
    .join('\n');
}
