// Rewrites a wasm-bindgen module's JS glue and raw type declarations for a module whose
// import and export names binaryen minified (scripts/build-wasm.sh runs wasm-opt with
// --minify-imports-and-exports-and-modules and saves the mapping it prints).
//
// wasm-bindgen names imports `__wbg_<name>_<16 hex digits>` under the module
// `./tinker_wasm_bg.js` (and its inline JS snippets under `./snippets/…`), and exports
// after the class and method (`restclient_getCurrentCheckpointStorageUsage`). Minified
// (one module `a`, names like `$`, `B`, `Ab`) the lite module gzips 3.1 KB smaller
// (issue 8's 200 KB budget). This applies the mapping to the glue: the import object
// becomes one object under the new module name (the glue's own imports renamed, the
// snippets' functions added under their new names), and every `wasm.<export>` access
// uses the new export name. The glue's own exports (the classes and functions users
// import) keep their names.
//
//   node scripts/minify-wasm-names.mjs <dir> <base> <map.json>
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const [dir, base, mapFile] = process.argv.slice(2);
if (!dir || !base || !mapFile) {
  console.error('usage: node scripts/minify-wasm-names.mjs <dir> <base> <map.json>');
  process.exit(2);
}
const wasmFile = path.join(dir, `${base}_bg.wasm`);
const glueFile = path.join(dir, `${base}.js`);
const dtsFile = path.join(dir, `${base}_bg.wasm.d.ts`);
const out = readFileSync(mapFile, 'utf8');
const map = JSON.parse(out.slice(out.indexOf('{')));
const module = new WebAssembly.Module(readFileSync(wasmFile));
const modules = [...new Set(WebAssembly.Module.imports(module).map((i) => i.module))];
if (modules.length !== 1) throw new Error(`${wasmFile}: expected one (minified) import module, got ${modules}`);
const [newModule] = modules;

const escape = (s) => s.replace(/[$.*+?^(){}[\]|\\]/g, '\\$&');
let glue = readFileSync(glueFile, 'utf8');
let dts = readFileSync(dtsFile, 'utf8');
const fail = (what) => {
  throw new Error(`${glueFile}: ${what}`);
};

// The namespace variable of each snippet module (`import * as import3 from "…"`).
const namespaces = new Map();
for (const m of glue.matchAll(/^import \* as (import\d+) from "([^"]+)"/gm)) {
  if (!namespaces.has(m[2])) namespaces.set(m[2], m[1]);
}
const glueModule = map.imports.find(([m]) => !namespaces.has(m))?.[0] ?? fail('no glue import');

// The glue's imports: rename the keys of `import0`. Snippet imports: collect them.
const snippets = [];
for (const [from, name, to] of map.imports) {
  if (from === glueModule) {
    const re = new RegExp(`(^\\s+)${escape(name)}(?=\\s*:)`, 'm');
    if (!re.test(glue)) fail(`import ${name} not found`);
    glue = glue.replace(re, `$1${to}`);
  } else {
    const ns = namespaces.get(from) ?? fail(`no namespace for ${from}`);
    snippets.push(`${JSON.stringify(to)}: ${ns}.${name}`);
  }
}
// The import object: one module.
const ret = /return \{\n\s*__proto__: null,\n(?:\s*"[^"]+": import\d+,\n)+\s*\};/;
if (!ret.test(glue)) fail('import object not found');
glue = glue.replace(
  ret,
  `return { __proto__: null, ${JSON.stringify(newModule)}: Object.assign(import0, { ${snippets.join(', ')} }) };`,
);
// Export accesses (`wasm.<name>`), and the raw exports' declarations.
for (const [from, to] of map.exports) {
  glue = glue.replace(new RegExp(`\\bwasm\\.${escape(from)}(?![\\w$])`, 'g'), `wasm.${to}`);
  dts = dts.replace(new RegExp(`^export const ${escape(from)}(?=:)`, 'm'), `export const ${to}`);
}
writeFileSync(glueFile, glue);
writeFileSync(dtsFile, dts);

// Every import the module asks for is a key of the import object, and every export the
// glue still reads exists.
for (const i of WebAssembly.Module.imports(module)) {
  const key = new RegExp(`(^\\s+|[{,] )(${escape(i.name)}|${escape(JSON.stringify(i.name))})\\s*:`, 'm');
  if (!key.test(glue)) fail(`import ${i.name} missing after renaming`);
}
const exports = new Set(WebAssembly.Module.exports(module).map((e) => e.name));
for (const m of glue.matchAll(/\bwasm\.([\w$]+)/g)) {
  if (!exports.has(m[1])) fail(`wasm.${m[1]} is not an export of the minified module`);
}
