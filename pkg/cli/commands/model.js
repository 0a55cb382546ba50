// `tinker-wasm model list [SUBSTRING]` (Python: tinker/cli/commands/model.py).
import * as api from '../api.js';
import { dump, SupportedModel } from '../models.js';
import { printOutput, formatOptional, formatBool } from '../output.js';
import { CliError } from '../errors.js';

export async function list(ctx, opts, args) {
  const caps = await api.getServerCapabilities();
  let models = (caps.supported_models ?? []).map((m) => dump(SupportedModel, m));
  const sub = args.substring;
  if (sub !== null && sub !== undefined) {
    models = models.filter((m) => m.model_name != null && m.model_name.toLowerCase().includes(sub.toLowerCase()));
    if (!models.length) {
      const who = await api.whoami();
      throw new CliError(`No model name contains '${sub}' for organization ${who.org_urn}`, "Run 'tinker-wasm model list' to see every model this organization can use.");
    }
  }
  printOutput(
    {
      toDict: () => ({ models }),
      title: () => null,
      columns: () => ['Model', 'Max Context', 'Trainable', 'Sampleable'],
      rows: () => models.map((m) => [formatOptional(m.model_name), formatOptional(m.max_context_length), formatOptional(m.trainable, formatBool), formatOptional(m.sampleable, formatBool)]),
    },
    ctx.format,
  );
}
