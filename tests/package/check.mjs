// `make test-package`: pkg/ packed as `npm publish` would pack it, checked as a user receives
// it. Fails on the first check that does not hold; prints what each found.
//   node tests/package/check.mjs
//  1. npm pack: the tarball holds exactly the files the entry points reach (every export
//     condition and `types`, following static, dynamic and source imports, re-exports and
//     `new URL(…, import.meta.url)` assets; `.js` specifiers in `.d.ts` files are their
//     `.d.ts`), plus package.json, README.md and LICENSE: nothing missing, nothing else (no
//     tests/). Bare imports must be `node:` built-ins (the package has no dependencies).
//  2. LICENSE (here and at the repository root) is the Apache-2.0 text of the
//     spdx-license-list npm package, byte for byte; metadata names the license, repository,
//     homepage and bugs; the README is there.
//  3. publint (every level, warnings as errors), @arethetypeswrong/cli (profile esm-only: the
//     package is ESM only by choice, README "Runtimes"), `npm publish --dry-run`.
//  4. The tarball installed by npm into a fresh project: the package README's two examples
//     run as written in Node, Bun and Deno (Deno with the README's command line's permissions) against
//     tinker-sim, and a wrangler-style bundle of both modules builds for workerd.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSim } from '../js/sim.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const work = path.join(root, 'target/package');
const bin = (name) => path.join(root, 'node_modules/.bin', name);
let failed = 0;
const ok = (name, detail = '') => console.log(`ok - package: ${name}${detail ? ` (${detail})` : ''}`);
const notOk = (name, detail) => {
  failed++;
  console.log(`not ok - package: ${name}\n  ${String(detail).trim().replace(/\n/g, '\n  ')}`);
};
const check = (name, fn) => {
  try {
    const detail = fn();
    ok(name, detail);
  } catch (e) {
    notOk(name, e?.message ?? e);
  }
};

rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

// ---------------------------------------------------------------------------------------
// 1. The tarball and its file list
const [packed] = JSON.parse(execFileSync('npm', ['pack', path.join(root, 'pkg'), '--json', '--pack-destination', work], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }));
const tarball = path.join(work, packed.filename);
const unpacked = path.join(work, 'unpacked');
mkdirSync(unpacked);
execFileSync('tar', ['xzf', tarball, '-C', unpacked, '--strip-components=1']);
const files = new Set(packed.files.map((f) => f.path));
const manifest = JSON.parse(readFileSync(path.join(unpacked, 'package.json'), 'utf8'));
console.log(`# ${packed.filename}: ${files.size} files, ${packed.size.toLocaleString('en')} B packed, ${packed.unpackedSize.toLocaleString('en')} B unpacked`);

