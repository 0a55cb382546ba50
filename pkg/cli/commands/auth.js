// `tinker-wasm auth login|logout|status|whoami` (Python: tinker/cli/commands/auth.py). The
// credentials file is Python's (~/.tinker/credentials.json, same format), so a login with
// either CLI serves both SDKs. Keys are never printed.
import * as os from 'node:os';
import * as api from '../api.js';
import { dump, WhoamiResponse } from '../models.js';
import { printOutput, formatOptional } from '../output.js';
import { CliError } from '../errors.js';
import { readLine } from './checkpoint.js';

const CONSOLE = 'https://tinker.thinkingmachines.ai';
/** An OSC-8 hyperlink, as Python's CLI writes it. */
const link = (url) => `\x1b]8;;${url}\x1b\\${url}\x1b]8;;\x1b\\`;
const deletionHint = (url, org) => `API key organization: ${org}\nDelete api key here: ${link(url)}`;
const apiKeyUrl = (id) => `${CONSOLE}/keys/${encodeURIComponent(id)}`;

/** Reads the key: masked on a terminal, a plain line otherwise (Python's prompt_api_key). */
async function promptKey() {
  const stdin = process.stdin;
  if (!stdin.isTTY) {
    // Python's getpass without a terminal: the prompt and a line break on stderr,
    // nothing on stdout.
    process.stderr.write('Paste your API key: ');
    const line = await readLine();
    process.stderr.write('\n');
    if (line === null) throw new CliError('Aborted!', null, 1);
    return line;
  }
  process.stdout.write('Paste your API key: ');
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  const key = [];
  try {
    return await new Promise((resolve, reject) => {
      const onData = (s) => {
        if (s.startsWith('\x1b')) return;
        for (const ch of s) {
          if (ch === '\r' || ch === '\n') return finish(() => resolve(key.join('')));
          if (ch === '\b' || ch === '\x7f') {
            if (key.length) {
              key.pop();
              process.stdout.write('\b \b');
            }
          } else if (ch === '\x03' || ch === '\x04') return finish(() => reject(new CliError('Aborted!', null, 1)));
          else if (ch >= ' ') {
            key.push(ch);
            process.stdout.write('*');
          }
        }
      };
      const finish = (f) => {
        stdin.off('data', onData);
        f();
      };
      stdin.on('data', onData);
    });
  } finally {
    stdin.setRawMode(false);
    stdin.pause();
    process.stdout.write('\n');
  }
}

export async function login() {
  const { readCredentials, writeCredentials } = await import('../../node-credentials.js');
  const store = readCredentials();
  if (store.default != null && store.keys[store.default]) throw new CliError('Already logged in', "Run 'tinker-wasm auth logout' before logging in again.");
  const host = (os.hostname().split('.')[0] || '').trim() || 'unknown';
  const url = `${CONSOLE}/keys?new_key=true&key_name=${encodeURIComponent(`tinker-cli-${host}`).replace(/%20/g, '+')}`;
  process.stdout.write(`Create an API Key: ${link(url)}\n\n`);
  const key = (await promptKey()).trim();
  if (!key) throw new CliError('The API key must not be empty');
  let info;
  try {
    info = await api.selfApiKey('GET', key);
  } catch (e) {
    if (e instanceof api.AuthApiError) throw new CliError('Could not validate the API key', e.message);
    throw e;
  }
  const keyId = String(info.key_id);
  /** @type {import('../../node-credentials.js').StoredCredential} */
  const record = { type: 'manual', key, name: info.name, note: info.note, details: info.details };
  const fresh = readCredentials();
  fresh.keys[keyId] = record;
  fresh.default = keyId;
  writeCredentials(fresh);
  process.stdout.write(`Logged in as ${info.details?.user_details?.email} (${info.details?.org_details?.name}). Stored API key '${info.name}' as the default credential.\n`);
}

export async function logout() {
  const { readCredentials, writeCredentials } = await import('../../node-credentials.js');
  const store = readCredentials();
  const keyId = store.default;
  const record = keyId != null ? store.keys[keyId] : null;
  if (keyId == null || !record) throw new CliError('No default credential is stored', "There is nothing to log out from. Run 'tinker-wasm auth login' to log in.");
  const organization = record.details ? record.details.org_details.name : 'unknown (not stored with this credential)';
  const generated = record.type === 'generated';
  let deleteError = null;
  if (generated) {
    try {
      await api.selfApiKey('DELETE', record.key);
    } catch (e) {
      if (!(e instanceof api.AuthApiError)) throw e;
      deleteError = e;
    }
  }
  delete store.keys[keyId];
  store.default = null;
  writeCredentials(store);
  if (deleteError) {
    throw new CliError('Could not delete the API key on the server', `Removed the local credential.\nAPI key name: ${record.name}\nAPI key ID: ${keyId}\n${deletionHint(apiKeyUrl(keyId), organization)}`);
  }
  if (generated) process.stdout.write(`Removed credential '${record.name}' and deleted its API key on the server.\n`);
  else process.stdout.write(`Removed credential '${record.name}'. The API key is still active.\n${deletionHint(apiKeyUrl(keyId), organization)}\n`);
}

export async function status() {
  const has = await api.hasCredentials();
  process.stdout.write(`Credentials available: ${has ? 'yes' : 'no'}\n`);
  if (!has) throw new CliError('No Tinker credentials are available', "Run 'tinker-wasm auth login' or configure a Tinker credential.");
  try {
    await api.checkAccessible();
  } catch (e) {
    process.stdout.write('Tinker accessible: no\n');
    throw e;
  }
  process.stdout.write('Tinker accessible: yes\n');
}

export async function whoami(ctx) {
  const who = dump(WhoamiResponse, await api.whoami());
  printOutput(
    {
      toDict: () => who,
      title: () => null,
      columns: () => ['Property', 'Value'],
      rows: () => [['Email', formatOptional(who.email)], ['User', who.user_urn], ['Organization', who.org_urn]],
    },
    ctx.format,
  );
}
