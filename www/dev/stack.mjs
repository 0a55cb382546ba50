// The playground's local stack, used by `make playground` and the tests in tests/www:
//   1. the static site (www/ + pkg/ + tokenizer files) on loopback,
//   2. tinker-sim (the local Tinker simulator), requiring the relay's key,
//   3. the relay Worker (www/relay/worker.js) in miniflare's workerd, listening on a
//      port, with the key as a binding and the site's origin as the only allowed origin.
// The page learns the relay's URL from /playground-config.json.
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Miniflare, Log, LogLevel } from 'miniflare';
import { bundleWorker } from '../../tests/js/run-workerd.mjs';
import { startSim } from '../../tests/js/sim.mjs';
import { root, startStaticServer } from './static.mjs';

/** Captures miniflare's and workerd's output (and echoes it when asked). */
class CapturingLog extends Log {
  constructor(lines, echo) {
    super(LogLevel.INFO);
    this.lines = lines;
    this.echo = echo;
  }
  log(message) {
    this.lines.push(message);
    if (this.echo) process.stdout.write(`${message}\n`);
  }
}

function capture(stream, lines, echo) {
  stream.setEncoding('utf8');
  let buf = '';
  stream.on('data', (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      lines.push(line);
      if (echo) process.stdout.write(`${line}\n`);
    }
  });
}

/**
 * Starts the relay Worker in miniflare on a loopback port. Resolves to
 * `{ url, mf, logs, stop }`; `logs` collects every line the Worker and workerd print.
 */
export async function startRelay({ apiKey, upstream, origins, maxBodyBytes, tokenizerBaseURL, clientKeys = [], port = 0, echo = false }) {
  const bundle = await bundleWorker(path.join(root, 'www/relay/worker.js'), 'www-relay');
  const logs = [];
  const bindings = { TINKER_API_KEY: apiKey, TINKER_BASE_URL: upstream, ALLOWED_ORIGINS: origins.join(',') };
  if (maxBodyBytes !== undefined) bindings.MAX_BODY_BYTES = String(maxBodyBytes);
  if (tokenizerBaseURL) bindings.TOKENIZER_BASE_URL = tokenizerBaseURL;
  if (clientKeys.length) bindings.OPENAI_CLIENT_KEYS = clientKeys.join(',');
  const mf = new Miniflare({
    ...bundle,
    compatibilityDate: '2026-04-01',
    bindings,
    host: '127.0.0.1',
    port,
    // No request.cf: miniflare would otherwise fetch one from workers.cloudflare.com.
    cf: false,
    log: new CapturingLog(logs, echo),
    handleRuntimeStdio(stdout, stderr) {
      capture(stdout, logs, echo);
      capture(stderr, logs, echo);
    },
  });
  const url = (await mf.ready).origin;
  return { url, mf, logs, stop: () => mf.dispose() };
}

/** A fresh random relay key (tests look for it in everything the relay sends). */
export const randomKey = () => `tml-relay-${randomBytes(16).toString('hex')}`;

/**
 * The whole stack. Options: `apiKey` (default random), `simArgs` (extra tinker-sim
 * flags), `maxBodyBytes`, `sitePort`/`relayPort` (0: any), `echo` (print the relay's
 * log), `extraOrigins`, `clientKeys` (the relay's OPENAI_CLIENT_KEYS). Resolves to `{ siteURL, relayURL, simURL, apiKey, relay, sim, stop }`.
 */
export async function startStack({ apiKey = randomKey(), simArgs = [], maxBodyBytes, sitePort = 0, relayPort = 0, echo = false, extraOrigins = [], clientKeys = [] } = {}) {
  const config = { mode: 'relay', relayURL: null, simURL: null, simulator: true, finetune: { learningRate: 0.05, epochs: 10 } };
  const site = await startStaticServer({
    port: sitePort,
    routes: { '/playground-config.json': () => ['application/json', JSON.stringify(config)] },
  });
  let sim;
  let relay;
  try {
    sim = await startSim(['--cors', '--api-key', apiKey, ...simArgs]);
    relay = await startRelay({ apiKey, upstream: sim.url, origins: [site.url, ...extraOrigins], maxBodyBytes, tokenizerBaseURL: `${site.url}/tokenizers/by-id`, clientKeys, port: relayPort, echo });
  } catch (e) {
    await sim?.stop();
    await site.close();
    throw e;
  }
  config.relayURL = relay.url;
  config.simURL = sim.url;
  const stop = async () => {
    await relay.stop();
    await sim.stop();
    await site.close();
  };
  return { siteURL: site.url, relayURL: relay.url, simURL: sim.url, apiKey, relay, sim, site, config, stop };
}
