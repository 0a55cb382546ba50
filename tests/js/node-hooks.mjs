// Node module hooks for the lite cell of the case matrix (tests/js/matrix.js): the bare
// specifier `tinker-wasm` resolves as `tinker-wasm/lite` would, through the package's own
// export conditions. Registered by node-lite.mjs.
let target = null;

export function initialize(data) {
  target = data.target;
}

export function resolve(specifier, context, next) {
  return next(specifier === 'tinker-wasm' && target ? target : specifier, context);
}
