#!/usr/bin/env node
// tinker-wasm: the command line of the tinker-wasm package, the same commands, options,
// arguments, JSON and exit codes as the Python SDK's `tinker` CLI (tinker 0.38.0).
// This file only knows the command tree and its help; a command's code (./commands/*.js)
// and the SDK (./api.js → tinker-wasm/lite) load when that command runs, so `--help`,
// `version` and usage errors start without any wasm.
import { parseCommand, helpText, usage, UsageError, HelpRequested, HELP_OPTION } from './args.js';
import { handleError } from './errors.js';

const PROG = 'tinker-wasm';
const PATH_HINT = 'tinker://run-id/weights/0001';

/** @type {import('./args.js').CommandSpec} */
const tree = {
  name: PROG,
  summary: '',
  help:
    'Tinker management CLI.\n\n' +
    '(tinker-wasm: the Python SDK\'s `tinker` CLI on the tinker-wasm package; `checkpoint push-hf` is left out, as it needs the Hugging Face Hub: use the Python CLI for it.)',
  options: [
    { names: ['-f', '--format'], dest: 'format', type: 'choice', choices: ['table', 'json'], default: 'table', help: 'Output format (default: table)' },
    { names: ['--debug'], dest: 'debug', type: 'flag', help: 'Show stack traces of unexpected errors (also TINKER_DEBUG=1).' },
  ],
  commands: {
    auth: {
      name: 'auth',
      summary: 'Manage authentication credentials.',
      help: 'Manage authentication credentials.',
      commands: {
        login: { name: 'login', summary: 'Initiate authentication flow to store credentials for...', help: 'Initiate authentication flow to store credentials for Tinker SDK.', run: 'auth:login' },
        logout: { name: 'logout', summary: 'Clear stored Tinker credentials.', help: 'Clear stored Tinker credentials.', run: 'auth:logout' },
        status: { name: 'status', summary: 'Check local credential availability and live access...', help: 'Check local credential availability and live access to Tinker.', run: 'auth:status' },
        whoami: { name: 'whoami', summary: 'Show the user and organization of the active credential.', help: 'Show the user and organization of the active credential.', run: 'auth:whoami' },
      },
    },
    billing: {
      name: 'billing',
      summary: 'View billing usage.',
      help: 'View billing usage.',
      commands: {
        usage: {
          name: 'usage',
          summary: 'Show hourly billing usage for your organization.',
          help:
            'Show hourly billing usage for your organization.\n\n' +
            'STARTING_ON and ENDING_BEFORE are RFC 3339 timestamps aligned to UTC hour boundaries (e.g. 2026-07-13T00:00:00Z), at most 14 days apart. Returns one row per (hour x usage type x base model x session x user), annotated with the project the usage belongs to. Session user metadata comes as a separate per-session table (JSON output / --sessions-csv) to join on session_id. Quantities are raw tokens / gigabyte-hours. Token and storage rows include estimated gross USD usage cost before credits and commits, plus the applicable effective rate per million tokens or per GB-month. These are not invoice amounts due. Table output renders an unavailable applicable cost or rate as `null`; CSV uses blank cells, while JSON uses null.\n\n' +
            'There are no filter flags: export the window once and filter the CSV/JSON client-side.\n\n' +
            'Requires billing view access in your organization.',
          args: [{ name: 'starting_on' }, { name: 'ending_before' }],
          options: [
            { names: ['--csv'], dest: 'csv', metavar: 'PATH', help: "Write usage rows as CSV to PATH instead of table/JSON output ('-' for stdout)" },
            { names: ['--sessions-csv'], dest: 'sessionsCsv', metavar: 'PATH', help: "Also write the per-session side-table (session_id + user_metadata) as CSV to PATH ('-' for stdout); join it against the usage rows on session_id" },
          ],
          run: 'billing:usage',
        },
        'checkpoint-storage': {
          name: 'checkpoint-storage',
          summary: 'Show current checkpoint storage and its projected run rate.',
          help:
            'Show current checkpoint storage and its projected run rate.\n\n' +
            'With no arguments, returns checkpoint storage usage for the entire authenticated organization, grouped by project and session owner. Use --project-id to limit results to one project within that organization. Checkpoint usage data can lag by 1-2 hours. Monthly costs are gross 720-hour projections using current publicly available rates, before credits and commits; they are not invoice amounts due.',
          options: [
            { names: ['--project-id'], dest: 'projectId', help: 'Only show storage in this project' },
            { names: ['--csv'], dest: 'csv', metavar: 'PATH', help: "Write storage rows as CSV to PATH instead of table/JSON output ('-' for stdout)" },
          ],
          run: 'billing:checkpointStorage',
        },
      },
    },
    checkpoint: {
      name: 'checkpoint',
      summary: 'Manage checkpoints.',
      help: 'Manage checkpoints.',
      epilog: '`push-hf` (upload to the Hugging Face Hub) is not part of tinker-wasm: use the Python CLI (`pip install tinker huggingface_hub`, then `tinker checkpoint push-hf`).',
      commands: {
        delete: {
          name: 'delete',
          summary: 'Delete one or more checkpoints permanently.',
          help:
            'Delete one or more checkpoints permanently.\n\n' +
            `\b\nDelete by explicit paths:\n\n    ${PROG} checkpoint delete tinker://run-id/weights/0001 tinker://run-id/weights/0002\n\nDelete all checkpoints for a training run:\n\n    ${PROG} checkpoint delete --run-id <run-id>\n\nDelete with filters:\n\n    ${PROG} checkpoint delete --run-id <run-id> --type weights --before 2024-06-01\n\nDelete checkpoints in a date range:\n\n    ${PROG} checkpoint delete --run-id <run-id> --after 2024-01-01 --before 2024-02-01\n\n` +
            'Dates are interpreted as UTC. Only the owner of the training run can delete checkpoints.\n\n' +
            'WARNING: This action is permanent and cannot be undone.',
          args: [{ name: 'checkpoint_paths', nargs: -1, required: false }],
          options: [
            { names: ['--run-id'], dest: 'runId', help: 'Delete all checkpoints for a training run' },
            { names: ['--type'], dest: 'type', help: 'Filter by type: weights or sampler_weights' },
            { names: ['--before'], dest: 'before', help: 'Filter: created before date in UTC (ISO 8601, e.g. 2024-01-01, 2024-01-01T08:00:00Z)' },
            { names: ['--after'], dest: 'after', help: 'Filter: created after date in UTC (ISO 8601, e.g. 2024-01-01, 2024-01-01T08:00:00Z)' },
            { names: ['-y', '--yes'], dest: 'yes', type: 'flag', help: 'Skip confirmation prompt' },
          ],
          run: 'checkpoint:delete',
        },
        download: {
          name: 'download',
          summary: 'Download a training or external weights checkpoint.',
          help:
            'Download a training or external weights checkpoint.\n\n' +
            'CHECKPOINT_PATH must be a training checkpoint path (e.g., tinker://run-id/weights/final, from TrainingClient.saveState()) or an external weights path (e.g., tinker://run-id/external_weights/final, from TrainingClient.saveWeightsExternal()). A training checkpoint is exported through a temporary external weights checkpoint, which starts a training session on its base model; the export is deleted after the download.\n\n' +
            'Downloads the checkpoint files into a dedicated directory named after the checkpoint ID. Files of an age-encrypted checkpoint keep their .age suffix; decrypt them with `age -d`. If the target directory already exists, the command will fail unless --force is specified. A failed or interrupted download leaves no directory behind.\n\n' +
            `\b\nExamples:\n\n    # Creates ./run-123_weights_final/ with checkpoint files\n    ${PROG} checkpoint download tinker://run-123/weights/final\n\n    # Creates ./models/run-123_external_weights_final/ with checkpoint files\n    ${PROG} checkpoint download tinker://run-123/external_weights/final --output ./models/\n\n    # Overwrites existing ./run-123_weights_final/ directory\n    ${PROG} checkpoint download tinker://run-123/weights/final --force`,
          args: [{ name: 'checkpoint_path' }],
          options: [
            { names: ['-o', '--output'], dest: 'output', type: 'path', help: 'Parent directory for extracted checkpoint (default: current directory)' },
            { names: ['--force'], dest: 'force', type: 'flag', help: 'Overwrite existing directory if it exists' },
          ],
          run: 'checkpoint:download',
        },
        info: {
          name: 'info',
          summary: 'Show details of a specific checkpoint.',
          help: 'Show details of a specific checkpoint.\n\n' + `CHECKPOINT_PATH must be a tinker path (e.g., ${PATH_HINT}).`,
          args: [{ name: 'checkpoint_path' }],
          run: 'checkpoint:info',
        },
        list: {
          name: 'list',
          summary: 'List checkpoints.',
          help: 'List checkpoints.\n\nIf --run-id is provided, list checkpoints for that specific training run. Otherwise, list checkpoints from all recent runs.',
          options: [
            { names: ['--run-id'], dest: 'runId', help: 'Training run ID' },
            { names: ['--limit'], dest: 'limit', type: 'int', default: 20, help: 'Maximum number of checkpoints to display when listing from all runs (default: 20, use --limit=0 to show all)' },
          ],
          run: 'checkpoint:list',
        },
        publish: {
          name: 'publish',
          summary: 'Publish a checkpoint to make it publicly accessible.',
          help: 'Publish a checkpoint to make it publicly accessible.\n\n' + `CHECKPOINT_PATH must be a tinker path (e.g., ${PATH_HINT}). Only the owner of the training run can publish checkpoints.`,
          args: [{ name: 'checkpoint_path' }],
          run: 'checkpoint:publish',
        },
        'set-ttl': {
          name: 'set-ttl',
          summary: 'Set or remove the TTL (time-to-live) on a checkpoint.',
          help:
            'Set or remove the TTL (time-to-live) on a checkpoint.\n\n' +
            `CHECKPOINT_PATH must be a tinker path (e.g., ${PATH_HINT}). Only the owner of the training run can modify checkpoint TTL.\n\n` +
            'Use --ttl to set an expiration (in seconds from now), or --remove to clear it.',
          args: [{ name: 'checkpoint_path' }],
          options: [
            { names: ['--ttl'], dest: 'ttl', type: 'int', help: 'TTL in seconds (1 hour to 10 years)' },
            { names: ['--remove'], dest: 'remove', type: 'flag', help: 'Remove the expiration from the checkpoint' },
          ],
          run: 'checkpoint:setTtl',
        },
        unpublish: {
          name: 'unpublish',
          summary: 'Unpublish a checkpoint to make it private again.',
          help: 'Unpublish a checkpoint to make it private again.\n\n' + `CHECKPOINT_PATH must be a tinker path (e.g., ${PATH_HINT}). Only the owner of the training run can unpublish checkpoints.`,
          args: [{ name: 'checkpoint_path' }],
          run: 'checkpoint:unpublish',
        },
      },
    },
    model: {
      name: 'model',
      summary: 'List available models.',
      help: 'List available models.',
      commands: {
        list: {
          name: 'list',
          summary: 'List the models your organization can use.',
          help: 'List the models your organization can use.\n\nSUBSTRING keeps only the models whose name contains it, ignoring case. Pass the name in the Model column as base_model.',
          args: [{ name: 'substring', required: false }],
          run: 'model:list',
        },
      },
    },
    run: {
      name: 'run',
      summary: 'Manage training runs.',
      help: 'Manage training runs.',
      commands: {
        info: { name: 'info', summary: 'Show details of a specific run.', help: 'Show details of a specific run.', args: [{ name: 'run_id' }], run: 'run:info' },
        list: {
          name: 'list',
          summary: 'List all training runs.',
          help: 'List all training runs.',
          options: [
            { names: ['--limit'], dest: 'limit', type: 'int', default: 20, help: 'Maximum number of runs to fetch (default: 20, use --limit=0 to fetch all)' },
            {
              names: ['-c', '--columns'],
              dest: 'columns',
              help:
                'Columns to display (comma-separated). Available columns:\n  id: Training run ID\n  model: Base model name\n  owner: Model owner\n  lora: LoRA status and rank\n  updated: Last request time\n  status: Run status (OK or Failed)\n  checkpoint: Most recent training checkpoint ID\n  checkpoint_time: Time of last checkpoint\nDefault: id,model,lora,updated,status',
            },
          ],
          run: 'run:list',
        },
      },
    },
    session: {
      name: 'session',
      summary: 'Manage sessions.',
      help: 'Manage sessions.',
      commands: {
        'export-trace': {
          name: 'export-trace',
          summary: "Export a session's timeline as a Perfetto trace (.pftrace).",
          help:
            "Export a session's timeline as a Perfetto trace (.pftrace).\n\n" +
            "Builds a trace of the session's training and sampling requests on the server and downloads it. Open the resulting file in https://ui.perfetto.dev to view the timeline.\n\n" +
            `\b\nExamples:\n\n    # Creates ./<session-id>.pftrace\n    ${PROG} session export-trace <session-id>\n\n    # Custom output path\n    ${PROG} session export-trace <session-id> --output my-session.pftrace\n\n    # Just print the signed download URL (expires after about an hour)\n    ${PROG} session export-trace <session-id> --url-only`,
          args: [{ name: 'session_id' }],
          options: [
            { names: ['-o', '--output'], dest: 'output', type: 'path', help: 'Output file path (default: ./<session-id>.pftrace)' },
            { names: ['--url-only'], dest: 'urlOnly', type: 'flag', help: 'Print the signed download URL instead of downloading the trace' },
          ],
          run: 'session:exportTrace',
        },
      },
    },
    serve: {
      name: 'serve',
      summary: 'Serve the OpenAI API for Tinker models on a local port.',
      help:
        'Serve the OpenAI API for Tinker models on a local port.\n\n' +
        "POST /v1/chat/completions, POST /v1/completions and GET /v1/models, answered by tinker-wasm's OpenAI-compatible handler (openaiFetch): the prompt rendered by the model's recommended renderer (or --renderer), the answer parsed into content, reasoning_content and tool_calls, with real logprobs. `model` is a base model, a tinker://…/sampler_weights/… path or `base;path`. Point any OpenAI client at the printed base URL. Runs until Ctrl-C.\n\n" +
        '(tinker-wasm only: the Python CLI has no such command.)',
      options: [
        { names: ['--host'], dest: 'host', default: '127.0.0.1', help: 'Address to listen on (default: 127.0.0.1, this machine only)' },
        { names: ['--port'], dest: 'port', type: 'int', default: 8000, help: 'Port to listen on (default: 8000; 0 picks a free one)' },
        {
          names: ['--tokenizers'],
          dest: 'tokenizers',
          metavar: 'DIR|URL',
          help: 'Where the tokenizer files come from: a directory or a base URL holding <tokenizer id>/tokenizer.json and tokenizer_config.json (nothing is downloaded from a model hub)',
        },
        { names: ['--renderer'], dest: 'renderer', help: "Renderer for every model (default: each model's recommended one; a request's `renderer` field wins)" },
      ],
      run: 'serve:serve',
    },
    version: { name: 'version', summary: 'Show version information.', help: 'Show version information.', run: 'version:version' },
  },
};

