// The general tokenizer engine's host. HuggingFace `tokenizers` (for any tokenizer.json
// that the fast path does not specialise) is its own wasm module, gen/general, so the
// SDK's module stays small; this file instantiates it on first need and moves bytes
// between the two memories. src/wasm/general.rs calls it; the ABI is documented in
// src/tokenizer/general/src/abi.rs. Each full entry point makes one host:
//   loadSync(): the module's bytes or a WebAssembly.Module (Node, workerd), or absent;
//   load():     a promise of the same (browsers: fetched with streaming compilation).
import * as glue from './gen/general/tokenizer_general.js';

const utf8 = new TextDecoder();

export function generalHost({ loadSync = null, load = null }) {
  let x = null; // the instantiated module's exports
  let loading = null;

  const bytes = (ptr, len) => new Uint8Array(x.memory.buffer, ptr >>> 0, len >>> 0);
  const result = () => bytes(x.tg_result_ptr(), x.tg_result_len());
  const put = (data) => {
    const ptr = x.tg_alloc(data.length);
    bytes(ptr, data.length).set(data);
    return ptr;
  };

  class Engine {
    #h;
    constructor(h) {
      this.#h = h;
    }
    encode(text, addSpecial) {
      const ok = x.tg_encode(this.#h, put(text), text.length, addSpecial ? 1 : 0);
      const r = result();
      if (!ok) throw new Error(utf8.decode(r));
      const ids = new Uint32Array(r.length >>> 2);
      new Uint8Array(ids.buffer).set(r);
      return ids;
    }
    decode(ids, skipSpecial) {
      const view = new Uint8Array(ids.buffer, ids.byteOffset, ids.byteLength);
      x.tg_decode(this.#h, put(view), view.length, skipSpecial ? 1 : 0);
      return utf8.decode(result());
    }
    tokenToId(token) {
      const id = Number(x.tg_token_to_id(this.#h, put(token), token.length));
      return id < 0 ? undefined : id;
    }
    idToToken(id) {
      return x.tg_id_to_token(this.#h, id) ? utf8.decode(result()) : undefined;
    }
    vocabSize() {
      return x.tg_vocab_size(this.#h);
    }
    addedTokens() {
      x.tg_added_tokens(this.#h);
      return utf8.decode(result());
    }
    free() {
      if (this.#h) x.tg_drop(this.#h);
      this.#h = 0;
    }
  }

  return {
    loadSync(json) {
      if (!x && loadSync) x = glue.initSync({ module: loadSync() });
      if (!x) return null;
      const h = x.tg_load(put(json), json.length);
      if (!h) throw new Error(utf8.decode(result()));
      return new Engine(h);
    },
    preload() {
      if (x) return Promise.resolve();
      if (loadSync) {
        try {
          x = glue.initSync({ module: loadSync() });
          return Promise.resolve();
        } catch (e) {
          return Promise.reject(e);
        }
      }
      if (!load) return Promise.resolve();
      loading ??= Promise.resolve(load()).then((module_or_path) => glue.default({ module_or_path })).then(
        (exports) => {
          x = exports;
        },
        (e) => {
          loading = null; // a later call tries again
          throw e;
        },
      );
      return loading;
    },
  };
}
