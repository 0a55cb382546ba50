// A small click-style parser and help writer for the tinker-wasm CLI: the same grammar
// (options anywhere among the arguments, `--opt=value`, `-ovalue`, `--`), the same usage
// errors and exit code 2, and help pages laid out as click lays them out.

/**
 * @typedef {{ names: string[], dest: string, type?: 'str' | 'int' | 'flag' | 'choice' | 'path', choices?: string[], default?: unknown, help?: string, metavar?: string }} OptionSpec
 * @typedef {{ name: string, required?: boolean, nargs?: number }} ArgSpec
 * @typedef {{ name: string, summary: string, help: string, options?: OptionSpec[], args?: ArgSpec[], run?: string, commands?: Record<string, CommandSpec>, hidden?: boolean, epilog?: string }} CommandSpec
 */

/** A usage error: click prints the usage, a hint and the message, and exits 2. */
export class UsageError extends Error {
  /** @param {string} message @param {string[]} path @param {CommandSpec} spec */
  constructor(message, path, spec, bare = false) {
    super(message);
    this.path = path;
    this.spec = spec;
    /** click prints some errors (a missing option value) without the usage lines. */
    this.bare = bare;
  }
}

/** Help was asked for: print it and exit 0 (or 2 for a group without a command). */
export class HelpRequested extends Error {
  /** @param {string[]} path @param {CommandSpec} spec @param {number} code */
  constructor(path, spec, code = 0) {
    super('help');
    this.path = path;
    this.spec = spec;
    this.code = code;
  }
}

export const HELP_OPTION = { names: ['-h', '--help'], dest: 'help', type: 'flag', help: 'Show this message and exit.' };

const metavar = (o) => o.metavar ?? (o.type === 'int' ? 'INTEGER' : o.type === 'choice' ? `[${o.choices.join('|')}]` : o.type === 'path' ? 'PATH' : 'TEXT');
const argMeta = (a) => {
  const n = a.name.toUpperCase();
  if (a.nargs === -1) return a.required ? `${n}...` : `[${n}]...`;
  return a.required === false ? `[${n}]` : n;
};

/** The usage line: `Usage: tinker-wasm run info [OPTIONS] RUN_ID`. */
export function usage(path, spec) {
  const parts = [`Usage: ${path.join(' ')} [OPTIONS]`];
  if (spec.commands) parts.push('COMMAND [ARGS]...');
  for (const a of spec.args ?? []) parts.push(argMeta(a));
  return parts.join(' ');
}

/** Wraps `text` to `width` columns, every line indented by `indent`. */
function wrap(text, width, indent = '') {
  const out = [];
  for (const para of text.split('\n')) {
    if (!para.trim()) {
      out.push('');
      continue;
    }
    const lead = para.match(/^\s*/)[0];
    let line = indent + lead;
    let empty = true;
    for (const w of para.trim().split(/\s+/)) {
      if (!empty && line.length + 1 + w.length > width) {
        out.push(line);
        line = indent + lead + w;
      } else {
        line += (empty ? '' : ' ') + w;
      }
      empty = false;
    }
    out.push(line);
  }
  return out;
}

function table(rows, width) {
  const first = Math.min(Math.max(...rows.map(([a]) => a.length)), 30);
  const out = [];
  for (const [a, b] of rows) {
    const text = wrap(b, width - first - 4, '');
    if (a.length > first) {
      out.push(`  ${a}`);
      for (const l of text) out.push(' '.repeat(first + 4) + l);
    } else {
      out.push(`  ${a.padEnd(first)}  ${text[0] ?? ''}`.trimEnd());
      for (const l of text.slice(1)) out.push(' '.repeat(first + 4) + l);
    }
  }
  return out;
}

