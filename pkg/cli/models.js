// The Python SDK's response models (tinker 0.38.0, tinker/types/*.py) as field lists:
// `dump(schema, wire)` is pydantic's `model.model_dump()` of the model validated from the
// wire JSON — its fields in declaration order, defaults for missing ones, unknown fields
// dropped, ints and floats as pydantic coerces them, datetimes parsed (printed as
// `str(datetime)` by the JSON writer). `mode: 'json'` is `model_dump(mode="json")`.
import { PyFloat, PyDateTime, parseDateTime } from './output.js';

/**
 * A field type: 'str' | 'int' | 'float' | 'bool' | 'datetime' | 'any' | 'strmap' |
 * { model } | { list } | { dict } | { union: [discriminator, { tag: model }] }.
 * @typedef {any} FieldType
 * @typedef {[name: string, type: FieldType, defaultValue?: unknown]} Field
 */

/** @type {Field[]} */
export const Checkpoint = [
  ['checkpoint_id', 'str'],
  ['checkpoint_type', 'str'],
  ['time', 'datetime'],
  ['tinker_path', 'str'],
  ['size_bytes', 'int', null],
  ['public', 'bool', false],
  ['user_metadata', 'strmap', null],
  ['expires_at', 'datetime', null],
];

/** @type {Field[]} */
export const TrainingRun = [
  ['training_run_id', 'str'],
  ['base_model', 'str'],
  ['model_owner', 'str'],
  ['is_lora', 'bool'],
  ['corrupted', 'bool', false],
  ['lora_rank', 'int', null],
  ['last_request_time', 'datetime'],
  ['last_checkpoint', { model: Checkpoint }, null],
  ['last_sampler_checkpoint', { model: Checkpoint }, null],
  ['user_metadata', 'strmap', null],
];

/** @type {Field[]} */
export const SupportedModel = [
  ['model_name', 'str', null],
  ['max_context_length', 'int', null],
  ['trainable', 'bool', null],
  ['sampleable', 'bool', null],
];

/** @type {Field[]} */
export const WhoamiResponse = [
  ['user_urn', 'str'],
  ['org_urn', 'str'],
  ['email', 'str', null],
];

const billingEvents = {
  training: [['type', 'str', 'training'], ['token_count', 'int']],
  sampling_prefill: [['type', 'str', 'sampling_prefill'], ['cached', 'bool'], ['token_count', 'int']],
  sampling_sample: [['type', 'str', 'sampling_sample'], ['token_count', 'int']],
  checkpoint: [['type', 'str', 'checkpoint'], ['count', 'int']],
  storage: [['type', 'str', 'storage'], ['free', 'bool', false], ['gigabyte_hours', 'float']],
};

/** @type {Field[]} */
export const BillingUsageEvent = [
  ['bucket_start', 'datetime'],
  ['bucket_end', 'datetime'],
  ['base_model', 'str', null],
  ['user_id', 'str', null],
  ['user_name', 'str', null],
  ['session_id', 'str', null],
  ['project_id', 'str', null],
  ['estimated_cost_usd', 'float', null],
  ['effective_rate_usd_per_million_tokens', 'float', null],
  ['effective_rate_usd_per_gigabyte_month', 'float', null],
  ['event_info', { union: ['type', billingEvents] }],
];

/** @type {Field[]} */
export const BillingUsageSession = [['user_metadata', 'strmap', null]];

/** @type {Field[]} */
export const BillingUsageResponse = [
  ['data', { list: { model: BillingUsageEvent } }],
  ['sessions', { dict: { model: BillingUsageSession } }, {}],
  ['cost_data_through', 'datetime', null],
];

/** @type {Field[]} */
export const CurrentCheckpointStorageUsageItem = [
  ['project_id', 'str', null],
  ['org_user_urn', 'str', null],
  ['user_email', 'str', null],
  ['user_name', 'str', null],
  ['checkpoint_count', 'int'],
  ['size_bytes', 'int'],
  ['size_gigabytes', 'float'],
  ['estimated_monthly_cost_usd', 'float', null],
];

/** @type {Field[]} */
export const CurrentCheckpointStorageUsageResponse = [
  ['effective_rate_usd_per_gigabyte_month', 'float', null],
  ['data', { list: { model: CurrentCheckpointStorageUsageItem } }],
];

/** The server answered something the Python SDK's models would reject. */
export class ValidationError extends Error {}

function value(type, v, path, mode) {
  if (v === null || v === undefined) return null;
  if (type === 'any') return v;
  if (type === 'str') {
    if (typeof v !== 'string') throw new ValidationError(`${path}: expected a string`);
    return v;
  }
  if (type === 'int') {
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new ValidationError(`${path}: expected an integer`);
    return v;
  }
  if (type === 'float') {
    if (typeof v !== 'number') throw new ValidationError(`${path}: expected a number`);
    return new PyFloat(v);
  }
  if (type === 'bool') {
    if (typeof v !== 'boolean') throw new ValidationError(`${path}: expected a boolean`);
    return v;
  }
  if (type === 'datetime') {
    const d = parseDateTime(v);
    if (!d) throw new ValidationError(`${path}: expected a datetime`);
    return mode === 'json' ? d.toJSONString() : d;
  }
  if (type === 'strmap') {
    if (typeof v !== 'object' || Array.isArray(v)) throw new ValidationError(`${path}: expected an object`);
    return { ...v };
  }
  if (type.model) return dump(type.model, v, path, mode);
  if (type.list) {
    if (!Array.isArray(v)) throw new ValidationError(`${path}: expected a list`);
    return v.map((x, i) => value(type.list, x, `${path}[${i}]`, mode));
  }
  if (type.dict) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, value(type.dict, x, `${path}.${k}`, mode)]));
  }
  if (type.union) {
    const [tag, models] = type.union;
    const m = models[v?.[tag]];
    if (!m) throw new ValidationError(`${path}.${tag}: unknown ${JSON.stringify(v?.[tag])}`);
    return dump(m, v, path, mode);
  }
  throw new Error(`unknown field type at ${path}`);
}

/**
 * pydantic's `Model.model_validate(wire).model_dump(mode=…)`.
 * @param {Field[]} schema
 * @param {any} wire
 * @returns {Record<string, any>}
 */
export function dump(schema, wire, path = '', mode = 'python') {
  if (wire === null || typeof wire !== 'object' || Array.isArray(wire)) throw new ValidationError(`${path || 'response'}: expected an object`);
  /** @type {Record<string, any>} */
  const out = {};
  for (const [name, type, ...def] of schema) {
    const v = wire[name];
    if (v === undefined || (v === null && def.length && def[0] !== null && type !== 'datetime')) {
      if (!def.length) throw new ValidationError(`${path ? path + '.' : ''}${name}: missing`);
      out[name] = def[0] && typeof def[0] === 'object' ? { ...def[0] } : def[0];
    } else {
      out[name] = value(type, v, `${path ? path + '.' : ''}${name}`, mode);
    }
  }
  return out;
}

export { PyDateTime, PyFloat };
