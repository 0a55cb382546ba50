//! Server-side custom losses (`create_custom_loss`): an interpreter for the traced
//! torch.fx graphs the SDK uploads, with forward-mode automatic differentiation
//! (dual numbers, several directions per pass) to get ∂loss/∂logprobs exactly,
//! honouring `detach()`.
//!
//! Supported: placeholders, `output`, Python operators (`operator.add/sub/mul/
//! truediv/neg/pow/getitem` and comparisons), the elementwise torch functions and
//! tensor methods `exp log log1p expm1 sqrt rsqrt abs neg sigmoid tanh relu square
//! reciprocal sign softplus logsigmoid clamp/clip clamp_min clamp_max minimum maximum
//! where ones_like zeros_like full_like`, reductions `sum mean max min amax amin`
//! (optionally over `dim` with `keepdim`), indexing with ints/slices/`...`,
//! `detach`/`float`/`to`/`clone`/`contiguous`, `math.*` on numbers, `getattr(x,
//! "shape")` and `size()`. Anything else is rejected at `create_custom_loss` time.

use super::loss::{CustomFn, CustomOut, DatumIn};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Tangent directions evaluated per pass.
const DIRS: usize = 32;

#[derive(Clone, Debug)]
struct T {
    shape: Vec<usize>,
    v: Vec<f64>,
    /// Tangents, element-major: d[e * k + j] for direction j.
    d: Vec<f64>,
    k: usize,
}

impl T {
    fn constant(shape: Vec<usize>, v: Vec<f64>, k: usize) -> T {
        let n = v.len();
        T {
            shape,
            v,
            d: vec![0.0; n * k],
            k,
        }
    }
    fn scalar(x: f64, k: usize) -> T {
        T::constant(vec![], vec![x], k)
    }
    fn len(&self) -> usize {
        self.v.len()
    }
}

#[derive(Clone, Debug)]
enum V {
    T(T),
    Num(f64),
    Bool(bool),
    None,
    Str(String),
    List(Vec<V>),
    Dict(Vec<(String, V)>),
    Slice(Option<i64>, Option<i64>, Option<i64>),
    Ellipsis,
}

#[derive(Clone, Debug)]
enum Arg {
    Ref(String),
    Lit(V),
    List(Vec<Arg>),
    Dict(Vec<(String, Arg)>),
}

#[derive(Clone, Debug)]
struct Node {
    op: String,
    name: String,
    target: String,
    args: Vec<Arg>,
    kwargs: Vec<(String, Arg)>,
}

