// Doc text for the members wasm-bindgen writes into the generated declarations without any
// (every class's `free()` and `[Symbol.dispose]()`, and the glue's init types), so that the
// reference documents them as the rest of the API is documented. Nothing else is touched.
import { Comment, Converter, ReflectionKind } from 'typedoc';

const TEXT = {
  free: 'Frees the wasm memory behind this object now, instead of when it is garbage collected. The object is unusable afterwards.',
  '[dispose]': 'The same as `free()`, for `using` declarations (`[Symbol.dispose]`).',
  InitInput: 'What the glue accepts to load the wasm module asynchronously (the package\'s entry points do this themselves).',
  SyncInitInput: 'What `initSync` accepts: the wasm module\'s bytes or a compiled `WebAssembly.Module` (the package\'s entry points do this themselves).',
  InitOutput: 'The instantiated wasm module\'s raw exports: internal to the generated glue, not API.',
};

const comment = (text) => new Comment([{ kind: 'text', text }]);

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const r of context.project.getReflectionsByKind(ReflectionKind.All)) {
      const text = TEXT[r.name];
      if (!text) continue;
      if (r.name === 'InitOutput') {
        // Its members are the module's raw function exports: not documented one by one.
        for (const child of [...(r.children ?? [])]) context.project.removeReflection(child);
      }
      if (r.kindOf(ReflectionKind.Method)) {
        for (const s of r.signatures ?? []) if (!s.hasComment()) s.comment = comment(text);
      } else if (!r.hasComment()) {
        r.comment = comment(text);
      }
    }
  });
}
