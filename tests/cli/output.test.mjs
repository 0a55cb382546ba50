// The CLI's Python-compatible writers (pkg/cli/output.js over src/wasm/python.rs) against Python itself: floats as
// repr, strings as json.dumps (ensure_ascii), indentation, datetimes as pydantic parses and
// str() prints them, relative times and sizes as tinker/cli/output.py formats them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pyJson, PyFloat, parseDateTime, formatSize, formatTimestamp, usePythonPrinting } from '../../pkg/cli/output.js';

// The CLI prints through the module's Python printing once it has loaded the SDK.
usePythonPrinting(await import('../../pkg/index.js'));

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PY = path.join(root, 'tests/conformance/.venv/bin/python');

function python(code, input) {
  const r = spawnSync(PY, ['-c', code], { input: JSON.stringify(input), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('floats, strings and nesting as Python json.dumps(indent=2) writes them', () => {
  const floats = [0, -0, 1, 100, 0.1, 1e-5, 2.5e-7, 1e16, 1.5e16, 123456789012345678, 1e22, 1 / 3, -2.75, 5e-324, 1.7976931348623157e308, 0.0001, 0.00001, 999999999999999.9, 1e15];
  const strings = ['', 'plain', 'é', 'ünïcode ✓', '😀', '\u2028', '\x7f', '\x00\x01\x1f', 'tab\tnl\nquote"back\\slash', '\b\f\r', '中文'];
  const values = [
    ...floats.map((x) => ({ f: x })),
    ...strings.map((s) => ({ s })),
    { nested: { a: [], b: {}, c: [1, 2, { d: null, e: true, f: false }] } },
    // Whole numbers past 2^53, as the API's JSON would hold them (exact as doubles).
    ...['1152921504606846976', '-4611686018427387904'].map((i) => ({ i })),
  ];
  const expected = python(
    `import json, sys
vals = json.load(sys.stdin)
def conv(v):
    if isinstance(v, dict):
        if set(v) == {"f"}: return float(v["f"])
        if set(v) == {"s"}: return v["s"]
        if set(v) == {"i"}: return int(v["i"])
        return {k: conv(x) for k, x in v.items()}
    if isinstance(v, list): return [conv(x) for x in v]
    return v
print(json.dumps([json.dumps(conv(v), indent=2) for v in vals] + [json.dumps(conv(v)) for v in vals]))`,
    values.map((v) => ('f' in v ? { f: Object.is(v.f, -0) ? '-0.0' : String(v.f) } : v)),
  );
  const conv = (v) => ('f' in v ? new PyFloat(v.f) : 's' in v ? v.s : 'i' in v ? Number(v.i) : v);
  const ours = [...values.map((v) => pyJson(conv(v))), ...values.map((v) => pyJson(conv(v), null))];
  assert.deepEqual(ours, expected);
});

test('datetimes as pydantic parses them and str() / model_dump(mode="json") print them', () => {
  const inputs = ['2026-01-01T00:00:00Z', '2026-01-01T00:00:00.123Z', '2026-01-01T00:00:00.1234567Z', '2026-11-25T15:52:48.976826Z', '2026-01-01T05:00:00+05:30', '2026-01-01T05:00:00-08:00', '2026-01-01T00:00:00', '2026-01-01 10:20:30.5+00:00'];
  const expected = python(
    `import json, sys
from pydantic import BaseModel
from datetime import datetime
class M(BaseModel):
    t: datetime
print(json.dumps([[str(M(t=s).t), M(t=s).model_dump(mode="json")["t"]] for s in json.load(sys.stdin)]))`,
    inputs,
  );
  assert.deepEqual(
    inputs.map((s) => {
      const d = parseDateTime(s);
      return [d.toString(), d.toJSONString()];
    }),
    expected,
  );
});

test('sizes and relative times as tinker/cli/output.py formats them', () => {
  const sizes = [-1, 0, 1, 1023, 1024, 1536, 4096, 1048576, 611859, 5e9, 3e12, 2 ** 60, 2 ** 70];
  const now = Date.parse('2026-06-15T12:00:00Z');
  const times = [0, 30, 61, 3599, 3601, 7300, 86400 * 2, 86400 * 8, 86400 * 20, 86400 * 40, -30, -3700, -86400 * 3].map((s) => new Date(now - s * 1000).toISOString());
  const expected = python(
    `import json, sys
from datetime import datetime, timezone
import tinker.cli.output as o
class FakeDT(datetime):
    @classmethod
    def now(cls, tz=None): return datetime(2026, 6, 15, 12, 0, 0, tzinfo=timezone.utc)
import datetime as dtmod
dtmod.datetime = FakeDT
d = json.load(sys.stdin)
print(json.dumps([[o.format_size(s) for s in d["sizes"]], [o.format_timestamp(t) for t in d["times"]]]))`,
    { sizes, times },
  );
  assert.deepEqual([sizes.map(formatSize), times.map((t) => formatTimestamp(t, now))], expected);
});