fn parse_arg(v: &Value) -> Result<Arg, String> {
    Ok(match v {
        Value::Null => Arg::Lit(V::None),
        Value::Bool(b) => Arg::Lit(V::Bool(*b)),
        Value::Number(n) => Arg::Lit(V::Num(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => Arg::Lit(V::Str(s.clone())),
        Value::Array(a) => Arg::List(a.iter().map(parse_arg).collect::<Result<_, _>>()?),
        Value::Object(o) => {
            let (k, x) = o.iter().next().ok_or("empty argument object")?;
            match k.as_str() {
                "ref" => Arg::Ref(x.as_str().ok_or("ref must name a node")?.to_string()),
                "tuple" => Arg::List(
                    x.as_array()
                        .ok_or("tuple must be an array")?
                        .iter()
                        .map(parse_arg)
                        .collect::<Result<_, _>>()?,
                ),
                "dict" => Arg::Dict(
                    x.as_object()
                        .ok_or("dict must be an object")?
                        .iter()
                        .map(|(k, v)| Ok((k.clone(), parse_arg(v)?)))
                        .collect::<Result<_, String>>()?,
                ),
                "slice" => {
                    let a = x.as_array().ok_or("slice must be [start, stop, step]")?;
                    let g = |i: usize| a.get(i).and_then(|v| v.as_i64());
                    Arg::Lit(V::Slice(g(0), g(1), g(2)))
                }
                "ellipsis" => Arg::Lit(V::Ellipsis),
                "float" => Arg::Lit(V::Num(match x.as_str().unwrap_or("") {
                    "inf" => f64::INFINITY,
                    "-inf" => f64::NEG_INFINITY,
                    _ => f64::NAN,
                })),
                "dtype" | "device" | "layout" | "memory_format" => Arg::Lit(V::None),
                other => return Err(format!("unsupported argument encoding {other:?}")),
            }
        }
    })
}

const FUNCS: &[&str] = &[
    "add",
    "sub",
    "mul",
    "truediv",
    "div",
    "neg",
    "pow",
    "getitem",
    "gt",
    "lt",
    "ge",
    "le",
    "eq",
    "ne",
    "exp",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "abs",
    "sigmoid",
    "tanh",
    "relu",
    "square",
    "reciprocal",
    "sign",
    "softplus",
    "log_sigmoid",
    "logsigmoid",
    "clamp",
    "clip",
    "clamp_min",
    "clamp_max",
    "minimum",
    "maximum",
    "where",
    "ones_like",
    "zeros_like",
    "full_like",
    "sum",
    "mean",
    "max",
    "min",
    "amax",
    "amin",
    "detach",
    "float",
    "double",
    "to",
    "clone",
    "contiguous",
    "getattr",
    "size",
    "tensor",
];

const MATH: &[&str] = &[
    "sqrt", "log", "exp", "fabs", "pow", "tanh", "log1p", "expm1",
];

fn short_name(target: &str) -> &str {
    target.rsplit('.').next().unwrap_or(target)
}

fn check_target(op: &str, target: &str) -> Result<(), String> {
    let name = short_name(target);
    let ok = match op {
        "call_function" => {
            (target.starts_with("torch.")
                || target.starts_with("operator.")
                || target == "builtins.getattr")
                && FUNCS.contains(&name)
                || (target.starts_with("math.") && MATH.contains(&name))
        }
        "call_method" => FUNCS.contains(&name),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("unsupported {op} {target:?} (tinker-sim implements common torch/math/operator functions)"))
    }
}

struct Graph {
    nodes: Vec<Node>,
    inputs: Vec<(String, u8)>,
}

pub fn compile(graph: &Value, inputs: &[(String, u8)]) -> Result<Arc<CustomFn>, String> {
    let nodes_json = graph
        .get("nodes")
        .and_then(|n| n.as_array())
        .ok_or("graph.nodes must be an array")?;
    let mut nodes = Vec::new();
    let mut placeholders = 0;
    let mut has_output = false;
    for (i, n) in nodes_json.iter().enumerate() {
        let s = |k: &str| {
            n.get(k)
                .and_then(|v| v.as_str())
                .map(String::from)
                .ok_or(format!("graph.nodes[{i}].{k} must be a string"))
        };
        let op = s("op")?;
        let target = s("target")?;
        match op.as_str() {
            "placeholder" => placeholders += 1,
            "output" => has_output = true,
            "call_function" | "call_method" => check_target(&op, &target)?,
            other => return Err(format!("graph node {i}: op {other:?} is not supported")),
        }
        let args = n
            .get("args")
            .and_then(|a| a.as_array())
            .map(|a| a.iter().map(parse_arg).collect::<Result<Vec<_>, _>>())
            .transpose()?
            .unwrap_or_default();
        let kwargs = n
            .get("kwargs")
            .and_then(|a| a.as_object())
            .map(|o| {
                o.iter()
                    .map(|(k, v)| Ok((k.clone(), parse_arg(v)?)))
                    .collect::<Result<Vec<_>, String>>()
            })
            .transpose()?
            .unwrap_or_default();
        nodes.push(Node {
            op,
            name: s("name")?,
            target,
            args,
            kwargs,
        });
    }
    if !has_output {
        return Err("graph has no output node".into());
    }
    if placeholders != inputs.len() {
        return Err(format!(
            "graph has {placeholders} placeholders but {} inputs were declared",
            inputs.len()
        ));
    }
    let g = Arc::new(Graph {
        nodes,
        inputs: inputs.to_vec(),
    });
    Ok(Arc::new(move |d: &DatumIn, lps: &[f64]| g.run(d, lps)))
}

// ---------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------

fn as_t(v: &V, k: usize) -> Result<T, String> {
    match v {
        V::T(t) => Ok(t.clone()),
        V::Num(x) => Ok(T::scalar(*x, k)),
        V::Bool(b) => Ok(T::scalar(if *b { 1.0 } else { 0.0 }, k)),
        other => Err(format!("expected a tensor or number, got {other:?}")),
    }
}

fn num(v: &V) -> Result<f64, String> {
    match v {
        V::Num(x) => Ok(*x),
        V::Bool(b) => Ok(*b as i64 as f64),
        V::T(t) if t.len() == 1 => Ok(t.v[0]),
        other => Err(format!("expected a number, got {other:?}")),
    }
}

fn broadcast_shape(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let y = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return Err(format!("shapes {a:?} and {b:?} cannot be broadcast"));
        };
    }
    Ok(out)
}

/// Index into a tensor of `shape` for output coordinate `coord` (broadcast).
fn bidx(shape: &[usize], out_shape: &[usize], mut flat: usize) -> usize {
    let n = out_shape.len();
    let mut idx = 0;
    let mut stride = 1;
    for i in (0..n).rev() {
        let c = flat % out_shape[i];
        flat /= out_shape[i];
        if i + shape.len() >= n {
            let dim = shape[i + shape.len() - n];
            if dim != 1 {
                idx += c * stride;
            }
            stride *= dim;
        }
    }
    idx
}

