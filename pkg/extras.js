// Package glue shared by every entry point (Node, browsers, workerd; full and lite):
// registers the error classes with the wasm module, adds async-iterable list methods
// over the RestClient's page calls, and namespaces the data builders.
import { errorClasses } from './errors.js';

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
  listTrainingRuns(options = {}) {
    return new PagePromise((offset) => this.listTrainingRunsPage({ ...options, offset }), options.offset ?? 0);
  },
  listUserCheckpoints(options = {}) {
    return new PagePromise((offset) => this.listUserCheckpointsPage({ ...options, offset }), options.offset ?? 0);
  },
  listSessions(options = {}) {
    return new PagePromise((offset) => this.listSessionsPage({ ...options, offset }), options.offset ?? 0);
  },
  searchSessions(request = {}) {
    return new PagePromise((cursor) => this.searchSessionsPage(request, cursor ?? undefined), null);
  },
};

/** Wires one wasm glue module; returns the extra exports of its entry point. */
export function install(glue) {
  glue.__registerErrorClasses(errorClasses);
  for (const [name, fn] of Object.entries(listMethods)) {
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