/** The help page of a command or group. */
export function helpText(path, spec) {
  const width = Math.min(Math.max((process.stdout.isTTY && process.stdout.columns) || 80, 50), 80) - 2;
  const lines = [usage(path, spec), ''];
  for (const block of spec.help.split('\n\n')) {
    if (block.startsWith('\b\n')) lines.push(...block.slice(2).split('\n').map((l) => (l ? '  ' + l : '')));
    else lines.push(...wrap(block, width, '  '));
    lines.push('');
  }
  const opts = [...(spec.options ?? []), HELP_OPTION];
  lines.push('Options:');
  lines.push(
    ...table(
      opts.map((o) => [`${o.names.join(', ')}${o.type === 'flag' ? '' : ' ' + metavar(o)}`, o.help ?? '']),
      width,
    ),
  );
  if (spec.commands) {
    lines.push('', 'Commands:');
    const visible = Object.values(spec.commands).filter((c) => !c.hidden);
    lines.push(...table(visible.map((c) => [c.name, c.summary]), width));
  }
  if (spec.epilog) lines.push('', ...wrap(spec.epilog, width, '  '));
  return lines.join('\n') + '\n';
}

/**
 * Parses `argv` for `spec` (a command, not a group): `{ opts, args }`.
 * @param {string[]} argv @param {string[]} path @param {CommandSpec} spec
 */
export function parseCommand(argv, path, spec) {
  const options = [...(spec.options ?? []), HELP_OPTION];
  /** @type {Record<string, any>} */
  const opts = {};
  for (const o of spec.options ?? []) opts[o.dest] = o.type === 'flag' ? false : o.default ?? null;
  const positional = [];
  let help = false;
  const take = (o, value, name) => {
    if (o.type === 'flag') {
      if (o.dest === 'help') help = true;
      else opts[o.dest] = true;
      return;
    }
    if (o.type === 'int') {
      if (!/^[+-]?\d+$/.test(value.trim())) throw new UsageError(`Invalid value for '${o.names.filter((n) => n.startsWith('--')).join("' / '")}': '${value}' is not a valid integer.`, path, spec);
      opts[o.dest] = Number(value.trim());
    } else if (o.type === 'choice') {
      if (!o.choices.includes(value)) throw new UsageError(`Invalid value for ${o.names.slice().reverse().map((n) => `'${n}'`).join(' / ')}: '${value}' is not one of ${o.choices.map((c) => `'${c}'`).join(', ')}.`, path, spec);
      opts[o.dest] = value;
    } else opts[o.dest] = value;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith('--') ) {
      const eq = a.indexOf('=');
      const name = eq > 0 ? a.slice(0, eq) : a;
      const o = options.find((x) => x.names.includes(name));
      if (!o) throw new UsageError(`No such option '${name}'.`, path, spec);
      if (o.type === 'flag') {
        if (eq > 0) throw new UsageError(`Option '${name}' does not take a value.`, path, spec);
        take(o, '', name);
      } else if (eq > 0) take(o, a.slice(eq + 1), name);
      else {
        if (i + 1 >= argv.length) throw new UsageError(`Option '${name}' requires an argument.`, path, spec, true);
        take(o, argv[++i], name);
      }
    } else if (a.startsWith('-') && a.length > 1) {
      const name = a.slice(0, 2);
      const o = options.find((x) => x.names.includes(name));
      if (!o) throw new UsageError(`No such option '${name}'.`, path, spec);
      if (o.type === 'flag') {
        take(o, '', name);
        // Bundled short flags (-hy): each must be a flag.
        for (const c of a.slice(2)) {
          const f = options.find((x) => x.names.includes(`-${c}`));
          if (!f || f.type !== 'flag') throw new UsageError(`No such option '-${c}'.`, path, spec);
          take(f, '', `-${c}`);
        }
      } else if (a.length > 2) take(o, a.slice(2), name);
      else {
        if (i + 1 >= argv.length) throw new UsageError(`Option '${name}' requires an argument.`, path, spec, true);
        take(o, argv[++i], name);
      }
    } else positional.push(a);
  }
  if (help) throw new HelpRequested(path, spec);
  /** @type {Record<string, any>} */
  const args = {};
  let k = 0;
  for (const s of spec.args ?? []) {
    if (s.nargs === -1) {
      args[s.name] = positional.slice(k);
      k = positional.length;
    } else if (k < positional.length) args[s.name] = positional[k++];
    else if (s.required === false) args[s.name] = null;
    else throw new UsageError(`Missing argument '${s.name.toUpperCase()}'.`, path, spec);
  }
  if (k < positional.length) {
    const extra = positional.slice(k);
    throw new UsageError(`Got unexpected extra argument${extra.length > 1 ? 's' : ''} (${extra.join(' ')})`, path, spec);
  }
  return { opts, args };
}