/** Every file an entry point reaches, by the specifiers written in the files. */
function reachable(entries) {
  const seen = new Map(); // file → the file that reached it
  const problems = [];
  const stripComments = (src) => {
    // Drops // and /* */ comments outside string and template literals (enough for this
    // package's hand-written and wasm-bindgen-generated files).
    let out = '';
    for (let i = 0; i < src.length; ) {
      const c = src[i];
      if (c === '"' || c === "'" || c === '`') {
        let j = i + 1;
        while (j < src.length && src[j] !== c) j += src[j] === '\\' ? 2 : 1;
        out += src.slice(i, j + 1);
        i = j + 1;
      } else if (c === '/' && src[i + 1] === '/') {
        while (i < src.length && src[i] !== '\n') i++;
      } else if (c === '/' && src[i + 1] === '*') {
        const end = src.indexOf('*/', i + 2);
        i = end < 0 ? src.length : end + 2;
      } else {
        out += c;
        i++;
      }
    }
    return out;
  };
  const specifiers = (src) => {
    const s = stripComments(src);
    const out = [];
    for (const re of [
      /\b(?:import|export)\b[^'"`;]*?\bfrom\s*(['"])([^'"]+)\1/g, // import … from '…', export … from '…', import source … from '…'
      /\bimport\s*(['"])([^'"]+)\1/g, // import '…'
      /\bimport(?:\.source)?\s*\(\s*(['"])([^'"]+)\1\s*\)/g, // import('…'), import.source('…'), import('…') types
      /\bdeclare\s+module\s+(['"])([^'"]+)\1/g, // module augmentation in .d.ts
    ]) {
      for (const m of s.matchAll(re)) out.push(m[2]);
    }
    // Assets: `new URL('x.wasm', import.meta.url)` is relative to the file without './' too.
    for (const m of s.matchAll(/\bnew\s+URL\s*\(\s*(['"])([^'"]+)\1\s*,\s*import\.meta\.url\s*\)/g)) {
      out.push(/^(\.{0,2}\/|[a-z][a-z0-9+.-]*:)/i.test(m[2]) ? m[2] : `./${m[2]}`);
    }
    return out;
  };
  const visit = (file, from) => {
    if (seen.has(file)) return;
    seen.set(file, from);
    const abs = path.join(unpacked, file);
    if (!existsSync(abs)) return problems.push(`${file} (reached from ${from}) is not in the tarball`);
    if (!/\.(m?js|d\.ts)$/.test(file)) return;
    for (const spec of specifiers(readFileSync(abs, 'utf8'))) {
      if (spec.startsWith('node:')) continue;
      if (!spec.startsWith('./') && !spec.startsWith('../')) {
        problems.push(`${file} imports ${spec}: only relative and node: imports are allowed (the package has no dependencies)`);
        continue;
      }
      let target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
      if (file.endsWith('.d.ts') && target.endsWith('.js')) target = target.replace(/\.js$/, '.d.ts');
      if (target.startsWith('..')) problems.push(`${file} imports ${spec}, outside the package`);
      else visit(target, file);
    }
  };
  for (const [entry, from] of entries) visit(entry.replace(/^\.\//, ''), from);
  return { seen, problems };
}

const entries = [];
const walkExports = (value, where) => {
  if (typeof value === 'string') entries.push([value, where]);
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walkExports(v, `${where}.${k}`);
};
walkExports(manifest.exports, 'exports');
for (const field of ['main', 'types', 'module', 'browser']) if (typeof manifest[field] === 'string') entries.push([manifest[field], field]);
// The command line (`bin`, issue 22) is an entry point too.
for (const [name, file] of Object.entries(typeof manifest.bin === 'string' ? { [manifest.name]: manifest.bin } : manifest.bin ?? {})) entries.push([file, `bin.${name}`]);
const { seen, problems } = reachable(entries);
const always = ['package.json', 'README.md', 'LICENSE'];
check('every file the entry points import is in the tarball', () => {
  if (problems.length) throw new Error(problems.join('\n'));
  return `${seen.size} files reached from ${entries.length} entry points`;
});
check('the tarball holds nothing else (no tests/, no stray files)', () => {
  const extra = [...files].filter((f) => !seen.has(f) && !always.includes(f));
  const absent = always.filter((f) => !files.has(f));
  if (extra.length || absent.length) throw new Error([...extra.map((f) => `${f}: in the tarball, reached by no entry point`), ...absent.map((f) => `${f}: missing`)].join('\n'));
  return `${files.size} files: ${[...files].sort().join(' ')}`;
});

// ---------------------------------------------------------------------------------------
// 2. License, metadata, README
check('LICENSE is the Apache-2.0 text from the spdx-license-list npm package', () => {
  const spdx = JSON.parse(readFileSync(path.join(root, 'node_modules/spdx-license-list/licenses/Apache-2.0.json'), 'utf8')).licenseText;
  const want = spdx.endsWith('\n') ? spdx : `${spdx}\n`;
  for (const f of [path.join(unpacked, 'LICENSE'), path.join(root, 'LICENSE')]) {
    if (readFileSync(f, 'utf8') !== want) throw new Error(`${path.relative(root, f)} differs from spdx-license-list's Apache-2.0 text`);
  }
  return `spdx-license-list ${JSON.parse(readFileSync(path.join(root, 'node_modules/spdx-license-list/package.json'), 'utf8')).version}`;
});
check('metadata: license, repository, homepage, bugs, description, engines', () => {
  const missing = ['name', 'version', 'description', 'license', 'repository', 'homepage', 'bugs', 'engines', 'keywords'].filter((k) => !manifest[k]);
  if (missing.length) throw new Error(`package.json lacks ${missing.join(', ')}`);
  if (manifest.license !== 'Apache-2.0') throw new Error(`license is ${manifest.license}`);
  return `${manifest.repository.url ?? manifest.repository}`;
});
check('the package README is there, with an install line and the start examples', () => {
  const readme = readFileSync(path.join(unpacked, 'README.md'), 'utf8');
  if (!/npm install tinker-wasm/.test(readme)) throw new Error('README.md has no install line');
  if (readmeBlocks(readme).length < 2) throw new Error('README.md has fewer than two js examples');
  return `${readme.length.toLocaleString('en')} characters`;
});

// ---------------------------------------------------------------------------------------
// 3. publint, attw, npm publish --dry-run
const tool = (cmd, args, opts = {}) => spawnSync(cmd, args, { encoding: 'utf8', cwd: work, ...opts });
check('publint: no error, warning or suggestion', () => {
  const r = tool(bin('publint'), ['run', tarball, '--level', 'suggestion', '--strict']);
  const out = `${r.stdout}${r.stderr}`;
  if (r.status !== 0 || !/All good!/.test(out)) throw new Error(out);
  return out.trim().split('\n').at(-1);
});
check('@arethetypeswrong/cli: no problem (profile esm-only)', () => {
  const r = tool(bin('attw'), [tarball, '--profile', 'esm-only', '--format', 'table', '--no-emoji', '--no-color']);
  if (r.status !== 0) throw new Error(`${r.stdout}${r.stderr}`);
  console.log(`${r.stdout}`.trim().replace(/^/gm, '# '));
  return 'exit 0';
});
check('npm publish --dry-run: clean', () => {
  const r = tool('npm', ['publish', '--dry-run', path.join(root, 'pkg')]);
  // The one warning every machine without an npm login prints; anything else fails.
  const warnings = r.stderr.split('\n').filter((l) => /\bwarn\b/i.test(l) && !/requires you to be logged in .*\(dry-run\)/.test(l));
  if (r.status !== 0 || warnings.length) throw new Error(`exit ${r.status}\n${warnings.join('\n') || r.stderr}`);
  if (!r.stdout.includes(`${manifest.name}@${manifest.version}`)) throw new Error(r.stdout);
  return r.stdout.trim();
});

// ---------------------------------------------------------------------------------------
// 4. Installed from the tarball, as a user installs it
function readmeBlocks(readme) {
  return [...readme.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]);
}
const project = path.join(work, 'project');
mkdirSync(project);
writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'tinker-wasm-user', private: true, type: 'module' }, null, 2));
execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', tarball], { cwd: project, stdio: 'inherit' });
const installed = path.join(project, 'node_modules/tinker-wasm');
check('npm installs the tarball as a directory of exactly its files', () => {
  // A copy of the tarball's files, not a link back into the repository.
  if (lstatSync(installed).isSymbolicLink() || !statSync(installed).isDirectory()) throw new Error(`${installed} is not a directory of its own`);
  const got = readdirSync(installed, { recursive: true }).filter((f) => statSync(path.join(installed, f)).isFile()).sort();
  if (got.join('\n') !== [...files].sort().join('\n')) throw new Error(`installed files differ from the tarball's: ${got.join(' ')}`);
  return path.relative(root, installed);
});
const blocks = readmeBlocks(readFileSync(path.join(unpacked, 'README.md'), 'utf8'));
blocks.forEach((code, i) => writeFileSync(path.join(project, `readme-${i + 1}.mjs`), code));

function runIn(cmd, args, env) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: project, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    // A block that does not exit on its own (a leaked timer) fails.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: signal ?? code, out });
    });
  });
}
const runtimes = {
  node: (file) => [process.execPath, [file]],
  bun: (file) => [bin('bun'), [file]],
  // The permissions the README's Deno command line gives (the simulator's host as the API
  // host): no read permission, since importing needs none.
  deno: (file) => [bin('deno'), ['run', '--no-prompt', '--allow-net=127.0.0.1', '--allow-env=TINKER_API_KEY,TINKER_BASE_URL,TINKER_PROJECT_ID,TINKER_TAGS', file]],
};
const sim = await startSim(['--seed', '11']);
try {
  for (const [runtime, command] of Object.entries(runtimes)) {
    for (let i = 0; i < blocks.length; i++) {
      const [cmd, args] = command(`readme-${i + 1}.mjs`);
      const t0 = Date.now();
      const r = await runIn(cmd, args, { TINKER_API_KEY: 'tml-package-check', TINKER_BASE_URL: sim.url });
      const name = `README example ${i + 1} runs as written in ${runtime}, from the installed tarball`;
      if (r.code === 0 && /\d/.test(r.out)) ok(name, `${Date.now() - t0} ms`);
      else notOk(name, `exit ${r.code}\n${r.out.trim().split('\n').slice(-15).join('\n')}`);
    }
  }
} finally {
  await sim.stop();
}

// A Workers bundle of each module, as wrangler makes it: esbuild with the workerd
// conditions, the wasm imports left as modules.
const esbuild = await import('esbuild');
for (const sub of ['', '/lite']) {
  const name = `tinker-wasm${sub} bundles for workerd from the installed tarball`;
  try {
    const entry = path.join(project, `worker${sub.replace('/', '-')}.mjs`);
    writeFileSync(entry, `import { version, ServiceClient } from 'tinker-wasm${sub}';\nexport default { fetch: () => new Response(version() + typeof ServiceClient) };\n`);
    const wasm = [];
    const r = await esbuild.build({
      entryPoints: [entry],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'neutral',
      conditions: ['workerd', 'worker', 'browser'],
      mainFields: ['module', 'main'],
      logLevel: 'silent',
      plugins: [{ name: 'wasm', setup: (b) => b.onResolve({ filter: /\.wasm$/ }, (a) => (wasm.push(path.relative(installed, path.resolve(a.resolveDir, a.path))), { path: a.path, external: true })) }],
    });
    ok(name, `${r.outputFiles[0].contents.length.toLocaleString('en')} B of JS; wasm modules: ${wasm.join(', ')}`);
  } catch (e) {
    notOk(name, e.message);
  }
}

console.log(`# package: ${failed ? `${failed} check(s) failed` : 'all checks passed'}`);
process.exit(failed ? 1 : 0);
