// The general tokenizer engine's host. HuggingFace `tokenizers` (for any tokenizer.json
// that the fast path does not specialise) is its own wasm module, gen/general, so the
// SDK's module stays small; this file instantiates it on first need and moves bytes
// between the two memories. src/wasm/general.rs calls it; the ABI is documented in
// crates/tokenizer-general/src/abi.rs. Each full entry point makes one host:
//   loadSync(): the module's bytes or a WebAssembly.Module (Node, workerd), or absent;
//   load():     a promise of the same, or of its URL (browsers: streaming compilation).
import * as generalGlue from './gen/general/tokenizer_general.js';

const utf8 = new TextDecoder();

export function generalHost({ loadSync = null, load = null, glue = generalGlue }) {
  let x = null; // the instantiated module's exports
  let loading = null;
  let crashed = null; // the error every call throws once the module has trapped

  const bytes = (ptr, len) => new Uint8Array(x.memory.buffer, ptr >>> 0, len >>> 0);
  const result = () => bytes(x.tg_result_ptr(), x.tg_result_len());
  const put = (data) => {
    const ptr = x.tg_alloc(data.length);
    bytes(ptr, data.length).set(data);
    return ptr;
  };
  // A trap (a Rust panic, with panic = "abort") leaves the module's memory in an unknown
  // state: no call may run in it again.
  const guarded = (f) => {
    if (crashed) throw crashed;
    try {
      return f();
    } catch (e) {
      if (e instanceof WebAssembly.RuntimeError) {
        crashed = new Error(`the general tokenizer engine crashed (${e.message}); tokenizers that use it cannot be used any more in this process or page`, { cause: e });
        throw crashed;
      }
      throw e;
    }
  };
  const failed = (what, e) => new Error(`cannot load the general tokenizer engine (${what}): ${e?.message ?? e}`, { cause: e });
  const instantiateSync = () => {
    try {
      x = glue.initSync({ module: loadSync() });
    } catch (e) {
      throw failed('gen/general/tokenizer_general_bg.wasm', e);
    }
  };

  class Engine {
    #h;
    constructor(h) {
      this.#h = h;
    }
    #live() {
      if (!this.#h) throw new Error('this general tokenizer engine was freed');
      return this.#h;
    }
    encode(text, addSpecial, splitSpecial = false) {
      return guarded(() => {
        const ok = x.tg_encode(this.#live(), put(text), text.length, (addSpecial ? 1 : 0) | (splitSpecial ? 2 : 0));
        const r = result();
        if (!ok) throw new Error(utf8.decode(r));
        const ids = new Uint32Array(r.length >>> 2);
        new Uint8Array(ids.buffer).set(r);
        return ids;
      });
    }
    decode(ids, skipSpecial) {
      return guarded(() => {
        const view = new Uint8Array(ids.buffer, ids.byteOffset, ids.byteLength);
        x.tg_decode(this.#live(), put(view), view.length, skipSpecial ? 1 : 0);
        return utf8.decode(result());
      });
    }
    tokenToId(token) {
      return guarded(() => {
        const id = Number(x.tg_token_to_id(this.#live(), put(token), token.length));
        return id < 0 ? undefined : id;
      });
    }
    idToToken(id) {
      return guarded(() => (x.tg_id_to_token(this.#live(), id) ? utf8.decode(result()) : undefined));
    }
    vocabSize() {
      return guarded(() => x.tg_vocab_size(this.#live()));
    }
    addedTokens() {
      return guarded(() => {
        x.tg_added_tokens(this.#live());
        return utf8.decode(result());
      });
    }
    free() {
      const h = this.#h;
      this.#h = 0;
      if (h && !crashed) x.tg_drop(h);
    }
  }

  // A split regex (fancy-regex) for a tiktoken vocabulary whose pattern has no
  // hand-written splitter in the SDK's module.
  class Regex {
    #h;
    constructor(h) {
      this.#h = h;
    }
    #live() {
      if (!this.#h) throw new Error('this split regex was freed');
      return this.#h;
    }
    /** The byte ranges [start, end, start, end, …] of the matches in `text` (UTF-8 bytes). */
    find(text) {
      return guarded(() => {
        const ok = x.tg_regex_find(this.#live(), put(text), text.length);
        const r = result();
        if (!ok) throw new Error(utf8.decode(r));
        const ranges = new Uint32Array(r.length >>> 2);
        new Uint8Array(ranges.buffer).set(r);
        return ranges;
      });
    }
    free() {
      const h = this.#h;
      this.#h = 0;
      if (h && !crashed) x.tg_regex_drop(h);
    }
  }

  return {
    /** A compiled split regex for `pattern` (UTF-8 bytes), or null when the module is not loaded and cannot be loaded synchronously here. */
    regexSync(pattern) {
      if (!x && loadSync) instantiateSync();
      if (!x) return null;
      return guarded(() => {
        const h = x.tg_regex_new(put(pattern), pattern.length);
        if (!h) throw new Error(utf8.decode(result()));
        return new Regex(h);
      });
    },
    /** An engine for `json` (UTF-8 bytes), or null when the module is not loaded and cannot be loaded synchronously here. */
    loadSync(json) {
      if (!x && loadSync) instantiateSync();
      if (!x) return null;
      return guarded(() => {
        const h = x.tg_load(put(json), json.length);
        if (!h) throw new Error(utf8.decode(result()));
        return new Engine(h);
      });
    },
    /** Loads the module once; a failed load is tried again by the next call. */
    preload() {
      if (x) return Promise.resolve();
      if (loadSync) {
        try {
          instantiateSync();
          return Promise.resolve();
        } catch (e) {
          return Promise.reject(e);
        }
      }
      if (!load) return Promise.resolve();
      loading ??= Promise.resolve()
        .then(load)
        .then((module_or_path) => glue.default({ module_or_path }))
        .then(
          (exports) => {
            x = exports;
          },
          (e) => {
            loading = null;
            throw failed('gen/general/tokenizer_general_bg.wasm', e);
          },
        );
      return loading;
    },
  };
}