/// An elementwise function: values → (value, partial derivatives).
type Partials<'a> = dyn Fn(&[f64]) -> (f64, Vec<f64>) + 'a;

/// Elementwise over broadcast operands: f(values) → (value, partials).
fn elementwise(args: &[T], f: &Partials) -> Result<T, String> {
    let k = args[0].k;
    let mut shape = vec![];
    for a in args {
        shape = broadcast_shape(&shape, &a.shape)?;
    }
    let n: usize = shape.iter().product();
    let mut out = T {
        shape: shape.clone(),
        v: vec![0.0; n],
        d: vec![0.0; n * k],
        k,
    };
    let mut xs = vec![0.0; args.len()];
    for e in 0..n {
        let idx: Vec<usize> = args.iter().map(|a| bidx(&a.shape, &shape, e)).collect();
        for (j, a) in args.iter().enumerate() {
            xs[j] = a.v[idx[j]];
        }
        let (z, parts) = f(&xs);
        out.v[e] = z;
        for (j, a) in args.iter().enumerate() {
            let p = parts[j];
            if p != 0.0 && p.is_finite() {
                for dir in 0..k {
                    out.d[e * k + dir] += p * a.d[idx[j] * k + dir];
                }
            }
        }
    }
    Ok(out)
}

fn unary(x: &T, f: impl Fn(f64) -> (f64, f64)) -> T {
    let mut out = x.clone();
    for e in 0..x.len() {
        let (z, dz) = f(x.v[e]);
        out.v[e] = z;
        for dir in 0..x.k {
            out.d[e * x.k + dir] = if dz == 0.0 {
                0.0
            } else {
                dz * x.d[e * x.k + dir]
            };
        }
    }
    out
}

fn norm_dim(d: i64, ndim: usize) -> Result<usize, String> {
    let n = ndim as i64;
    let r = if d < 0 { d + n } else { d };
    if r < 0 || r >= n.max(1) {
        return Err(format!("dim {d} out of range for a {ndim}-D tensor"));
    }
    Ok(r as usize)
}

/// Reduce over `dims` (all when empty): kind 0 sum, 1 mean, 2 max, 3 min.
fn reduce(x: &T, dims: &[usize], keepdim: bool, kind: u8) -> T {
    let all = dims.is_empty();
    let keep = |i: usize| !(all || dims.contains(&i));
    let out_full: Vec<usize> = x
        .shape
        .iter()
        .enumerate()
        .map(|(i, &s)| if keep(i) { s } else { 1 })
        .collect();
    let n: usize = out_full.iter().product();
    let k = x.k;
    let mut v = vec![
        if kind == 2 {
            f64::NEG_INFINITY
        } else if kind == 3 {
            f64::INFINITY
        } else {
            0.0
        };
        n
    ];
    let mut d = vec![0.0; n * k];
    let mut count = vec![0usize; n];
    for e in 0..x.len() {
        let o = bidx(&out_full, &x.shape, e);
        count[o] += 1;
        match kind {
            0 | 1 => {
                v[o] += x.v[e];
                for j in 0..k {
                    d[o * k + j] += x.d[e * k + j];
                }
            }
            _ => {
                let better = if kind == 2 {
                    x.v[e] > v[o]
                } else {
                    x.v[e] < v[o]
                };
                if better {
                    v[o] = x.v[e];
                    d[o * k..(o + 1) * k].copy_from_slice(&x.d[e * k..(e + 1) * k]);
                }
            }
        }
    }
    if kind == 1 {
        for o in 0..n {
            let c = count[o].max(1) as f64;
            v[o] /= c;
            for j in 0..k {
                d[o * k + j] /= c;
            }
        }
    }
    let shape = if keepdim {
        out_full
    } else {
        x.shape
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .map(|(_, s)| *s)
            .collect()
    };
    T { shape, v, d, k }
}

