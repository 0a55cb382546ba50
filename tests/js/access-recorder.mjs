// Records which public members the cross-runtime cases really use (issue 31, item 8): each
// method, getter, static and declared property of the package's exported classes is wrapped
// so that a call or read on an instance of its class (or a static call on the class) is
// noted under the case running at that moment. tests/js/coverage.mjs --accesses FILE then
// requires every member to have been used so by a case coverage.json names for it; a case
// that only mentions the word (`r.status` of `Promise.allSettled` for `APIError.status`) no
// longer counts. Only the Node runner records (tests/js/node.test.mjs with
// TINKER_COVERAGE_OUT set); the other runtimes run the same cases unrecorded.
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

const used = new Map(); // case name -> Set of members
const instrumented = new Set();
// Declared instance properties (not on any prototype) -> the [class, label] pairs declaring them.
const propertyLabels = new Map();
const traps = new WeakSet();
let current = null;

/** Sets the case the next accesses belong to (null between cases). */
export function setCase(name) {
  current = name;
}

function record(member) {
  if (current === null) return;
  let s = used.get(current);
  if (!s) used.set(current, (s = new Set()));
  s.add(member);
}

/** The owner of `key` on `obj`'s prototype chain and its descriptor. */
function owned(obj, key) {
  for (let o = obj; o && o !== Object.prototype && o !== Function.prototype; o = Object.getPrototypeOf(o)) {
    const d = Object.getOwnPropertyDescriptor(o, key);
    if (d) return [o, d];
  }
  return [null, null];
}

const keyOf = (name) => {
  const m = /^\[Symbol\.(\w+)\]$/.exec(name);
  return m ? Symbol[m[1]] : name;
};

/** Wraps member `name` of `cls` (instance side) to record `label` on instances of `cls`. */
function instrumentInstance(cls, name, label) {
  instrumented.add(label);
  const key = keyOf(name);
  const [owner, d] = owned(cls.prototype, key);
  if (!owner || traps.has(d.set)) {
    // A property each instance gets by assignment (the error classes' `Object.assign`): an
    // accessor on the prototype catches the assignment and makes it an own, enumerable
    // accessor whose reads record every class of the instance that declares the property.
    const labels = propertyLabels.get(key) ?? [];
    propertyLabels.set(key, labels);
    labels.push([cls, label]);
    if (owner) return; // a trap up the chain already catches this class's instances
    const set = function (v) {
      let value = v;
      Object.defineProperty(this, key, {
        configurable: true,
        enumerable: true,
        get() {
          for (const [c, l] of labels) if (this instanceof c) record(l);
          return value;
        },
        set(x) {
          value = x;
        },
      });
    };
    traps.add(set);
    Object.defineProperty(cls.prototype, key, { configurable: true, set });
    return;
  }
  if (typeof d.value === 'function') {
    const orig = d.value;
    const wrapped = {
      [orig.name || String(name)](...args) {
        if (this instanceof cls) record(label);
        return orig.apply(this, args);
      },
    }[orig.name || String(name)];
    Object.defineProperty(owner, key, { ...d, value: wrapped });
  } else if (d.get) {
    const get = d.get;
    Object.defineProperty(owner, key, {
      ...d,
      get() {
        if (this instanceof cls) record(label);
        return get.call(this);
      },
    });
  }
}

/** Wraps static `name` of `cls` to record `label` when called on it. */
function instrumentStatic(cls, name, label) {
  const [owner, d] = owned(cls, name);
  if (!owner || typeof d.value !== 'function') return;
  instrumented.add(label);
  const orig = d.value;
  Object.defineProperty(owner, name, {
    ...d,
    value: function (...args) {
      if (this === cls || this === owner || (typeof this === 'function' && Object.prototype.isPrototypeOf.call(cls, this))) record(label);
      return orig.apply(this, args);
    },
  });
}

/**
 * Instruments the members of `surface` (coverage.mjs's `Class.member` names) on the module
 * namespace `mod`. Plain exported functions (`name()`) cannot be wrapped through a module
 * namespace and are left to the textual check.
 */
export function instrument(mod, surface) {
  for (const member of surface) {
    if (member.endsWith('()')) continue;
    const dot = member.indexOf('.');
    const owner = mod[member.slice(0, dot)];
    let name = member.slice(dot + 1);
    if (!owner) continue;
    if (name.startsWith('static ')) {
      name = name.slice('static '.length);
      instrumentStatic(owner, name, member);
    } else if (typeof owner === 'function' && owner.prototype) {
      instrumentInstance(owner, name, member);
    }
    // Objects of functions (`ModelInput.fromInts`) are frozen: left to the textual check.
  }
}

/** Writes the members instrumented and what each case used to `file` (JSON). */
export function save(file) {
  mkdirSync(path.dirname(file), { recursive: true });
  const cases = Object.fromEntries([...used].map(([k, v]) => [k, [...v].sort()]));
  writeFileSync(file, JSON.stringify({ instrumented: [...instrumented].sort(), cases }, null, 1));
}
