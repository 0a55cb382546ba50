// Public-surface coverage (issue 26): every public JS method, getter and function that the
// package's type declarations export must be exercised by a cross-runtime case
// (tests/js/cases, which Node, Chromium, workerd, Bun and Deno all run), so a new method
// without a test fails `make test`.
//
// The surface is generated from the declarations with the TypeScript compiler
// (pkg/index.d.ts and everything it re-exports): exported functions, and each exported
// class's public methods, getters, properties and static methods, as `Class.member`
// (`Class.static member` for statics). tests/js/coverage.json maps each of them to the case
// (`suite: case name`) that calls it. This check fails when
//   - a member of the surface has no entry (a new method without a test),
//   - an entry names a member that is no longer exported, or a case that does not exist,
//   - the named case's source does not mention the member (it was renamed or removed).
// `node tests/js/coverage.mjs --list` prints the surface.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import suites from './cases/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The exported surface of pkg/index.d.ts, as sorted `Class.member` / `function` names. */
export function publicSurface(entry = path.join(root, 'pkg/index.d.ts')) {
  const program = ts.createProgram([entry], { noEmit: true, skipLibCheck: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler });
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(entry);
  if (!file) throw new Error(`cannot read ${entry}`);
  const out = new Set();
  const memberName = (m) => {
    const n = m.name;
    if (!n) return null;
    if (ts.isComputedPropertyName(n)) return `[${n.expression.getText()}]`;
    return n.getText();
  };
  const isPublic = (m) => !(ts.getCombinedModifierFlags(m) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) && !memberName(m)?.startsWith('#') && !memberName(m)?.startsWith('__');
  for (const sym of checker.getExportsOfModule(checker.getSymbolAtLocation(file))) {
    const target = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
    const name = sym.getName();
    // initSync and start: wasm-bindgen's instantiation and its start hook (the panic hook),
    // run by every entry point on import; __bench*: benchmark probes, not API.
    if (name === 'default' || name === 'initSync' || name === 'start' || name.startsWith('__')) continue;
    for (const decl of target.getDeclarations() ?? []) {
      if (ts.isFunctionDeclaration(decl)) out.add(`${name}()`);
      // `export declare const ModelInput: { fromInts(…) }`: its members.
      if (ts.isVariableDeclaration(decl) && decl.type && ts.isTypeLiteralNode(decl.type)) {
        for (const m of decl.type.members) if (memberName(m)) out.add(`${name}.${memberName(m)}`);
      }
      if (ts.isClassDeclaration(decl)) {
        for (const m of decl.members) {
          if (ts.isConstructorDeclaration(m) || !isPublic(m)) continue;
          const mn = memberName(m);
          if (!mn || mn === 'free') continue; // wasm-bindgen's free(), tested with Symbol.dispose
          const isStatic = ts.getCombinedModifierFlags(m) & ts.ModifierFlags.Static;
          out.add(`${name}.${isStatic ? 'static ' : ''}${mn}`);
        }
      }
    }
  }
  // Members added to a class by interface merging (RestClient's list methods in extras.d.ts).
  for (const sym of checker.getExportsOfModule(checker.getSymbolAtLocation(file))) {
    const target = sym.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(sym) : sym;
    const decls = target.getDeclarations() ?? [];
    if (!decls.some(ts.isClassDeclaration)) continue;
    for (const decl of decls.filter(ts.isInterfaceDeclaration)) {
      for (const base of decl.heritageClauses?.flatMap((h) => h.types) ?? []) {
        const t = checker.getTypeAtLocation(base);
        for (const p of t.getProperties()) out.add(`${sym.getName()}.${p.getName()}`);
      }
    }
  }
  return [...out].sort();
}

/** The word a case's source must contain for `member` to count as called there. */
function needle(member) {
  const m = member.replace(/^[^.]*\.(static )?/, '').replace(/\(\)$/, '');
  if (m === '[Symbol.asyncIterator]') return 'for await';
  const sym = /^\[Symbol\.(\w+)\]$/.exec(m);
  return sym ? `Symbol.${sym[1]}` : m;
}

function main() {
  const surface = publicSurface();
  if (process.argv.includes('--list')) {
    console.log(surface.join('\n'));
    return;
  }
  const map = JSON.parse(readFileSync(path.join(root, 'tests/js/coverage.json'), 'utf8')).covered;
  const cases = new Map();
  for (const [suite, cs] of Object.entries(suites)) for (const [name, fn] of Object.entries(cs)) cases.set(`${suite}: ${name}`, fn.toString());
  const problems = [];
  for (const member of surface) {
    const where = map[member];
    if (!where) {
      problems.push(`${member}: no case calls it (add a case to tests/js/cases and name it in tests/js/coverage.json)`);
      continue;
    }
    for (const c of [where].flat()) {
      const src = cases.get(c);
      if (src === undefined) problems.push(`${member}: coverage.json names the case ${JSON.stringify(c)}, which does not exist`);
      else if (!src.includes(needle(member))) problems.push(`${member}: the case ${JSON.stringify(c)} never mentions ${needle(member)}`);
    }
  }
  for (const member of Object.keys(map)) if (!surface.includes(member)) problems.push(`${member}: listed in coverage.json but not exported any more`);
  // --accesses FILE (tests/js/access-recorder.mjs, written by the Node run of the cases): a
  // class member counts only if a named case really called or read it on an instance of
  // its class (or called the static on the class); exported functions keep the check above.
  const at = process.argv.indexOf('--accesses');
  if (at > 0) {
    const { instrumented, cases: used } = JSON.parse(readFileSync(process.argv[at + 1], 'utf8'));
    for (const member of surface) {
      if (!instrumented.includes(member) || !map[member]) continue;
      const names = [map[member]].flat();
      if (!names.some((c) => used[c]?.includes(member))) problems.push(`${member}: no case of ${JSON.stringify(names)} used it on an instance of its class (it only mentions ${needle(member)})`);
    }
  }
  if (problems.length) {
    console.log(`public surface coverage: ${problems.length} problem(s)\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  console.log(`public surface coverage: all ${surface.length} exported methods, getters and functions are called by a cross-runtime case${at > 0 ? ' (class members: used on an instance, as recorded in the Node run)' : ''}`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