fn index(x: &T, idx: &V) -> Result<T, String> {
    let items: Vec<V> = match idx {
        V::List(l) => l.clone(),
        other => vec![other.clone()],
    };
    // Expand the ellipsis to full slices.
    let explicit = items
        .iter()
        .filter(|i| !matches!(i, V::Ellipsis | V::None))
        .count();
    let mut spec: Vec<V> = Vec::new();
    for it in &items {
        if matches!(it, V::Ellipsis) {
            for _ in 0..x.shape.len().saturating_sub(explicit) {
                spec.push(V::Slice(None, None, None));
            }
        } else {
            spec.push(it.clone());
        }
    }
    while spec.iter().filter(|i| !matches!(i, V::None)).count() < x.shape.len() {
        spec.push(V::Slice(None, None, None));
    }
    // Per input dim: the selected coordinates (None = integer index, dropped dim).
    let mut sel: Vec<(Vec<usize>, bool)> = Vec::new();
    let mut dim = 0;
    let mut out_shape = Vec::new();
    for it in &spec {
        match it {
            V::None => out_shape.push(1),
            V::Num(f) => {
                let size = *x.shape.get(dim).ok_or("too many indices")? as i64;
                let mut i = *f as i64;
                if i < 0 {
                    i += size;
                }
                if i < 0 || i >= size {
                    return Err(format!("index {f} out of range for size {size}"));
                }
                sel.push((vec![i as usize], false));
                dim += 1;
            }
            V::Slice(a, b, s) => {
                let size = *x.shape.get(dim).ok_or("too many indices")? as i64;
                let step = s.unwrap_or(1);
                if step <= 0 {
                    return Err("slice steps must be positive".into());
                }
                let clampi = |v: i64| {
                    if v < 0 {
                        (v + size).max(0)
                    } else {
                        v.min(size)
                    }
                };
                let (lo, hi) = (a.map(clampi).unwrap_or(0), b.map(clampi).unwrap_or(size));
                let coords: Vec<usize> = (lo..hi.max(lo))
                    .step_by(step as usize)
                    .map(|c| c as usize)
                    .collect();
                out_shape.push(coords.len());
                sel.push((coords, true));
                dim += 1;
            }
            other => return Err(format!("unsupported index {other:?}")),
        }
    }
    let mut strides = vec![1usize; x.shape.len()];
    for i in (0..x.shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * x.shape[i + 1];
    }
    let mut flat: Vec<usize> = vec![0];
    for (i, (coords, _)) in sel.iter().enumerate() {
        let stride = strides[i];
        flat = flat
            .iter()
            .flat_map(|b| coords.iter().map(move |c| b + c * stride))
            .collect();
    }
    let k = x.k;
    let mut out = T {
        shape: out_shape,
        v: Vec::with_capacity(flat.len()),
        d: Vec::with_capacity(flat.len() * k),
        k,
    };
    for f in flat {
        out.v.push(x.v[f]);
        out.d.extend_from_slice(&x.d[f * k..(f + 1) * k]);
    }
    Ok(out)
}

