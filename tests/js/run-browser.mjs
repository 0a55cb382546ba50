// Chromium runner: serves the repository on loopback, opens a page that imports the
// package's browser entry (through an import map, as a no-bundler user would) and runs
// every cross-runtime case in Debian's chromium, driven by playwright-core.
//   node tests/js/run-browser.mjs
import http from 'node:http';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { report } from './harness.js';
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

const page = (env, filter) => `<!doctype html><meta charset="utf-8"><title>tinker-wasm tests</title>
<script type="importmap">${JSON.stringify({ imports: { 'tinker-wasm': '/pkg/browser.js', 'tinker-wasm/lite': '/pkg/lite/browser.js' } })}</script>
<script type="module">
  import { runSuites } from '/tests/js/harness.js';
  try {
    const { default: suites } = await import('/tests/js/cases/index.js');
    window.__results = await runSuites(suites, { runtime: 'browser', env: ${JSON.stringify(env)} }, { filter: ${JSON.stringify(filter)} });
  } catch (e) {
    window.__results = [{ name: 'load', ok: false, ms: 0, error: String(e?.stack ?? e) }];
  }
  window.__done = true;
</script>`;

if (import.meta.url === `file://${process.argv[1]}`) {
  const sim = await startSim(['--cors', '--seed', '7']);
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('TINKER_') || k.startsWith('SIM_'))), SIM_URL: sim.url };
  const server = await startStaticServer({ '/favicon.ico': ['image/x-icon', ''], '/__tests__.html': ['text/html', page(env, process.env.TEST_FILTER || null)] });
  const browser = await launchChromium();
  let failed = 1;
  try {
    const tab = await browser.context.newPage();
    tab.on('pageerror', (e) => console.log(`# [browser] page error: ${e.message}`));
    tab.on('console', (m) => m.type() === 'error' && console.log(`# [browser] console: ${m.text()}`));
    await tab.goto(`http://127.0.0.1:${server.address().port}/__tests__.html`);
    await tab.waitForFunction(() => window.__done === true, null, { timeout: 30 * 60_000, polling: 100 });
    failed = report('browser', await tab.evaluate(() => window.__results));
  } finally {
    await browser.close();
    server.close();
    await sim.stop();
  }
  process.exit(failed ? 1 : 0);
}
