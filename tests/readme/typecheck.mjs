// README code blocks that cannot run as written (fragments, a Worker) are type-checked
// instead (issue 31, item 8): each ```js block marked
//   <!-- type-checked with: DECLARATIONS -->
// is written to tests/types/.readme/block-N.ts after its declarations (the fragment's free
// variables, typed with the package's own types) and checked by `tsc --strict` (implicit
// `any` allowed: the README's JavaScript has no annotations) against the package as
// published (tests/types resolves `tinker-wasm` through package.json "exports").
// Every ```js and ```sh block of the README must carry one of the markers
//   <!-- runs as written -->   (tests/readme/run.mjs runs it and checks its output)
//   <!-- type-checked with: … -->
//   <!-- not run: REASON -->   (what exercises it instead)
// so no block goes unchecked without saying why.
//   node tests/readme/typecheck.mjs
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { docFiles, lineAt, root } from './docs.mjs';

const unmarked = [];
const checked = [];
for (const { file, text } of docFiles()) {
  for (const m of text.matchAll(/(<!--([^\n]*?)-->\s*\n)?```(js|sh)\n([\s\S]*?)```\n/g)) {
    const marker = (m[2] ?? '').trim();
    if (/^runs as written( in (bun|deno|chromium|workerd))?$/.test(marker) || marker.startsWith('not run:')) continue;
    const typed = /^type-checked with:(.*)$/s.exec(marker);
    const at = `${file}:${lineAt(text, m.index)}`;
    if (typed && m[3] === 'js') checked.push({ at, declarations: typed[1].trim(), code: m[4] });
    else unmarked.push(`${at}: a \`\`\`${m[3]} block with no marker (runs as written [in RUNTIME], type-checked with: …, or not run: reason)`);
  }
}
if (unmarked.length) {
  console.log(`not ok - README and guide blocks: ${unmarked.length} without a marker\n  ${unmarked.join('\n  ')}`);
  process.exit(1);
}
if (checked.length === 0) throw new Error('no type-checked README blocks found');

const dir = path.join(root, 'tests/types/.readme');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const files = checked.map(({ at, declarations, code }, i) => {
  const name = `block-${i + 1}.ts`;
  writeFileSync(path.join(dir, name), `// ${at}\n${declarations}\n${code}\nexport {};\n`);
  return name;
});
const base = JSON.parse(readFileSync(path.join(root, 'tests/types/tsconfig.json'), 'utf8'));
writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...base.compilerOptions, noImplicitAny: false, noUnusedLocals: false }, files }, null, 1));
try {
  execFileSync(path.join(root, 'node_modules/.bin/tsc'), ['-p', path.join(dir, 'tsconfig.json')], { stdio: 'inherit' });
} catch {
  console.log(`not ok - README: the type-checked blocks (${files.join(', ')}) do not type-check against the package`);
  process.exit(1);
}
console.log(`ok - README and guides: ${checked.length} block(s) type-checked against the package (${checked.map((c) => c.at).join(', ')}); every other block runs as written or says why not`);