fn softplus(x: f64) -> f64 {
    if x > 30.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

impl Graph {
    fn run(&self, d: &DatumIn, lps: &[f64]) -> CustomOut {
        let n = lps.len();
        let mut grad = vec![0.0; n];
        let mut start = 0;
        let (loss, metrics) = loop {
            let k = DIRS.min(n - start).max(1);
            let (l, g, m) = self.pass(d, lps, start, k)?;
            let used = k.min(n - start);
            grad[start..start + used].copy_from_slice(&g[..used]);
            start += k;
            if start >= n {
                break (l, m);
            }
        };
        if !loss.is_finite() {
            return Err(format!("custom loss value is not finite ({loss})"));
        }
        Ok((loss, grad, metrics))
    }

    /// One pass with tangent directions e_start..e_{start+k}.
    fn pass(&self, d: &DatumIn, lps: &[f64], start: usize, k: usize) -> CustomOut {
        let mut env: BTreeMap<String, V> = BTreeMap::new();
        let mut ph = 0;
        for node in &self.nodes {
            let val = match node.op.as_str() {
                "placeholder" => {
                    let (name, rank) = &self.inputs[ph];
                    ph += 1;
                    let t = if ph == 1 {
                        let shape = if d.two_d {
                            vec![d.n(), d.k]
                        } else {
                            vec![d.n()]
                        };
                        let mut t = T::constant(shape, lps.to_vec(), k);
                        for j in 0..k {
                            if start + j < lps.len() {
                                t.d[(start + j) * k + j] = 1.0;
                            }
                        }
                        t
                    } else {
                        let v = d
                            .inputs
                            .get(name)
                            .ok_or_else(|| format!("loss_fn_inputs[{name:?}] is missing"))?;
                        let shape = d
                            .input_shapes
                            .get(name)
                            .cloned()
                            .unwrap_or_else(|| vec![v.len()]);
                        T::constant(shape, v.clone(), k)
                    };
                    if t.shape.len() != *rank as usize {
                        return Err(format!(
                            "input {name:?} has rank {} but the loss declared rank {rank}",
                            t.shape.len()
                        ));
                    }
                    V::T(t)
                }
                "output" => {
                    let out = self.eval_arg(&node.args[0], &env)?;
                    let V::List(parts) = out else {
                        return Err("output must be (loss, metrics)".into());
                    };
                    let loss = match parts.first() {
                        Some(V::T(t)) if t.len() == 1 => t.clone(),
                        Some(V::Num(x)) => T::scalar(*x, k),
                        _ => return Err("the loss must be a scalar tensor".into()),
                    };
                    let mut metrics = BTreeMap::new();
                    if let Some(V::Dict(m)) = parts.get(1) {
                        for (key, v) in m {
                            metrics.insert(key.clone(), num(v)?);
                        }
                    }
                    return Ok((loss.v[0], loss.d.clone(), metrics));
                }
                _ => self.call(node, &env, k)?,
            };
            env.insert(node.name.clone(), val);
        }
        Err("graph ended without an output node".into())
    }

    fn eval_arg(&self, a: &Arg, env: &BTreeMap<String, V>) -> Result<V, String> {
        Ok(match a {
            Arg::Ref(r) => env
                .get(r)
                .cloned()
                .ok_or_else(|| format!("reference to unknown node {r:?}"))?,
            Arg::Lit(v) => v.clone(),
            Arg::List(l) => V::List(
                l.iter()
                    .map(|x| self.eval_arg(x, env))
                    .collect::<Result<_, _>>()?,
            ),
            Arg::Dict(m) => V::Dict(
                m.iter()
                    .map(|(k, v)| Ok((k.clone(), self.eval_arg(v, env)?)))
                    .collect::<Result<_, String>>()?,
            ),
        })
    }

    fn call(&self, node: &Node, env: &BTreeMap<String, V>, k: usize) -> Result<V, String> {
        let args: Vec<V> = node
            .args
            .iter()
            .map(|a| self.eval_arg(a, env))
            .collect::<Result<_, _>>()?;
        let kw: BTreeMap<&str, V> = node
            .kwargs
            .iter()
            .map(|(n, a)| Ok((n.as_str(), self.eval_arg(a, env)?)))
            .collect::<Result<_, String>>()?;
        let name = short_name(&node.target);
        let arg = |i: usize, key: &str| -> Option<V> {
            args.get(i)
                .cloned()
                .or_else(|| kw.get(key).cloned())
                .filter(|v| !matches!(v, V::None))
        };
        let x0 = || -> Result<T, String> { as_t(args.first().ok_or("missing argument")?, k) };
        if node.target.starts_with("math.") {
            let x = num(args.first().ok_or("missing argument")?)?;
            return Ok(V::Num(match name {
                "sqrt" => x.sqrt(),
                "log" => x.ln(),
                "exp" => x.exp(),
                "fabs" => x.abs(),
                "tanh" => x.tanh(),
                "log1p" => x.ln_1p(),
                "expm1" => x.exp_m1(),
                _ => x.powf(num(args.get(1).ok_or("pow needs two arguments")?)?),
            }));
        }
        // Number-only arithmetic stays numeric.
        if args.iter().all(|a| matches!(a, V::Num(_) | V::Bool(_)))
            && !args.is_empty()
            && matches!(name, "add" | "sub" | "mul" | "truediv" | "neg" | "pow")
        {
            let a = num(&args[0])?;
            let b = args.get(1).map(num).transpose()?.unwrap_or(0.0);
            return Ok(V::Num(match name {
                "add" => a + b,
                "sub" => a - b,
                "mul" => a * b,
                "truediv" => a / b,
                "neg" => -a,
                _ => a.powf(b),
            }));
        }
        let bin = |f: &Partials| -> Result<V, String> {
            let a = x0()?;
            let b = as_t(&arg(1, "other").ok_or("missing second operand")?, k)?;
            Ok(V::T(elementwise(&[a, b], f)?))
        };
        let cmp = |f: fn(f64, f64) -> bool| -> Result<V, String> {
            let a = x0()?;
            let b = as_t(&arg(1, "other").ok_or("missing second operand")?, k)?;
            let mut t = elementwise(&[a, b], &|x| {
                (if f(x[0], x[1]) { 1.0 } else { 0.0 }, vec![0.0, 0.0])
            })?;
            t.d.iter_mut().for_each(|v| *v = 0.0);
            Ok(V::T(t))
        };
        Ok(match name {
            "add" => bin(&|x| (x[0] + x[1], vec![1.0, 1.0]))?,
            "sub" => bin(&|x| (x[0] - x[1], vec![1.0, -1.0]))?,
            "mul" => bin(&|x| (x[0] * x[1], vec![x[1], x[0]]))?,
            "truediv" | "div" => bin(&|x| (x[0] / x[1], vec![1.0 / x[1], -x[0] / (x[1] * x[1])]))?,
            "pow" => bin(&|x| {
                let z = x[0].powf(x[1]);
                let dx = if x[1] == 0.0 {
                    0.0
                } else {
                    x[1] * x[0].powf(x[1] - 1.0)
                };
                let dy = if x[0] > 0.0 { z * x[0].ln() } else { 0.0 };
                (z, vec![dx, dy])
            })?,
            "minimum" => bin(&|x| {
                if x[0] <= x[1] {
                    (x[0], vec![1.0, 0.0])
                } else {
                    (x[1], vec![0.0, 1.0])
                }
            })?,
            "maximum" => bin(&|x| {
                if x[0] >= x[1] {
                    (x[0], vec![1.0, 0.0])
                } else {
                    (x[1], vec![0.0, 1.0])
                }
            })?,
            "gt" => cmp(|a, b| a > b)?,
            "lt" => cmp(|a, b| a < b)?,
            "ge" => cmp(|a, b| a >= b)?,
            "le" => cmp(|a, b| a <= b)?,
            "eq" => cmp(|a, b| a == b)?,
            "ne" => cmp(|a, b| a != b)?,
            "neg" => V::T(unary(&x0()?, |x| (-x, -1.0))),
            "exp" => V::T(unary(&x0()?, |x| (x.exp(), x.exp()))),
            "log" => V::T(unary(&x0()?, |x| (x.ln(), 1.0 / x))),
            "log1p" => V::T(unary(&x0()?, |x| (x.ln_1p(), 1.0 / (1.0 + x)))),
            "expm1" => V::T(unary(&x0()?, |x| (x.exp_m1(), x.exp()))),
            "sqrt" => V::T(unary(&x0()?, |x| (x.sqrt(), 0.5 / x.sqrt()))),
            "rsqrt" => V::T(unary(&x0()?, |x| (1.0 / x.sqrt(), -0.5 * x.powf(-1.5)))),
            "abs" => V::T(unary(&x0()?, |x| {
                (
                    x.abs(),
                    if x > 0.0 {
                        1.0
                    } else if x < 0.0 {
                        -1.0
                    } else {
                        0.0
                    },
                )
            })),
            "sign" => V::T(unary(&x0()?, |x| {
                (
                    if x > 0.0 {
                        1.0
                    } else if x < 0.0 {
                        -1.0
                    } else {
                        0.0
                    },
                    0.0,
                )
            })),
            "sigmoid" => V::T(unary(&x0()?, |x| {
                (sigmoid(x), sigmoid(x) * (1.0 - sigmoid(x)))
            })),
            "tanh" => V::T(unary(&x0()?, |x| (x.tanh(), 1.0 - x.tanh() * x.tanh()))),
            "relu" => V::T(unary(
                &x0()?,
                |x| if x > 0.0 { (x, 1.0) } else { (0.0, 0.0) },
            )),
            "square" => V::T(unary(&x0()?, |x| (x * x, 2.0 * x))),
            "reciprocal" => V::T(unary(&x0()?, |x| (1.0 / x, -1.0 / (x * x)))),
            "softplus" => V::T(unary(&x0()?, |x| (softplus(x), sigmoid(x)))),
            "log_sigmoid" | "logsigmoid" => V::T(unary(&x0()?, |x| (-softplus(-x), sigmoid(-x)))),
            "clamp" | "clip" | "clamp_min" | "clamp_max" => {
                let (lo, hi) = match name {
                    "clamp_min" => (arg(1, "min"), None),
                    "clamp_max" => (None, arg(1, "max")),
                    _ => (arg(1, "min"), arg(2, "max")),
                };
                let lo = lo
                    .map(|v| num(&v))
                    .transpose()?
                    .unwrap_or(f64::NEG_INFINITY);
                let hi = hi.map(|v| num(&v)).transpose()?.unwrap_or(f64::INFINITY);
                V::T(unary(&x0()?, |x| {
                    if x < lo {
                        (lo, 0.0)
                    } else if x > hi {
                        (hi, 0.0)
                    } else {
                        (x, 1.0)
                    }
                }))
            }
            "where" => {
                let c = x0()?;
                let a = as_t(&arg(1, "input").ok_or("where needs three arguments")?, k)?;
                let b = as_t(&arg(2, "other").ok_or("where needs three arguments")?, k)?;
                V::T(elementwise(&[c, a, b], &|x| {
                    if x[0] != 0.0 {
                        (x[1], vec![0.0, 1.0, 0.0])
                    } else {
                        (x[2], vec![0.0, 0.0, 1.0])
                    }
                })?)
            }
            "ones_like" | "zeros_like" | "full_like" => {
                let x = x0()?;
                let fill = match name {
                    "ones_like" => 1.0,
                    "zeros_like" => 0.0,
                    _ => num(&arg(1, "fill_value").ok_or("full_like needs a fill value")?)?,
                };
                V::T(T::constant(x.shape.clone(), vec![fill; x.len()], k))
            }
            "tensor" => V::T(T::scalar(
                num(args.first().ok_or("tensor needs a value")?)?,
                k,
            )),
            "detach" => {
                let mut x = x0()?;
                x.d.iter_mut().for_each(|v| *v = 0.0);
                V::T(x)
            }
            "float" | "double" | "to" | "clone" | "contiguous" => V::T(x0()?),
            "sum" | "mean" | "max" | "min" | "amax" | "amin" => {
                let x = x0()?;
                let dims: Vec<usize> = match arg(1, "dim") {
                    None => vec![],
                    Some(V::List(l)) => l
                        .iter()
                        .map(|v| norm_dim(num(v)? as i64, x.shape.len()))
                        .collect::<Result<_, _>>()?,
                    Some(v) => vec![norm_dim(num(&v)? as i64, x.shape.len())?],
                };
                let keepdim = matches!(arg(2, "keepdim"), Some(V::Bool(true)));
                let kind = match name {
                    "sum" => 0,
                    "mean" => 1,
                    "max" | "amax" => 2,
                    _ => 3,
                };
                let r = reduce(&x, &dims, keepdim, kind);
                if matches!(name, "max" | "min") && !dims.is_empty() {
                    // torch.max(x, dim) returns (values, indices); indices are not differentiable.
                    let idx = T::constant(r.shape.clone(), vec![0.0; r.len()], k);
                    V::List(vec![V::T(r), V::T(idx)])
                } else {
                    V::T(r)
                }
            }
            "getitem" => match args.first() {
                Some(V::T(t)) => V::T(index(t, args.get(1).ok_or("getitem needs an index")?)?),
                Some(V::List(l)) => {
                    let i = num(args.get(1).ok_or("getitem needs an index")?)? as i64;
                    let i = if i < 0 { i + l.len() as i64 } else { i };
                    l.get(i as usize).cloned().ok_or("index out of range")?
                }
                other => return Err(format!("cannot index {other:?}")),
            },
            "getattr" | "size" => {
                let x = x0()?;
                let attr = match (name, args.get(1)) {
                    ("getattr", Some(V::Str(s))) => s.clone(),
                    _ => "shape".into(),
                };
                if attr != "shape" {
                    return Err(format!("attribute {attr:?} is not supported"));
                }
                let dims = V::List(x.shape.iter().map(|&s| V::Num(s as f64)).collect());
                match (name, args.get(1)) {
                    ("size", Some(v)) => {
                        let i = norm_dim(num(v)? as i64, x.shape.len())?;
                        V::Num(x.shape[i] as f64)
                    }
                    _ => dims,
                }
            }
            other => return Err(format!("unsupported function {other:?}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn datum(n: usize, inputs: &[(&str, Vec<f64>)]) -> DatumIn {
        DatumIn {
            input: vec![1; n],
            targets: vec![2; n],
            k: 1,
            two_d: false,
            inputs: inputs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            input_shapes: inputs
                .iter()
                .map(|(k, v)| (k.to_string(), vec![v.len()]))
                .collect(),
        }
    }

    /// The graph the SDK uploads for a PPO-like loss (captured from torch.fx).
    fn ppo_graph() -> Value {
        json!({"format": 1, "nodes": [
            {"op": "placeholder", "name": "logprobs", "target": "logprobs", "args": [], "kwargs": {}},
            {"op": "placeholder", "name": "logprobs_old", "target": "logprobs_old", "args": [], "kwargs": {}},
            {"op": "placeholder", "name": "advantages", "target": "advantages", "args": [], "kwargs": {}},
            {"op": "call_method", "name": "detach", "target": "detach", "args": [{"ref": "logprobs_old"}], "kwargs": {}},
            {"op": "call_function", "name": "sub", "target": "operator.sub", "args": [{"ref": "logprobs"}, {"ref": "detach"}], "kwargs": {}},
            {"op": "call_function", "name": "exp", "target": "torch.exp", "args": [{"ref": "sub"}], "kwargs": {}},
            {"op": "call_function", "name": "clamp", "target": "torch.clamp", "args": [{"ref": "exp"}, 0.8, 1.2], "kwargs": {}},
            {"op": "call_function", "name": "mul", "target": "operator.mul", "args": [{"ref": "exp"}, {"ref": "advantages"}], "kwargs": {}},
            {"op": "call_function", "name": "mul_1", "target": "operator.mul", "args": [{"ref": "clamp"}, {"ref": "advantages"}], "kwargs": {}},
            {"op": "call_function", "name": "minimum", "target": "torch.minimum", "args": [{"ref": "mul"}, {"ref": "mul_1"}], "kwargs": {}},
            {"op": "call_method", "name": "sum_1", "target": "sum", "args": [{"ref": "minimum"}], "kwargs": {}},
            {"op": "call_function", "name": "neg", "target": "operator.neg", "args": [{"ref": "sum_1"}], "kwargs": {}},
            {"op": "call_function", "name": "sub_1", "target": "operator.sub", "args": [{"ref": "logprobs_old"}, {"ref": "logprobs"}], "kwargs": {}},
            {"op": "call_method", "name": "mean", "target": "mean", "args": [{"ref": "sub_1"}], "kwargs": {}},
            {"op": "output", "name": "output", "target": "output", "args": [{"tuple": [{"ref": "neg"}, {"dict": {"custom/kl:mean": {"ref": "mean"}}}]}], "kwargs": {}}
        ]})
    }

    #[test]
    fn ppo_graph_matches_closed_form_and_finite_differences() {
        let inputs = vec![
            ("logprobs".to_string(), 1u8),
            ("logprobs_old".to_string(), 1),
            ("advantages".to_string(), 1),
        ];
        let f = compile(&ppo_graph(), &inputs).unwrap();
        let lps: Vec<f64> = (0..40).map(|i| -1.0 - 0.05 * i as f64).collect();
        let old: Vec<f64> = lps
            .iter()
            .enumerate()
            .map(|(i, l)| l + ((i as f64) * 0.7).sin() * 0.4)
            .collect();
        let adv: Vec<f64> = (0..40)
            .map(|i| {
                if i % 3 == 0 {
                    -1.0
                } else {
                    0.5 + i as f64 * 0.01
                }
            })
            .collect();
        let d = datum(
            40,
            &[("logprobs_old", old.clone()), ("advantages", adv.clone())],
        );
        let (loss, grad, metrics) = f(&d, &lps).unwrap();
        let mut expect = 0.0;
        for i in 0..40 {
            let r = (lps[i] - old[i]).exp();
            expect -= (r * adv[i]).min(r.clamp(0.8, 1.2) * adv[i]);
        }
        assert!((loss - expect).abs() < 1e-12);
        let kl: f64 = old.iter().zip(&lps).map(|(o, l)| o - l).sum::<f64>() / 40.0;
        assert!((metrics["custom/kl:mean"] - kl).abs() < 1e-12);
        for i in [0usize, 5, 17, 33, 39] {
            let eps = 1e-6;
            let mut p = lps.clone();
            p[i] += eps;
            let mut m = lps.clone();
            m[i] -= eps;
            let fd = (f(&d, &p).unwrap().0 - f(&d, &m).unwrap().0) / (2.0 * eps);
            assert!((fd - grad[i]).abs() < 1e-6, "{i}: {fd} vs {}", grad[i]);
        }
    }

    #[test]
    fn detach_stops_gradients_and_indexing_works() {
        let g = json!({"format": 1, "nodes": [
            {"op": "placeholder", "name": "logprobs", "target": "logprobs", "args": [], "kwargs": {}},
            {"op": "call_method", "name": "detach", "target": "detach", "args": [{"ref": "logprobs"}], "kwargs": {}},
            {"op": "call_function", "name": "mul", "target": "operator.mul", "args": [{"ref": "logprobs"}, {"ref": "detach"}], "kwargs": {}},
            {"op": "call_function", "name": "getitem", "target": "operator.getitem", "args": [{"ref": "mul"}, {"slice": [1, null, null]}], "kwargs": {}},
            {"op": "call_function", "name": "sum_1", "target": "torch.sum", "args": [{"ref": "getitem"}], "kwargs": {"dim": 0}},
            {"op": "output", "name": "output", "target": "output", "args": [{"tuple": [{"ref": "sum_1"}, {"dict": {}}]}], "kwargs": {}}
        ]});
        let f = compile(&g, &[("logprobs".into(), 1)]).unwrap();
        let lps = vec![-1.0, -2.0, -3.0];
        let (loss, grad, _) = f(&datum(3, &[]), &lps).unwrap();
        assert_eq!(loss, 4.0 + 9.0);
        // d/dx (x * sg(x)) = sg(x); the first element is sliced away.
        assert_eq!(grad, vec![0.0, -2.0, -3.0]);
    }

    #[test]
    fn unsupported_ops_are_rejected_at_compile_time() {
        let g = json!({"format": 1, "nodes": [
            {"op": "placeholder", "name": "logprobs", "target": "logprobs", "args": [], "kwargs": {}},
            {"op": "call_function", "name": "x", "target": "torch.fft.fft", "args": [{"ref": "logprobs"}], "kwargs": {}},
            {"op": "output", "name": "output", "target": "output", "args": [{"tuple": [{"ref": "x"}, {"dict": {}}]}], "kwargs": {}}
        ]});
        assert!(compile(&g, &[("logprobs".into(), 1)])
            .err()
            .unwrap()
            .contains("unsupported"));
        assert!(compile(&json!({"nodes": []}), &[])
            .err()
            .unwrap()
            .contains("output"));
    }
}
