// `tinker-wasm serve`: the OpenAI-compatible handler (`openaiFetch`, ../../openai.js) on a
// local port, for editors, agents and eval tools that take an OpenAI base URL. Not a command
// of the Python CLI. Only this command loads the full SDK (renderers and tokenizer).
import http from 'node:http';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { requireCredentials } from '../api.js';
import { CliError } from '../errors.js';

/** Largest request body read (OpenAI requests with images inline stay well under it). */
const MAX_BODY = 32 * 1024 * 1024;

/**
 * The ServiceClient's tokenizer option for `--tokenizers`: a base URL (the SDK's
 * `tokenizerBaseURL`: `<url>/<tokenizer id>/tokenizer.json`) or a directory laid out the same
 * way, read from disk (`tokenizerLoader`). Nothing when the option is absent.
 * @param {any} sdk @param {string | undefined} where
 */
export function tokenizerOptions(sdk, where) {
  if (!where) return {};
  if (/^https?:\/\//.test(where)) return { tokenizerBaseURL: where };
  const dir = path.resolve(where);
  if (!existsSync(dir)) throw new CliError(`Invalid --tokenizers: no directory ${where}`, 'Give a directory holding <tokenizer id>/tokenizer.json, or an http(s) base URL.');
  return {
    tokenizerLoader: async (/** @type {string} */ id) => {
      const files = path.resolve(dir, id);
      if (!files.startsWith(dir + path.sep)) throw new Error(`tokenizer id ${JSON.stringify(id)} is not a path under ${dir}`);
      const json = await readFile(path.join(files, 'tokenizer.json')).catch(() => {
        throw new Error(`no tokenizer for ${JSON.stringify(id)}: ${path.join(files, 'tokenizer.json')} does not exist (--tokenizers ${where})`);
      });
      const config = await readFile(path.join(files, 'tokenizer_config.json'), 'utf8').catch(() => undefined);
      return sdk.Tokenizer.fromJSON(json, config === undefined ? {} : { config });
    },
  };
}

/** A Node request as a fetch `Request` (the body read whole, up to MAX_BODY). @param {http.IncomingMessage} req @param {AbortSignal} signal */
async function toRequest(req, signal) {
  const chunks = [];
  let size = 0;
  for await (const c of req) {
    size += c.length;
    if (size > MAX_BODY) return null;
    chunks.push(c);
  }
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks);
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url}`, { method: req.method, headers, body, signal });
}

/** Writes a fetch `Response` to a Node response, streaming its body. @param {Response} response @param {http.ServerResponse} res */
async function send(response, res) {
  /** @type {Record<string, string>} */
  const headers = {};
  response.headers.forEach((v, k) => {
    headers[k] = v;
  });
  res.writeHead(response.status, headers);
  if (response.body) for await (const chunk of /** @type {AsyncIterable<Uint8Array>} */ (/** @type {unknown} */ (response.body))) res.write(chunk);
  res.end();
}

/** The server: every request through `handle`, one log line each on stderr (no bodies). @param {(r: Request) => Promise<Response>} handle */
export function openaiServer(handle) {
  return http.createServer(async (req, res) => {
    const t0 = Date.now();
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    let status = 0;
    try {
      const request = await toRequest(req, controller.signal);
      const response = request ? await handle(request) : Response.json({ error: { message: `request bodies are limited to ${MAX_BODY} bytes`, type: 'invalid_request_error', param: null, code: null } }, { status: 413 });
      status = response.status;
      await send(response, res);
    } catch (e) {
      if (!controller.signal.aborted && !res.headersSent) {
        status = 500;
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(/** @type {any} */ (e)?.message ?? e), type: 'server_error', param: null, code: null } }));
      } else res.destroy();
    }
    const path = (req.url ?? '').split('?')[0].slice(0, 200);
    process.stderr.write(`${req.method} ${path} ${controller.signal.aborted ? 'aborted' : status} ${Date.now() - t0}ms\n`);
  });
}

/** `tinker-wasm serve [--host] [--port] [--tokenizers] [--renderer]`. */
export async function serve(/** @type {any} */ _ctx, /** @type {any} */ opts) {
  if (!(opts.port >= 0 && opts.port <= 65535)) throw new CliError(`Invalid --port: ${opts.port}`, 'A port is a number from 0 to 65535 (0 picks a free one).');
  await requireCredentials();
  const sdk = /** @type {any} */ (await import('../../index.js'));
  const service = new sdk.ServiceClient(tokenizerOptions(sdk, opts.tokenizers));
  const handle = sdk.openaiFetch(service, opts.renderer ? { renderer: opts.renderer } : {});
  const server = openaiServer((r) => handle(r));
  await new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new CliError(`Cannot listen on ${opts.host}:${opts.port}: ${e.message}`, 'Choose another --port or --host.')));
    server.listen(opts.port, opts.host, () => resolve(undefined));
  });
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  process.stdout.write(`Serving the OpenAI API at http://${host}:${address.port}/v1 (POST /v1/chat/completions, POST /v1/completions, GET /v1/models)${opts.tokenizers ? '' : '; no --tokenizers: only completions of token ids work'}\n`);
  await new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      server.close(() => resolve(undefined));
      server.closeAllConnections();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await service.close();
  return 0;
}