/** The commands' code, loaded when one runs (literal specifiers, so bundlers and the package check see them). */
const COMMANDS = {
  auth: () => import('./commands/auth.js'),
  billing: () => import('./commands/billing.js'),
  checkpoint: () => import('./commands/checkpoint.js'),
  model: () => import('./commands/model.js'),
  run: () => import('./commands/run.js'),
  session: () => import('./commands/session.js'),
  serve: () => import('./commands/serve.js'),
  version: () => import('./commands/version.js'),
};

/** Splits the leading options of a group from its command: click's group parsing. */
function parseGroup(argv, path, spec) {
  const options = [...(spec.options ?? []), HELP_OPTION];
  const mine = [];
  let i = 0;
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('-') || a === '-') break;
    if (a === '--') {
      i++;
      break;
    }
    mine.push(a);
    const name = a.startsWith('--') ? a.split('=')[0] : a.slice(0, 2);
    const o = options.find((x) => x.names.includes(name));
    if (o && o.type !== 'flag' && !a.includes('=') && !(a.length > 2 && !a.startsWith('--')) && i + 1 < argv.length) mine.push(argv[++i]);
  }
  const { opts } = parseCommand(mine, path, { ...spec, args: [] });
  const name = argv[i];
  if (name === undefined) throw new HelpRequested(path, spec, 2);
  const sub = spec.commands?.[name];
  if (!sub || sub.hidden) throw new UsageError(`No such command '${name}'.`, path, spec);
  return { opts, sub, rest: argv.slice(i + 1) };
}

