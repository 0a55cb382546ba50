// Runs every code block of the README and the guides (tests/readme/docs.mjs) marked
//   <!-- runs as written -->              ```js in Node, ```sh in bash
//   <!-- runs as written in bun -->       ```js in Bun (npm `bun`)
//   <!-- runs as written in deno -->      ```js in Deno (npm `deno`), with the permissions the
//                                          Getting started guide gives (the simulator's host)
//   <!-- runs as written in chromium -->  ```js bundled by esbuild for the browser (the package's
//                                          `browser` entry, `process.env.TINKER_BASE_URL` defined)
//                                          and loaded by a page in Debian's Chromium
//   <!-- runs as written in workerd -->   ```js a Worker module, bundled as wrangler does, sent one
//                                          request in miniflare; prints `STATUS BODY`
// against a fresh tinker-sim, exactly as written (from the repository root, so `tinker-wasm`
// resolves to pkg/ and relative paths work), with TINKER_API_KEY / TINKER_BASE_URL set.
// Fails if a block throws, exits non-zero, or does not exit on its own (a leaked timer).
//   node tests/readme/run.mjs [FILTER]     (FILTER: a substring of the block's name)
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as esbuild from 'esbuild';
import { Miniflare } from 'miniflare';
import { startSim } from '../js/sim.mjs';
import { launchChromium, startStaticServer } from '../js/run-browser.mjs';
import { bundleWorker } from '../js/run-workerd.mjs';
import { docFiles, headingAt, root } from './docs.mjs';

// Each block is followed by `<!-- output matches:` and one regular expression per line
// (multiline mode) that its output must match, `-->` closing the list: what the block
// prints is checked, not only its exit code, and exactly where the seeded simulator
// (--seed 11) makes the values known (losses, seeded samples, token counts).
// README_SHOW=1 prints each block's output.
const RE = /<!-- runs as written(?: in (bun|deno|chromium|workerd))? -->\s*\n```(js|sh)\n([\s\S]*?)```\n(?:\s*<!-- output matches:\n([\s\S]*?)-->)?/g;
const blocks = docFiles().flatMap(({ file, text }) =>
  [...text.matchAll(RE)].map((m, i) => {
    const expect = (m[4] ?? '').split('\n').filter((l) => l.trim()).map((l) => new RegExp(l, 'm'));
    const runtime = m[1] ?? (m[2] === 'sh' ? 'bash' : 'node');
    return { name: `${file} § ${headingAt(text, m.index)} #${i + 1}`, runtime, code: m[3], expect };
  }),
).filter((b) => !process.argv[2] || b.name.includes(process.argv[2]));
if (blocks.length === 0) throw new Error('no runnable blocks found');
const unchecked = blocks.filter((b) => b.expect.length === 0);
if (unchecked.length) throw new Error(`blocks without an \`<!-- output matches:\` list after them: ${unchecked.map((b) => b.name).join(', ')}`);

