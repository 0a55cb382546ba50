// The cookbook's renderer registry (tinker_cookbook.renderers.register_renderer and
// get_renderer), for the full package: a renderer registered under a name is what
// getRenderer(name, tokenizer) returns from then on, built-in names included.

/**
 * The registry functions over a glue module's built-in `Renderer` class.
 * @param {{ Renderer: any }} glue
 */
export function rendererRegistry(glue) {
  /** @type {Map<string, (tokenizer: any, options?: any) => any>} */
  const custom = new Map();
  const checkName = (/** @type {unknown} */ name) => {
    if (typeof name !== 'string' || name === '') {
      throw new TypeError(`name: must be a non-empty string, got ${JSON.stringify(name) ?? String(name)}`);
    }
  };
  return {
    /**
     * Registers `factory(tokenizer, options)` under `name` (use a namespaced name such as
     * `'acme/chat'` to avoid the built-in ones; a built-in name is overridden).
     * @param {string} name
     * @param {(tokenizer: any, options?: any) => any} factory
     */
    registerRenderer(name, factory) {
      checkName(name);
      if (typeof factory !== 'function') {
        throw new TypeError(`factory: must be a function (tokenizer, options) => renderer, got ${typeof factory}`);
      }
      custom.set(name, factory);
    },
    /** Removes a registered renderer; `true` if there was one. @param {string} name */
    unregisterRenderer(name) {
      return custom.delete(name);
    },
    /** The names registered with `registerRenderer` (not the built-in ones). */
    getRegisteredRendererNames() {
      return [...custom.keys()];
    },
    /** Whether `name` was registered with `registerRenderer`. @param {string} name */
    isRendererRegistered(name) {
      return custom.has(name);
    },
    /**
     * The renderer `name`: a registered one first, else the built-in one.
     * @param {string} name
     * @param {any} tokenizer
     * @param {any} [options]
     */
    getRenderer(name, tokenizer, options) {
      checkName(name);
      const factory = custom.get(name);
      return factory ? factory(tokenizer, options) : new glue.Renderer(name, tokenizer, options);
    },
  };
}
