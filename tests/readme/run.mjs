// Runs every README code block marked `<!-- runs as written -->` against a fresh
// tinker-sim, exactly as written (from the repository root, so `tinker-wasm` resolves to
// pkg/ and relative paths work), with TINKER_API_KEY / TINKER_BASE_URL set. Fails if a
// block throws, exits non-zero, or does not exit on its own (a leaked timer).
//   node tests/readme/run.mjs
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSim } from '../js/sim.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
// Each block is followed by `<!-- output matches:` and one regular expression per line
// (multiline mode) that its output must match, `-->` closing the list: what the block
// prints is checked, not only its exit code, and exactly where the seeded simulator
// (--seed 11) makes the values known (losses, seeded samples, token counts).
// README_SHOW=1 prints each block's output.
const blocks = [...readme.matchAll(/<!-- runs as written -->\s*\n```(js|sh)\n([\s\S]*?)```\n(?:\s*<!-- output matches:\n([\s\S]*?)-->)?/g)].map((m, i) => {
  const heading = [...readme.slice(0, m.index).matchAll(/^## (.+)$/gm)].at(-1)?.[1] ?? `block ${i}`;
  const expect = (m[3] ?? '').split('\n').filter((l) => l.trim()).map((l) => new RegExp(l, 'm'));
  return { name: `${heading} #${i + 1}`, lang: m[1], code: m[2], expect };
});
if (blocks.length === 0) throw new Error('no runnable README blocks found');
const unchecked = blocks.filter((b) => b.expect.length === 0);
if (unchecked.length) throw new Error(`README blocks without an \`<!-- output matches:\` list after them: ${unchecked.map((b) => b.name).join(', ')}`);

// `tinker-wasm` for the shell blocks: the package's bin, as npm links it.
const binDir = mkdtempSync(path.join(tmpdir(), 'tinker-wasm-bin-'));
writeFileSync(path.join(binDir, 'tinker-wasm'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(root, 'pkg/cli/main.js')}" "$@"\n`, { mode: 0o755 });

const sim = await startSim(['--seed', '11']);
let failed = 0;
try {
  for (const { name, lang, code, expect } of blocks) {
    const t0 = Date.now();
    // Shell blocks (the CLI's session) run in bash with `set -e`, `tinker-wasm` on the PATH
    // being pkg/cli/main.js (the package's bin).
    const [cmd, args] = lang === 'sh' ? ['bash', ['-euo', 'pipefail', '-c', code]] : [process.execPath, ['--input-type=module', '-e', code]];
    const child = spawn(cmd, args, {
      cwd: root,
      env: { ...process.env, PATH: `${binDir}${path.delimiter}${process.env.PATH}`, TINKER_API_KEY: 'tml-readme-key', TINKER_BASE_URL: sim.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    const code_ = await new Promise((r) => child.on('exit', (c, sig) => r(sig ? sig : c)));
    clearTimeout(timer);
    if (process.env.README_SHOW) console.log(`--- ${name}\n${out}`);
    const missing = code_ === 0 ? expect.filter((re) => !re.test(out)) : [];
    if (missing.length) {
      failed++;
      console.log(`not ok - README: ${name}: its output does not match ${missing.map(String).join(', ')}\n  ${out.trim().split('\n').slice(-15).join('\n  ')}`);
    } else if (code_ === 0) {
      console.log(`ok - README: ${name} (${Date.now() - t0} ms, ${expect.length} output pattern(s) matched)`);
    } else {
      failed++;
      console.log(`not ok - README: ${name} (exit ${code_})\n  ${out.trim().split('\n').slice(-15).join('\n  ')}`);
    }
  }
} finally {
  await sim.stop();
  rmSync(path.join(root, 'target/export-v1'), { recursive: true, force: true });
  rmSync(binDir, { recursive: true, force: true });
}
console.log(`# README: ${blocks.length - failed}/${blocks.length} examples ran as written`);
process.exit(failed ? 1 : 0);