// `tinker-wasm` for the shell blocks: the package's bin, as npm links it.
const binDir = mkdtempSync(path.join(tmpdir(), 'tinker-wasm-bin-'));
writeFileSync(path.join(binDir, 'tinker-wasm'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(root, 'pkg/cli/main.js')}" "$@"\n`, { mode: 0o755 });
// Blocks for Bun, Deno, Chromium and workerd are files under the repository (so that
// `tinker-wasm` resolves through its node_modules, as in a user's project).
const work = path.join(root, 'target/docs-blocks');
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const bin = (name) => path.join(root, 'node_modules/.bin', name);

/** Runs a command; resolves `{ code, out }` (stdout and stderr together). */
function run(cmd, args, env) {
  const child = spawn(cmd, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  return new Promise((resolve) =>
    child.on('exit', (c, sig) => {
      clearTimeout(timer);
      resolve({ code: sig ?? c, out });
    }),
  );
}

/** The block bundled for a page (the package's `browser` entry), loaded in Chromium; its console is the output. */
async function runInChromium(file, env) {
  const bundle = await esbuild.build({
    entryPoints: [file], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'error',
    define: { 'process.env.TINKER_BASE_URL': JSON.stringify(env.TINKER_BASE_URL) },
  });
  // The browser entry fetches `./gen/…` relative to itself: next to the bundle, as a bundler's assets are.
  const html = `<!doctype html><meta charset="utf-8"><script type="module">
    try { await import('/app.js'); console.log('__done__'); } catch (e) { console.log(String(e?.stack ?? e)); console.log('__failed__'); }
  </script>`;
  const server = await startStaticServer({ '/index.html': ['text/html', html], '/app.js': ['text/javascript', bundle.outputFiles[0].text] });
  // `/gen/…` → pkg/gen/… (the static server serves the repository).
  const { port } = server.address();
  const browser = await launchChromium();
  let out = '';
  try {
    const page = await browser.context.newPage();
    await page.route('**/gen/**', (route) => route.continue({ url: route.request().url().replace(`127.0.0.1:${port}/gen/`, `127.0.0.1:${port}/pkg/gen/`) }));
    const done = new Promise((resolve) => page.on('console', (m) => {
      const t = m.text();
      if (t === '__done__' || t === '__failed__') resolve(t === '__done__' ? 0 : 1);
      else out += `${t}\n`;
    }));
    page.on('pageerror', (e) => (out += `pageerror: ${e.message}\n`));
    await page.goto(`http://127.0.0.1:${port}/index.html`);
    const code = await Promise.race([done, new Promise((r) => setTimeout(() => r('timeout'), 120_000))]);
    return { code, out };
  } finally {
    await browser.close();
    server.close();
  }
}

/** The block as a Worker module, bundled as wrangler does, sent one request in miniflare. */
async function runInWorkerd(file, env) {
  const bundle = await bundleWorker(file, 'docs-worker');
  const mf = new Miniflare({ ...bundle, compatibilityDate: '2026-04-01', cf: false, bindings: { TINKER_API_KEY: env.TINKER_API_KEY, TINKER_BASE_URL: env.TINKER_BASE_URL } });
  try {
    const res = await mf.dispatchFetch('http://localhost/');
    return { code: 0, out: `${res.status} ${await res.text()}\n` };
  } finally {
    await mf.dispose();
  }
}

async function runBlock({ runtime, code }, i, env) {
  if (runtime === 'bash') return run('bash', ['-euo', 'pipefail', '-c', code], env);
  if (runtime === 'node') return run(process.execPath, ['--input-type=module', '-e', code], env);
  const file = path.join(work, `block-${i + 1}.mjs`);
  writeFileSync(file, code);
  if (runtime === 'bun') return run(bin('bun'), [file], env);
  if (runtime === 'deno') {
    const host = new URL(env.TINKER_BASE_URL).host;
    return run(bin('deno'), ['run', '--no-lock', `--allow-net=${host}`, '--allow-env=TINKER_API_KEY,TINKER_BASE_URL,TINKER_PROJECT_ID,TINKER_TAGS', file], env);
  }
  if (runtime === 'chromium') return runInChromium(file, env);
  if (runtime === 'workerd') return runInWorkerd(file, env);
  throw new Error(`unknown runtime ${runtime}`);
}

// --cors: the Chromium blocks talk to it directly, as a page does to `tinker-sim --cors`.
const sim = await startSim(['--seed', '11', '--cors']);
let failed = 0;
try {
  for (const [i, block] of blocks.entries()) {
    const t0 = Date.now();
    const env = { ...process.env, PATH: `${binDir}${path.delimiter}${process.env.PATH}`, TINKER_API_KEY: 'tml-readme-key', TINKER_BASE_URL: sim.url };
    let r;
    try {
      r = await runBlock(block, i, env);
    } catch (e) {
      r = { code: 'error', out: String(e?.stack ?? e) };
    }
    const { name, expect } = block;
    if (process.env.README_SHOW) console.log(`--- ${name}\n${r.out}`);
    const missing = r.code === 0 ? expect.filter((re) => !re.test(r.out)) : [];
    const tail = r.out.trim().split('\n').slice(-15).join('\n  ');
    if (missing.length) {
      failed++;
      console.log(`not ok - ${name}: its output does not match ${missing.map(String).join(', ')}\n  ${tail}`);
    } else if (r.code === 0) {
      console.log(`ok - ${name} (${block.runtime}, ${Date.now() - t0} ms, ${expect.length} output pattern(s) matched)`);
    } else {
      failed++;
      console.log(`not ok - ${name} (${block.runtime}: exit ${r.code})\n  ${tail}`);
    }
  }
} finally {
  await sim.stop();
  rmSync(path.join(root, 'target/export-v1'), { recursive: true, force: true });
  rmSync(binDir, { recursive: true, force: true });
}
console.log(`# README and guides: ${blocks.length - failed}/${blocks.length} examples ran as written`);
process.exit(failed ? 1 : 0);
