// Package glue shared by every entry point (Node, browsers, workerd; full and lite):
// registers the error classes with the wasm module, adds async-iterable list methods
// over the RestClient's page calls, and namespaces the data builders.
import { errorClasses } from './errors.js';
import { DownloadCheckpointParams, DownloadOptions } from './params.js';

/** A list call: `await` it for the first page, or `for await` over every item. */
export class PagePromise {
  #fetchPage;
  #start;
  #first = null;

  constructor(fetchPage, start) {
    this.#fetchPage = fetchPage;
    this.#start = start;
  }

  #page(position) {
    return this.#fetchPage(position).then((p) => {
      const next = p.nextOffset ?? p.nextCursor ?? null;
      return Object.assign(p, {
        hasNextPage: () => next !== null,
        getNextPage: () => {
          if (next === null) return Promise.reject(new errorClasses.TinkerError('there is no next page'));
          return this.#page(next);
        },
      });
    });
  }

  /** The first page. */
  firstPage() {
    this.#first ??= this.#page(this.#start);
    return this.#first;
  }

  then(onFulfilled, onRejected) {
    return this.firstPage().then(onFulfilled, onRejected);
  }

  catch(onRejected) {
    return this.firstPage().catch(onRejected);
  }

  async *[Symbol.asyncIterator]() {
    let page = await this.firstPage();
    for (;;) {
      yield* page.items;
      if (!page.hasNextPage()) return;
      page = await page.getNextPage();
    }
  }
}

const listMethods = {
  listTrainingRuns(params = {}, options) {
    return new PagePromise((offset) => this.listTrainingRunsPage({ ...params, offset }, options), params.offset ?? 0);
  },
  listUserCheckpoints(params = {}, options) {
    return new PagePromise((offset) => this.listUserCheckpointsPage({ ...params, offset }, options), params.offset ?? 0);
  },
  listSessions(params = {}, options) {
    return new PagePromise((offset) => this.listSessionsPage({ ...params, offset }, options), params.offset ?? 0);
  },
  searchSessions(request = {}, options) {
    return new PagePromise((cursor) => this.searchSessionsPage(request, cursor ?? undefined, options), null);
  },
};

/** `{ fs, path }` when loaded through the Node entry point (which imports them). */
let nodeModules = null;

/** Streams the files of an `external_weights` checkpoint (see `downloadMethods`). */
async function* checkpointFiles(rest, tinkerPath, { signal, fetch: fetchFn = globalThis.fetch }) {
  const { urls } = await rest.getExternalWeightsUrls(tinkerPath, signal ? { signal } : undefined);
  for (const path of Object.keys(urls).sort()) {
    let response;
    try {
      response = await fetchFn(urls[path], { signal });
    } catch (e) {
      if (signal?.aborted) throw new errorClasses.APIUserAbortError(`download of ${tinkerPath} was aborted`);
      throw new errorClasses.APIConnectionError(`downloading ${path}: ${e?.message ?? e}`);
    }
    if (!response.ok) {
      throw new errorClasses.APIStatusError(`downloading ${path}: HTTP ${response.status}`, { status: response.status, headers: Object.fromEntries(response.headers) });
    }
    const length = Number(response.headers.get('content-length'));
    yield { path, size: Number.isFinite(length) && length >= 0 && response.headers.has('content-length') ? length : null, stream: response.body };
  }
}

