// What Node, Bun and Deno offer the core beyond fetch and timers: the environment, files
// and shell commands (src/wasm/host.rs, the platform seam's `Host`). The rules that use
// them (the credential chain, TINKER_* defaults, Cloudflare Access headers, telemetry)
// are the core's (crates/core/src/client/environment.rs), the same in every runtime.
// Each entry point that has them registers this once: `glue.__setHost(host)`. A lookup
// the runtime refuses (Deno without --allow-env / --allow-read) answers "none".
import * as fs from 'node:fs';
import * as os from 'node:os';
import { exec } from 'node:child_process';
import process from 'node:process';

/**
 * What `f` answers, or undefined if it throws (a permission refused, a file missing).
 * @param {() => string | undefined | null} f
 */
const quiet = (f) => {
  try {
    return f() ?? undefined;
  } catch {
    return undefined;
  }
};

// Deno asks before a first access it was not granted (a prompt in a terminal): only what
// its flags already grant is read, so importing the SDK never prompts.
const deno = /** @type {any} */ (globalThis).Deno;
/** @param {object} desc a Deno permission descriptor */
const granted = (desc) => !deno || deno.permissions?.querySync?.(desc)?.state === 'granted';

/** The answer of `run` (what the SDK reads of a fetch Response). */
const output = (/** @type {string} */ text) => ({ status: 200, headers: { forEach() {} }, bytes: async () => new TextEncoder().encode(text) });

export const host = {
  /**
   * An environment variable; HOME falls back to the user's home directory.
   * @param {string} name
   */
  env(name) {
    const v = granted({ name: 'env', variable: name }) ? quiet(() => process.env[name]) : undefined;
    if (v === undefined && name === 'HOME' && granted({ name: 'sys', kind: 'homedir' })) return quiet(() => os.homedir());
    return v;
  },
  /**
   * The file's text, or undefined when it does not exist or cannot be read.
   * @param {string} file
   */
  readTextFile: (file) => (granted({ name: 'read', path: file }) ? quiet(() => fs.readFileSync(file, 'utf8')) : undefined),
  /**
   * Runs `command` through the shell, with fetch's shape (the command in place of the
   * URL, its standard output as the body: the SDK runs it on its one-call request path).
   * Rejects when it cannot run, or exits non-zero having printed nothing.
   * @param {string} command
   * @returns {Promise<ReturnType<typeof output>>}
   */
  run: (command) =>
    new Promise((resolve, reject) => {
      if (!granted({ name: 'run' })) {
        reject(new Error('Deno needs --allow-run to run it'));
        return;
      }
      exec(command, { encoding: 'utf8', windowsHide: true, maxBuffer: 1 << 20 }, (err, stdout) => {
        if (err && !String(stdout ?? '').trim()) reject(new Error(String(err.message).split('\n')[0]));
        else resolve(output(String(stdout ?? '')));
      });
    }),
};
