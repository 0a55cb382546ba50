// pkg/declare.js: a parameter object of the package's JavaScript declared once gives its
// reader (checked here against what the module's readers do) and its TypeScript.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { declareParams, declarationsOf, typescript } from '../../pkg/declare.js';
import * as extrasModule from '../../pkg/params.js';
import * as cookbookModule from '../../pkg/cookbook/params.js';

const extras = declarationsOf(extrasModule);
const cookbook = declarationsOf(cookbookModule);

const P = declareParams('ThingParams', 'thing params', 'A thing.', {
  name: [': string', 'Its name.'],
  size: ['?: number | null', 'Its size.'],
  mode: ["?: 'a' | 'b'", 'Its mode.'],
  each: ['?: (n: number) => void', 'Called for each.'],
  tags: ['?: string[]', 'Its tags.'],
  meta: ['?: Record<string, number>', 'Its metadata.'],
  owner: ['?: SamplingClient', 'Its owner.'],
});

const fails = (fn, field, pattern) => assert.throws(fn, (e) => e instanceof TypeError && e.field === field && pattern.test(e.message));

test('reads the declared fields, absent ones left out', () => {
  assert.deepEqual(P.read({ name: 'x', size: null, mode: 'b', tags: [], meta: {}, owner: {}, each: undefined }), { name: 'x', size: null, mode: 'b', tags: [], meta: {}, owner: {} });
  assert.deepEqual(declareParams('E', 'e', 'E.', { a: ['?: number', 'A.'] }).read(undefined), {});
});

test('refuses what its declaration does not allow, naming the field', () => {
  fails(() => P.read({ name: 'x', nmae: 1 }), 'nmae', /^nmae: unknown option for thing params; expected one of: name, size, mode, each, tags, meta, owner$/);
  fails(() => P.read({ name: 'x', signal: 1 }), 'signal', /go in the next argument/);
  fails(() => P.read({}), 'name', /^name: is required$/);
  fails(() => P.read({ name: 3 }), 'name', /^name: must be a string, got 3$/);
  fails(() => P.read({ name: 'x', size: '3' }), 'size', /must be a number or null, got the string "3"/);
  fails(() => P.read({ name: 'x', mode: 'c' }), 'mode', /must be "a" or "b"/);
  fails(() => P.read({ name: 'x', each: {} }), 'each', /must be a function, got an object/);
  fails(() => P.read({ name: 'x', tags: 'a' }), 'tags', /must be an array/);
  fails(() => P.read({ name: 'x', meta: [] }), 'meta', /must be an object, got an array/);
  fails(() => P.read({ name: 'x', owner: null }), 'owner', /must be a SamplingClient, got null/);
  fails(() => P.read([1]), 'thing params', /must be an options object, got an array/);
});

test('its TypeScript: one interface, each field with its doc text', () => {
  const ts = typescript([P]);
  assert.match(ts, /^\/\*\* A thing\. \*\/\nexport interface ThingParams \{\n {2}\/\*\* Its name\. \*\/\n {2}name: string;\n/);
  assert.match(ts, /\n {2}each\?: \(n: number\) => void;\n/);
});

test("the package's declarations: one name each, every field documented", () => {
  const all = [...extras, ...cookbook];
  assert.deepEqual([extras.length, cookbook.length], [2, 13]);
  for (const ns of [extrasModule, cookbookModule]) {
    for (const d of declarationsOf(ns)) assert.equal(ns[d.name], d, `${d.name} is exported under its own name`);
  }
  assert.equal(new Set(all.map((d) => d.name)).size, all.length);
  for (const d of all) {
    assert.ok(d.doc.length > 0, d.name);
    for (const [k, [ts, doc]] of Object.entries(d.fields)) assert.ok(/^\??: ./.test(ts) && doc.length > 0, `${d.name}.${k}`);
  }
});
