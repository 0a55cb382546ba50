// The playground's entry: configuration, the connection form, the panels, keyboard
// shortcuts. Served as plain ES modules; `tinker-wasm` comes from the import map.
import { version } from 'tinker-wasm/cookbook';
import { $, setupTabs, showError } from './ui.js';
import { Activity } from './activity.js';
import { Connection } from './connection.js';
import { installTokenInspector } from './render.js';
import { samplePanel } from './sample.js';
import { tokensPanel } from './tokens.js';
import { finetunePanel } from './finetune.js';
import { rlPanel } from './rl.js';
import { loadTokenizerIndex, setTokenizerBase } from './tokenizers.js';

const app = {
  conn: null,
  bus: new EventTarget(),
  activity: new Activity($('#ops'), $('#net')),
  panelOps: new Map(),
  config: {},
};
window.playground = app; // for the console (and tests that read state)

app.selectTab = setupTabs($('.tabs'));
app.sample = samplePanel(app);
app.tokens = tokensPanel(app);
app.finetune = finetunePanel(app);
app.rl = rlPanel(app);
installTokenInspector(document.body, $('#tooltip'));

/** The Sample panel's sampling parameters (shared by the fine-tune "try it" box). */
app.samplingParams = () => {
  const el = app.sample.el;
  const n = (x, d) => (x.value.trim() === '' ? d : Number(x.value));
  const samplingParams = { max_tokens: n(el.maxTokens, 48), temperature: n(el.temperature, 1), top_k: n(el.topK, -1), top_p: n(el.topP, 1) };
  if (el.seed.value.trim()) samplingParams.seed = Number(el.seed.value);
  return { samplingParams, numSamples: n(el.n, 1), stop: null, alternatives: n(el.alts, 0) };
};

const pill = $('#conn-pill');
const connForm = $('#conn-form');
const connDetail = $('#conn-detail');
const connError = $('#conn-error');

function setPill(state, text) {
  pill.dataset.state = state;
  pill.textContent = text;
}

const connMode = () => connForm.querySelector('input[name="mode"]:checked').value;

function showMode() {
  for (const row of connForm.querySelectorAll('[data-mode]')) row.hidden = row.dataset.mode !== connMode();
}

let refreshing = null;
/** Reloads the model lists (base models and checkpoints) into every picker. */
app.refreshModels = async () => {
  if (!app.conn) return;
  const conn = app.conn;
  refreshing ??= conn.listModels().finally(() => {
    refreshing = null;
  });
  try {
    const [models] = await Promise.all([refreshing, loadTokenizerIndex()]);
    if (conn !== app.conn) return;
    app.models = models;
    app.sample.setModels(models);
    app.finetune.setModels(models);
    app.rl.setModels(models);
    document.body.dataset.models = String(models.base.length + models.samplers.length);
  } catch (e) {
    showError($('#sample-error'), e);
  }
};

async function connect() {
  showError(connError, null);
  const mode = connMode();
  const baseURL = (mode === 'relay' ? $('#relay-url') : $('#direct-url')).value.trim();
  if (!baseURL) {
    showError(connError, Object.assign(new TypeError(`enter the ${mode === 'relay' ? 'relay' : 'base'} URL`), { field: 'baseURL' }));
    return;
  }
  for (const o of app.activity.ops) o.cancel();
  const old = app.conn;
  app.conn = null;
  app.sample.busy(false);
  app.finetune.busy(false);
  app.rl.busy(false);
  if (old) old.close();
  setPill('connecting', 'Connecting…');
  connDetail.textContent = '';
  document.body.dataset.connected = 'false';
  let conn;
  try {
    conn = new Connection({
      mode,
      baseURL,
      apiKey: $('#direct-key').value.trim(),
      acknowledged: $('#direct-ack').checked,
      onNetwork: (ev) => app.activity.onNetwork(ev),
    });
    const status = mode === 'relay' ? await conn.relayStatus() : null;
    const caps = await conn.svc.getServerCapabilities();
    app.conn = conn;
    const where = mode === 'relay' ? `relay ${new URL(baseURL).host}` : new URL(baseURL).host;
    setPill('connected', `Connected · ${where}`);
    connDetail.textContent = mode === 'relay'
      ? `Relay OK (its SDK ${status.sdkVersion}, body limit ${Math.round(status.maxBodyBytes / 1024)} KiB) · ${caps.supported_models.length} models · page SDK ${version()}`
      : `${caps.supported_models.length} models · SDK ${version()} · the API key is in this page`;
    document.body.dataset.connected = 'true';
    document.body.dataset.mode = mode;
    app.sample.busy(false);
    app.finetune.busy(false);
    app.rl.busy(false);
    await app.refreshModels();
    $('#connection').open = false;
  } catch (e) {
    conn?.close();
    setPill('error', 'Not connected');
    showError(connError, e);
  }
}

connForm.addEventListener('submit', (e) => {
  e.preventDefault();
  connect();
});
for (const r of connForm.querySelectorAll('input[name="mode"]')) r.addEventListener('change', showMode);

// Escape cancels the visible panel's running operation.
document.addEventListener('keydown', (e) => {
  if (e.key !== 'Escape' || e.defaultPrevented) return;
  const panel = document.querySelector('[role="tabpanel"]:not([hidden])');
  const op = panel && app.panelOps.get(panel.id);
  if (op?.active) {
    op.cancel();
    e.preventDefault();
  }
});

window.addEventListener('pagehide', () => app.conn?.close());

/** Configuration: /playground-config.json if the site has one, then ?relay= / ?direct=. */
async function loadConfig() {
  let config = {};
  try {
    const r = await fetch('playground-config.json', { cache: 'no-store' });
    if (r.ok) config = await r.json();
  } catch {
    // No config file: a static deployment configures through the form or the URL.
  }
  const q = new URLSearchParams(location.search);
  if (q.get('relay')) Object.assign(config, { mode: 'relay', relayURL: q.get('relay') });
  if (q.get('direct')) Object.assign(config, { mode: 'direct', simURL: q.get('direct') });
  if (q.get('model')) config.defaultModel = q.get('model');
  return config;
}

const config = await loadConfig();
app.config = config;
if (config.tokenizers) {
  setTokenizerBase(config.tokenizers);
  app.tokens.update();
}
if (config.relayURL) $('#relay-url').value = config.relayURL;
if (config.simURL) $('#direct-url').value = config.simURL;
if (config.mode) connForm.querySelector(`input[name="mode"][value="${config.mode}"]`).checked = true;
if (config.simulator) app.finetune.setDefaults(config.finetune ?? {});
showMode();
fetch('examples/pirate.jsonl').then((r) => (r.ok ? r.text() : '')).then((t) => app.finetune.setExampleSet(t.trim()), () => {});
void app.finetune.restoreLastRun();
document.body.dataset.ready = 'true';
if (config.mode === 'relay' && config.relayURL && q('autoconnect') !== '0') connect();

function q(name) {
  return new URLSearchParams(location.search).get(name);
}
