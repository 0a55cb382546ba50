// One connection to the Tinker API, directly or through the relay: a ServiceClient with
// an instrumented fetch (request activity and the queue state of pending futures feed the
// Activity list), its RestClient, and cached sampling clients.
import * as tinker from 'tinker-wasm/cookbook';
import { tokenizerForId } from './tokenizers.js';

/** The key the page sends through the relay: the relay replaces it with its secret. */
export const RELAY_PLACEHOLDER_KEY = 'tml-relay-placeholder';

const headerOf = (headers, name) => {
  if (!headers) return undefined;
  if (typeof headers.get === 'function') return headers.get(name) ?? undefined;
  const k = Object.keys(headers).find((x) => x.toLowerCase() === name);
  return k === undefined ? undefined : headers[k];
};

/** Drains a page-promise list into an array (at most `max` items). */
async function collect(pages, max) {
  const out = [];
  for await (const item of pages) {
    out.push(item);
    if (out.length >= max) break;
  }
  return out;
}

export class Connection {
  /**
   * `mode`: 'relay' | 'direct'. `onNetwork(event)` sees every request:
   * `{ phase: 'start' | 'end', method, route, status, requestType, pending, queueState }`.
   */
  constructor({ mode, baseURL, apiKey, acknowledged = false, onNetwork = () => {} }) {
    this.mode = mode;
    this.baseURL = baseURL.replace(/\/+$/, '');
    this.onNetwork = onNetwork;
    this.samplers = new Map();
    this.baseModels = new Map();
    this.svc = new tinker.ServiceClient({
      apiKey: mode === 'relay' ? RELAY_PLACEHOLDER_KEY : apiKey,
      baseURL: this.baseURL,
      // Through the relay the page holds no key, only the placeholder; directly, the
      // user opted in to exposing theirs.
      dangerouslyAllowBrowser: mode === 'relay' ? true : acknowledged,
      telemetry: false,
      displayName: 'tinker-wasm playground',
      fetch: (url, init) => this.#fetch(url, init),
      // Tokenizers come from this site's files (a training client's getTokenizer).
      tokenizerLoader: (id) => tokenizerForId(id),
    });
    this.rest = this.svc.restClient();
  }

  async #fetch(url, init) {
    const method = init?.method ?? 'GET';
    const route = new URL(url).pathname.replace(/^.*\/api\/v1\//, '');
    const requestType = headerOf(init?.headers, 'x-tinker-request-type');
    this.onNetwork({ phase: 'start', method, route, requestType });
    let res;
    try {
      res = await fetch(url, init);
    } catch (e) {
      this.onNetwork({ phase: 'end', method, route, status: init?.signal?.aborted || e?.name === 'AbortError' ? 'aborted' : 0, requestType });
      throw e;
    }
    let pending = false;
    let queueState;
    if (route === 'retrieve_future' && res.ok && (res.headers.get('content-type') ?? '').includes('json')) {
      try {
        const body = await res.clone().json();
        pending = body?.type === 'try_again';
        queueState = body?.queue_state;
      } catch {
        // The SDK reports unreadable answers itself.
      }
    }
    this.onNetwork({ phase: 'end', method, route, status: res.status, requestType, pending, queueState });
    return res;
  }

  /** For the relay: its own status (`/relay/status`, checked upstream with the SDK). */
  async relayStatus(signal) {
    let r;
    try {
      r = await fetch(`${this.baseURL}/relay/status`, { signal });
    } catch (cause) {
      // A relay that refuses this origin sends no CORS headers: the browser reports that as
      // a network error, indistinguishable from a relay that is down.
      const e = new Error(`no usable answer from the relay at ${this.baseURL}: is it running, and is ${location.origin} on its ALLOWED_ORIGINS?`, { cause });
      e.name = 'RelayUnreachable';
      throw e;
    }
    const body = await r.json().catch(() => null);
    if (!r.ok) {
      const e = new Error(body?.detail ?? body?.error?.message ?? `relay status: HTTP ${r.status}`);
      e.name = body?.error?.name ?? 'RelayError';
      e.status = r.status;
      e.body = body;
      throw e;
    }
    return body;
  }

  /** Base models (capabilities), and the sampler checkpoints of the caller's runs. */
  async listModels() {
    const [caps, runs, checkpoints] = await Promise.all([
      this.svc.getServerCapabilities(),
      collect(this.rest.listTrainingRuns({ limit: 50 }), 200),
      collect(this.rest.listUserCheckpoints({ limit: 50 }), 200),
    ]);
    const runBase = new Map(runs.map((r) => [r.training_run_id, r.base_model]));
    const base = caps.supported_models.filter((m) => m.model_name);
    const samplers = checkpoints
      .filter((c) => c.checkpoint_type === 'sampler')
      .map((c) => {
        const runId = c.tinker_path.replace(/^tinker:\/\//, '').split('/')[0];
        const baseModel = runBase.get(runId) ?? null;
        if (baseModel) this.baseModels.set(c.tinker_path, baseModel);
        return { path: c.tinker_path, name: c.checkpoint_id.replace(/^sampler_weights\//, ''), runId, baseModel, time: c.time };
      });
    return { base, samplers };
  }

  /** The base model of a model key (`base:NAME` or `ckpt:tinker://…`). */
  async baseModelOf(key) {
    const { kind, id } = parseModelKey(key);
    if (kind === 'base') return id;
    if (!this.baseModels.has(id)) {
      const info = await this.rest.getWeightsInfoByTinkerPath(id);
      this.baseModels.set(id, info.base_model);
    }
    return this.baseModels.get(id);
  }

  /** A sampling client for a model key, created once per connection. */
  samplingClient(key, { signal } = {}) {
    if (!this.samplers.has(key)) {
      const { kind, id } = parseModelKey(key);
      const p = this.svc.createSamplingClient(kind === 'base' ? { base_model: id } : { model_path: id }, { signal });
      p.catch(() => this.samplers.delete(key));
      this.samplers.set(key, p);
    }
    return this.samplers.get(key);
  }

  /** Remembers a sampling client made elsewhere (e.g. right after training). */
  adoptSampler(key, client, baseModel) {
    this.samplers.set(key, Promise.resolve(client));
    if (baseModel) this.baseModels.set(parseModelKey(key).id, baseModel);
  }

  async close() {
    try {
      await this.svc.close();
    } catch {
      // Closing is best effort (the page may be going away).
    }
  }
}

export const modelKey = (kind, id) => `${kind}:${id}`;

export function parseModelKey(key) {
  const i = key.indexOf(':');
  return { kind: key.slice(0, i), id: key.slice(i + 1) };
}