async function main(argv) {
  const debug = () => !!process.env.TINKER_DEBUG && process.env.TINKER_DEBUG !== '0';
  let ctx = { format: 'table', debug: debug() };
  try {
    const root = parseGroup(argv, [PROG], tree);
    ctx = { format: root.opts.format, debug: root.opts.debug || debug() };
    let spec = root.sub;
    let path = [PROG, spec.name];
    let rest = root.rest;
    while (spec.commands) {
      const g = parseGroup(rest, path, spec);
      spec = g.sub;
      path = [...path, spec.name];
      rest = g.rest;
    }
    const { opts, args } = parseCommand(rest, path, spec);
    const [file, fn] = /** @type {string} */ (spec.run).split(':');
    const mod = await COMMANDS[file]();
    const code = await mod[fn]({ ...ctx, path, spec }, opts, args);
    return typeof code === 'number' ? code : 0;
  } catch (e) {
    if (e instanceof HelpRequested) {
      process.stdout.write(helpText(e.path, e.spec));
      return e.code;
    }
    if (e instanceof UsageError) {
      if (e.bare) process.stderr.write(`Error: ${e.message}\n`);
      else process.stderr.write(`${usage(e.path, e.spec)}\nTry '${e.path.join(' ')} --help' for help.\n\nError: ${e.message}\n`);
      return 2;
    }
    return handleError(e, ctx);
  } finally {
    // Flush telemetry and stop timers of any client the command made.
    const api = await import('./api.js');
    await api.closeAll().catch(() => {});
  }
}

// Ctrl-C: commands that clean up (downloads) install their own handler first; otherwise
// exit as Python's CLI does on KeyboardInterrupt.
process.on('SIGINT', () => {
  if (process.listenerCount('SIGINT') === 1) process.exit(130);
});
// A closed stdout (`tinker-wasm run list | head -1`) ends quietly.
process.stdout.on('error', (e) => {
  if (e.code === 'EPIPE') process.exit(0);
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`Error: ${e?.message ?? e}\n`);
    process.exitCode = 1;
  },
);

