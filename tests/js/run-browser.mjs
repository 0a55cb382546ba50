// Chromium runner: serves the repository on loopback, opens a page that imports the
// package's browser entry (through an import map, as a no-bundler user would) and runs
// every cross-runtime case in Debian's chromium, driven by playwright-core. With `--module
// lite` the import map points `tinker-wasm` at the lite entry (tests/js/matrix.js).
//   node tests/js/run-browser.mjs [--module full,lite]
import http from 'node:http';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { report } from './harness.js';
import { cellTag, modulesToTest } from './matrix.js';
import { startSim } from './sim.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const types = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html', '.json': 'application/json' };

export function startStaticServer(extraRoutes = {}) {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    if (extraRoutes[url.pathname]) {
      const [type, body] = extraRoutes[url.pathname];
      res.writeHead(200, { 'content-type': type });
      return res.end(body);
    }
    const file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(root + path.sep)) return res.writeHead(403).end();
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  // Idle keep-alive connections stay open until the client closes them (server.close() ends
  // them): a server timeout could close one just as a client whose event loop was busy past
  // it reuses it ("other side closed"), when the cases run in another process.
  server.keepAliveTimeout = 0;
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** Debian's chromium, headless, with a fresh profile directory (removed on close). */
export async function launchChromium() {
  const userDataDir = await mkdtemp(path.join(tmpdir(), 'tinker-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--no-first-run', '--disable-quic', '--disable-sync'],
  });
  const close = async () => {
    await context.close();
    await rm(userDataDir, { recursive: true, force: true });
  };
  return { context, close };
}

// The package's browser entries, as its export conditions name them (`browser`, else `default`).
const pkgJson = JSON.parse(await readFile(path.join(root, 'pkg/package.json'), 'utf8'));
const browserEntry = (sub) => `/pkg/${(pkgJson.exports[sub].browser ?? pkgJson.exports[sub].default).replace(/^\.\//, '')}`;

/** The import map of a page testing `module` (tests/js/matrix.js): `tinker-wasm` is mapped to it. */
export const importMap = (module) => ({
  imports: { 'tinker-wasm': browserEntry(module === 'lite' ? './lite' : '.'), 'tinker-wasm/lite': browserEntry('./lite'), 'tinker-wasm/cookbook': browserEntry('./cookbook') },
});

const page = (env, filter, module) => `<!doctype html><meta charset="utf-8"><title>tinker-wasm tests</title>
<script type="importmap">${JSON.stringify(importMap(module))}</script>
<script type="module">
  import { runSuites } from '/tests/js/harness.js';
  try {
    const { default: suites } = await import('/tests/js/cases/index.js');
    window.__results = await runSuites(suites, { runtime: 'browser', module: ${JSON.stringify(module)}, env: ${JSON.stringify(env)} }, { filter: ${JSON.stringify(filter)}, module: ${JSON.stringify(module)} });
  } catch (e) {
    window.__results = [{ name: 'load', ok: false, ms: 0, error: String(e?.stack ?? e) }];
  }
  window.__done = true;
</script>`;

/** Runs the cases for `module` in one fresh page against a fresh simulator; returns the results. */
export async function runBrowserCases(browser, module, filter = process.env.TEST_FILTER || null) {
  const sim = await startSim(['--cors', '--seed', '7']);
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('TINKER_') || k.startsWith('SIM_'))), SIM_URL: sim.url };
  const server = await startStaticServer({ '/favicon.ico': ['image/x-icon', ''], '/__tests__.html': ['text/html', page(env, filter, module)] });
  const tag = cellTag('browser', module);
  try {
    const tab = await browser.context.newPage();
    tab.on('pageerror', (e) => console.log(`# [${tag}] page error: ${e.message}`));
    tab.on('console', (m) => m.type() === 'error' && console.log(`# [${tag}] console: ${m.text()}`));
    await tab.goto(`http://127.0.0.1:${server.address().port}/__tests__.html`);
    await tab.waitForFunction(() => window.__done === true, null, { timeout: 30 * 60_000, polling: 100 });
    const results = await tab.evaluate(() => window.__results);
    await tab.close();
    return results;
  } finally {
    server.close();
    await sim.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // node tests/js/run-browser.mjs [--module full,lite]
  const modules = modulesToTest(process.argv.slice(2), process.env.TINKER_TEST_MODULE);
  const browser = await launchChromium();
  let failed = 0;
  try {
    for (const module of modules) failed += report(cellTag('browser', module), await runBrowserCases(browser, module));
  } finally {
    await browser.close();
  }
  process.exit(failed ? 1 : 0);
}