/** Reads `stream` chunk by chunk, reporting progress; honours `signal`. */
async function* chunks(stream, signal) {
  const reader = stream.getReader();
  try {
    for (;;) {
      if (signal?.aborted) throw new errorClasses.APIUserAbortError('the download was aborted');
      let next;
      try {
        next = await reader.read();
      } catch (e) {
        if (signal?.aborted) throw new errorClasses.APIUserAbortError('the download was aborted');
        throw new errorClasses.APIConnectionError(`the download broke: ${e?.message ?? e}`);
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    reader.releaseLock();
  }
}

const downloadMethods = {
  /**
   * The files of an `external_weights` checkpoint as an async iterable of
   * `{ path, size, stream }` (a `ReadableStream` each, read in order): nothing is buffered.
   */
  openCheckpointFiles(tinkerPath, options) {
    return checkpointFiles(this, tinkerPath, DownloadOptions.read(options));
  },

  /**
   * Downloads an `external_weights` checkpoint. With `directory` (Node), streams each
   * file to disk; otherwise resolves to one `Blob` per file. `on_progress` gets
   * `{ path, fileBytes, fileSize, bytes }` after each chunk; the request option `signal`
   * aborts, `fetch` replaces the global one.
   */
  async downloadCheckpoint(tinkerPath, params, options) {
    const { directory, on_progress: onProgress } = DownloadCheckpointParams.read(params);
    const { signal, fetch } = DownloadOptions.read(options);
    let fs = null;
    let pathMod = null;
    if (directory !== undefined) {
      if (!nodeModules) throw Object.assign(new TypeError('directory: writing to disk needs the Node entry point; elsewhere omit it to get Blobs'), { field: 'directory' });
      ({ fs, path: pathMod } = nodeModules);
    }
    const files = [];
    let bytes = 0;
    for await (const { path, size, stream } of checkpointFiles(this, tinkerPath, { signal, fetch })) {
      let fileBytes = 0;
      const report = (n) => {
        fileBytes += n;
        bytes += n;
        onProgress?.({ path, fileBytes, fileSize: size, bytes });
      };
      if (fs) {
        const target = pathMod.resolve(directory, path);
        if (!target.startsWith(pathMod.resolve(directory) + pathMod.sep)) throw new errorClasses.APIResponseValidationError(`refusing to write outside ${directory}: ${path}`);
        await fs.promises.mkdir(pathMod.dirname(target), { recursive: true });
        const out = fs.createWriteStream(target);
        try {
          for await (const chunk of chunks(stream, signal)) {
            if (!out.write(chunk)) await new Promise((r) => out.once('drain', r));
            report(chunk.byteLength);
          }
        } finally {
          await new Promise((r) => out.end(r));
        }
        files.push({ path, bytes: fileBytes, localPath: target });
      } else {
        const parts = [];
        for await (const chunk of chunks(stream, signal)) {
          parts.push(chunk);
          report(chunk.byteLength);
        }
        files.push({ path, bytes: fileBytes, blob: new Blob(parts) });
      }
      if (size !== null && fileBytes !== size) throw new errorClasses.APIConnectionError(`${path}: got ${fileBytes} of ${size} bytes`);
    }
    return { files, bytes };
  },
};

/**
 * `AdminClient` (Python 0.38's `tinker.AdminClient`): the calls that need an organisation
 * admin role — billing usage, checkpoint storage usage and the audit log — on their own
 * client, constructed like a `RestClient` (same options, same connection). It delegates
 * each call to a `RestClient` of the entry point (the Node one uses node:http).
 */
export function adminClient(RestClient) {
  class AdminClient {
    #rest;
    constructor(options) {
      this.#rest = new RestClient(options);
    }
    /** Hourly billing usage events in [starting_on, ending_before) (Dates or RFC 3339 strings). */
    getBillingUsage(params) {
      return this.#rest.getBillingUsage(params);
    }
    /** Current checkpoint storage usage, optionally of one project (`{ project_id }`). */
    getCurrentCheckpointStorageUsage(params) {
      return this.#rest.getCurrentCheckpointStorageUsage(params);
    }
    /** The organisation's audit log (`{ event_type, day }`). */
    getAuditLog(params) {
      return this.#rest.getAuditLog(params);
    }
    /** Stops the client's timers and releases it. */
    close() {
      return this.#rest.close();
    }
  }
  if (typeof Symbol.asyncDispose === 'symbol') {
    Object.defineProperty(AdminClient.prototype, Symbol.asyncDispose, { value() { return this.close(); }, configurable: true });
  }
  return AdminClient;
}

/**
 * Wires one wasm glue module; returns the extra exports of its entry point. The Node
 * entry passes `{ fs, path }` so downloads can write files; no other entry imports
 * Node modules, which keeps the package bundleable for browsers and Workers.
 */
export function install(glue, node = null) {
  if (node) nodeModules = node;
  glue.__registerErrorClasses(errorClasses);
  for (const [name, fn] of Object.entries({ ...listMethods, ...downloadMethods })) {
    Object.defineProperty(glue.RestClient.prototype, name, { value: fn, writable: true, configurable: true });
  }
  if (typeof Symbol.asyncDispose === 'symbol') {
    for (const cls of [glue.ServiceClient, glue.RestClient]) {
      Object.defineProperty(cls.prototype, Symbol.asyncDispose, { value() { return this.close(); }, configurable: true });
    }
  }
  return {
    ModelInput: Object.freeze({ fromInts: (tokens) => glue.modelInputFromInts(tokens) }),
    TensorData: Object.freeze({ fromArray: (data, options) => glue.tensorDataFromArray(data, options) }),
    datumFromTokens: (tokens, options) => glue.datumFromTokens(tokens, options),
  };
}
