// Starts a fresh tinker-sim (the local Tinker simulator, built by `cargo build -p
// tinker-sim`) on a free loopback port and returns its URL.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const simBinary = path.join(root, 'target/debug/tinker-sim');

/** Starts `tinker-sim --port 0 …args`; resolves to `{ url, stop, child }` once it listens. */
export function startSim(args = []) {
  if (!existsSync(simBinary)) throw new Error(`${simBinary} is missing: run \`cargo build -p tinker-sim\` first`);
  const child = spawn(simBinary, ['--port', '0', ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  // Never outlive the test process, however it ends.
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.once('exit', () => process.off('exit', kill));
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (chunk) => {
      buf += chunk;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const m = /^tinker-sim listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(buf.slice(0, nl).trim());
      child.stdout.off('data', onData);
      child.stdout.resume();
      if (!m) return reject(new Error(`unexpected first line from tinker-sim: ${buf.slice(0, nl)}`));
      const stop = () =>
        new Promise((r) => {
          if (child.exitCode !== null) return r();
          child.once('exit', () => r());
          child.kill('SIGTERM');
        });
      resolve({ url: m[1], stop, child });
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`tinker-sim exited early with ${code}`)));
  });
}
