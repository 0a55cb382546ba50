//! Kimi K2.5 tool declarations as TypeScript (cookbook
//! `renderers/kimi_k2_5_tool_declaration_ts.py`, itself Moonshot's `tool_declaration_ts.py`):
//! each function's JSON-schema parameters become a TypeScript type in a `functions`
//! namespace, with descriptions, constraints and defaults as `//` comments.
//!
//! The schema is read as the Python reads it, lazily: a value is only checked where the
//! Python would touch it (the root object's own description is never formatted, so it may
//! be anything), and everything the Python prints with `str()`, `repr()` or
//! `json.dumps(ensure_ascii=False)` is printed the same way. Where the Python raises
//! (`ValueError`, or a `TypeError`/`AttributeError` on an unexpected shape) this returns
//! an error.

use serde_json::{Map, Value as Json};

use super::base::{json_dumps_with, py_repr, py_str, py_truthy, renderer_error, R};

const TS_INDENT: &str = "  ";
const TS_FIELD_DELIMITER: &str = ",\n";

/// `encode_tools_to_typescript_style`: OpenAI-style tools
/// (`{"type": "function", "function": {...}}`) as the `# Tools` block.
pub(super) fn encode_tools_to_typescript_style(tools: &[Json]) -> R<String> {
    let mut functions = Vec::new();
    for tool in tools {
        // Tools of another type (Moonshot's `_plugin`) are skipped, as are empty functions.
        if tool.get("type").and_then(Json::as_str) != Some("function") {
            continue;
        }
        match tool.get("function") {
            Some(f) if py_truthy(f) => functions.push(function_to_typescript(f)?),
            _ => {}
        }
    }
    if functions.is_empty() {
        return Ok(String::new());
    }
    Ok(format!(
        "# Tools\n\n## functions\nnamespace functions {{\n{}\n}}\n",
        functions.join("\n")
    ))
}

/// `$defs` seen so far and whether `#` (the parameters themselves) was referenced
/// (`_SchemaRegistry`).
#[derive(Default)]
struct Registry {
    definitions: Map<String, Json>,
    has_self_ref: bool,
}

impl Registry {
    /// `register_definitions`: a falsy `$defs` is ignored; otherwise it must be an object.
    fn register(&mut self, defs: &Json) -> R<()> {
        if !py_truthy(defs) {
            return Ok(());
        }
        let defs = defs
            .as_object()
            .ok_or_else(|| renderer_error("$defs must be an object"))?;
        for (name, schema) in defs {
            self.definitions.insert(name.clone(), schema.clone());
        }
        Ok(())
    }

    /// `resolve_ref`: `#` is the parameters object; `#/$defs/<name>` a registered definition.
    fn resolve(&mut self, reference: &Json) -> R<Json> {
        let Some(r) = reference.as_str() else {
            return Err(renderer_error(format!(
                "Unsupported reference format: {}",
                py_str(reference)
            )));
        };
        if r == "#" {
            self.has_self_ref = true;
            return Ok(serde_json::json!({ "$self_ref": true }));
        }
        if !r.starts_with("#/$defs/") {
            return Err(renderer_error(format!("Unsupported reference format: {r}")));
        }
        self.definitions
            .get(last_segment(r))
            .cloned()
            .ok_or_else(|| renderer_error(format!("Reference not found: {r}")))
    }
}

/// `ref.split("/")[-1]`.
fn last_segment(r: &str) -> &str {
    r.rsplit('/').next().unwrap_or(r)
}

/// A parsed schema (`_ParameterType`): the kind of type plus the description and
/// constraints every kind carries (`_BaseType`).
struct TsType {
    /// `extra_props.get("description", "")`, checked only when formatted.
    description: Option<Json>,
    /// The allowed constraint keys present, in schema order.
    constraints: Vec<(String, Json)>,
    kind: Kind,
}

enum Kind {
    /// `_ParameterTypeScalar`: the schema's `type` as given (`any` for `{}` and `true`).
    Scalar(Json),
    /// `_ParameterTypeObject`.
    Object(ObjectType),
    /// `_ParameterTypeArray`: the item type.
    Array(Box<TsType>),
    /// `_ParameterTypeEnum`: the `enum` value, as given.
    Enum(Json),
    /// `_ParameterTypeAnyOf`.
    AnyOf(Vec<TsType>),
    /// `_ParameterTypeUnion`: the mapped names of a list `type`.
    Union(Vec<&'static str>),
    /// `_ParameterTypeRef`: the referenced name (`parameters` for `#`).
    Ref(String),
}

struct ObjectType {
    properties: Vec<Parameter>,
    additional: Additional,
}

/// `additionalProperties`: absent or null, `true`, `false`, a schema, or something the
/// Python only rejects when it prints the object.
enum Additional {
    Absent,
    Any,
    Never,
    Schema(Box<TsType>),
    Invalid(Json),
}

/// One field of an object (`_Parameter`).
struct Parameter {
    name: String,
    ty: TsType,
    optional: bool,
    /// `prop.get("default")` of an object property (`None` for null or absent).
    default: Option<Json>,
}

impl TsType {
    fn new(kind: Kind, schema: Option<&Map<String, Json>>, allowed: &[&str]) -> TsType {
        let description = schema.and_then(|o| o.get("description")).cloned();
        let constraints = schema
            .into_iter()
            .flatten()
            .filter(|(k, _)| allowed.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        TsType {
            description,
            constraints,
            kind,
        }
    }

    fn any() -> TsType {
        TsType::new(Kind::Scalar(Json::from("any")), None, &[])
    }

    /// `format_docstring`: the description and constraints as `//` lines.
    fn docstring(&self, indent: &str) -> R<String> {
        let mut out = String::new();
        if let Some(d) = self.description.as_ref().filter(|d| py_truthy(d)) {
            out.push_str(&format_description(description_text(d)?, indent));
            out.push('\n');
        }
        if !self.constraints.is_empty() {
            let mut sorted: Vec<&(String, Json)> = self.constraints.iter().collect();
            tinker_support::sort::sort_by(&mut sorted, |a, b| a.0.cmp(&b.0));
            let items: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{k}: {}", py_str(v)))
                .collect();
            out.push_str(&format!("{indent}// {}\n", items.join(", ")));
        }
        Ok(out)
    }

    /// Whether `to_typescript_style` returns a `str`: not for a scalar whose `type` is not
    /// a string, which the Python returns as is (printable with `str()`, but not joinable).
    fn prints_a_str(&self) -> bool {
        !matches!(&self.kind, Kind::Scalar(t) if !t.is_string())
    }

    /// `to_typescript_style`, as `str()` of its result.
    fn to_ts(&self, indent: &str) -> R<String> {
        match &self.kind {
            Kind::Scalar(t) => Ok(match t.as_str() {
                Some("integer") => "number".to_owned(),
                _ => py_str(t),
            }),
            Kind::Object(o) => o.to_ts(indent),
            Kind::Array(item) => array_to_ts(item, indent),
            Kind::Enum(values) => enum_to_ts(values),
            Kind::AnyOf(types) => {
                let mut parts = Vec::new();
                for t in types {
                    parts.push(joinable(t, indent)?);
                }
                Ok(parts.join(" | "))
            }
            Kind::Union(names) => Ok(names.join(" | ")),
            Kind::Ref(name) => Ok(name.clone()),
        }
    }
}

/// A type's TypeScript where the Python concatenates or joins it (a `TypeError` for a
/// non-string scalar type).
fn joinable(t: &TsType, indent: &str) -> R<String> {
    if !t.prints_a_str() {
        return Err(renderer_error(
            "can only concatenate str: a schema's \"type\" must be a string",
        ));
    }
    t.to_ts(indent)
}

/// `_ParameterTypeArray.to_typescript_style`: items with comments go on their own line.
fn array_to_ts(item: &TsType, indent: &str) -> R<String> {
    let inner = format!("{indent}{TS_INDENT}");
    let doc = item.docstring(&inner)?;
    if doc.is_empty() {
        return Ok(format!("Array<{}>", item.to_ts(indent)?));
    }
    Ok(format!(
        "Array<\n{doc}{inner}{}\n{indent}>",
        joinable(item, &inner)?
    ))
}

/// `_ParameterTypeEnum.to_typescript_style`: strings quoted, other values as `str()`.
fn enum_to_ts(values: &Json) -> R<String> {
    let shown: Vec<String> = py_iter(values)?
        .iter()
        .map(|e| match e.as_str() {
            Some(s) => format!("\"{s}\""),
            None => py_str(e),
        })
        .collect();
    Ok(shown.join(" | "))
}

impl ObjectType {
    /// `_ParameterTypeObject.to_typescript_style`: required fields first, each group by
    /// name, then the `[k: string]` line of `additionalProperties`.
    fn to_ts(&self, indent: &str) -> R<String> {
        let inner = format!("{indent}{TS_INDENT}");
        let mut ordered: Vec<&Parameter> = self.properties.iter().filter(|p| !p.optional).collect();
        tinker_support::sort::sort_by(&mut ordered, |a, b| a.name.cmp(&b.name));
        let mut optional: Vec<&Parameter> = self.properties.iter().filter(|p| p.optional).collect();
        tinker_support::sort::sort_by(&mut optional, |a, b| a.name.cmp(&b.name));
        ordered.extend(optional);
        let mut fields = Vec::new();
        for p in ordered {
            fields.push(p.to_ts(&inner)?);
        }
        let extra = match &self.additional {
            Additional::Absent => None,
            Additional::Any => Some("any".to_owned()),
            Additional::Never => Some("never".to_owned()),
            Additional::Schema(t) => Some(t.to_ts(&inner)?),
            Additional::Invalid(v) => {
                return Err(renderer_error(format!(
                    "Unknown additionalProperties: {}",
                    py_str(v)
                )))
            }
        };
        if let Some(e) = extra {
            fields.push(format!("{inner}[k: string]: {e}"));
        }
        if fields.is_empty() {
            return Ok("{}".to_owned());
        }
        Ok(format!(
            "{{\n{}\n{indent}}}",
            fields.join(TS_FIELD_DELIMITER)
        ))
    }
}

impl Parameter {
    /// `_Parameter.to_typescript_style`: comments, then `name?: type`.
    fn to_ts(&self, indent: &str) -> R<String> {
        let mut out = self.ty.docstring(indent)?;
        if let Some(d) = &self.default {
            out.push_str(&format!("{indent}// Default: {}\n", default_repr(d)));
        }
        let mark = if self.optional { "?" } else { "" };
        out.push_str(&format!(
            "{indent}{}{mark}: {}",
            self.name,
            self.ty.to_ts(indent)?
        ));
        Ok(out)
    }
}

/// A default as the Python prints it: `repr()` of numbers and booleans,
/// `json.dumps(ensure_ascii=False)` of anything else.
fn default_repr(v: &Json) -> String {
    match v {
        Json::Bool(_) | Json::Number(_) => py_str(v),
        _ => json_dumps_with(v, (", ", ": "), false, None),
    }
}

/// `_parse_parameter_type`.
fn parse_type(schema: &Json, reg: &mut Registry) -> R<TsType> {
    let o = match schema {
        // `true` accepts anything; `false` (nothing) is rendered as null.
        Json::Bool(true) => return Ok(TsType::any()),
        Json::Bool(false) => return Ok(TsType::new(Kind::Scalar(Json::from("null")), None, &[])),
        Json::Object(o) => o,
        other => {
            return Err(renderer_error(format!(
                "Invalid JSON Schema object: {}",
                py_str(other)
            )))
        }
    };
    if let Some(r) = o.get("$ref") {
        return parse_ref(o, r, reg);
    }
    if let Some(alternatives) = o.get("anyOf") {
        let mut types = Vec::new();
        for alt in py_iter(alternatives)? {
            types.push(parse_type(&alt, reg)?);
        }
        return Ok(TsType::new(Kind::AnyOf(types), Some(o), &[]));
    }
    if let Some(values) = o.get("enum") {
        check_enum(o, values)?;
        return Ok(TsType::new(Kind::Enum(values.clone()), Some(o), &[]));
    }
    match o.get("type") {
        Some(Json::Array(types)) => parse_union(o, types),
        Some(t) if t.as_str() == Some("object") => parse_object(o, reg),
        Some(t) if t.as_str() == Some("array") => parse_array(o, reg),
        Some(t) => Ok(TsType::new(
            Kind::Scalar(t.clone()),
            Some(o),
            scalar_constraint_keys(t),
        )),
        None if o.is_empty() => Ok(TsType::any()),
        None => Err(renderer_error(format!(
            "Invalid JSON Schema object: {}",
            py_str(schema)
        ))),
    }
}

/// The constraints a scalar type documents (`allowed_constraint_keys`).
fn scalar_constraint_keys(t: &Json) -> &'static [&'static str] {
    match t.as_str() {
        Some("string") => &["maxLength", "minLength", "pattern"],
        Some("number" | "integer") => &["maximum", "minimum"],
        _ => &[],
    }
}

/// `_ParameterTypeRef`: resolved when parsed (an unknown `$defs` name fails here).
fn parse_ref(o: &Map<String, Json>, r: &Json, reg: &mut Registry) -> R<TsType> {
    let resolved = reg.resolve(r)?;
    let resolved = resolved
        .as_object()
        .ok_or_else(|| renderer_error("a $ref must name an object schema"))?;
    let name = if resolved.get("$self_ref").is_some_and(py_truthy) {
        "parameters".to_owned()
    } else {
        // `resolve` accepted it, so it is a string.
        last_segment(r.as_str().unwrap_or_default()).to_owned()
    };
    Ok(TsType::new(Kind::Ref(name), Some(o), &[]))
}

/// `_ParameterTypeUnion`: a list `type`, each name mapped to TypeScript.
fn parse_union(o: &Map<String, Json>, types: &[Json]) -> R<TsType> {
    let mut names = Vec::new();
    for t in types {
        names.push(match t.as_str() {
            Some("string") => "string",
            Some("number" | "integer") => "number",
            Some("boolean") => "boolean",
            Some("null") => "null",
            Some("object") => "{}",
            Some("array") => "Array<any>",
            _ => return Err(renderer_error(format!("KeyError: {}", py_repr(t)))),
        });
    }
    Ok(TsType::new(Kind::Union(names), Some(o), &[]))
}

/// `_ParameterTypeArray`: a falsy `items` means `any`.
fn parse_array(o: &Map<String, Json>, reg: &mut Registry) -> R<TsType> {
    let item = match o.get("items") {
        Some(items) if py_truthy(items) => parse_type(items, reg)?,
        _ => TsType::any(),
    };
    Ok(TsType::new(
        Kind::Array(Box::new(item)),
        Some(o),
        &["minItems", "maxItems"],
    ))
}

/// `_ParameterTypeObject`: registers its `$defs`, then parses `additionalProperties` and
/// `properties` (in that order, as later `$ref`s may need the definitions).
fn parse_object(o: &Map<String, Json>, reg: &mut Registry) -> R<TsType> {
    let mut obj = ObjectType {
        properties: Vec::new(),
        additional: Additional::Absent,
    };
    if o.is_empty() {
        return Ok(TsType::new(Kind::Object(obj), Some(o), &[]));
    }
    if let Some(defs) = o.get("$defs") {
        reg.register(defs)?;
    }
    obj.additional = match o.get("additionalProperties") {
        None | Some(Json::Null) => Additional::Absent,
        Some(Json::Bool(true)) => Additional::Any,
        Some(Json::Bool(false)) => Additional::Never,
        Some(s @ Json::Object(_)) => Additional::Schema(Box::new(parse_type(s, reg)?)),
        Some(other) => Additional::Invalid(other.clone()),
    };
    if let Some(props) = o.get("properties") {
        obj.properties = parse_properties(o, props, reg)?;
    }
    Ok(TsType::new(Kind::Object(obj), Some(o), &[]))
}

/// The fields of `properties`; those not in `required` are optional.
fn parse_properties(o: &Map<String, Json>, props: &Json, reg: &mut Registry) -> R<Vec<Parameter>> {
    let props = props
        .as_object()
        .ok_or_else(|| renderer_error("\"properties\" must be an object"))?;
    let required = match o.get("required") {
        Some(r) => py_iter(r)?,
        None => Vec::new(),
    };
    // `set(required)`: its members must be hashable.
    if required.iter().any(|r| r.is_array() || r.is_object()) {
        return Err(renderer_error("unhashable type in \"required\""));
    }
    let mut out = Vec::new();
    for (name, prop) in props {
        out.push(Parameter {
            name: name.clone(),
            ty: parse_type(prop, reg)?,
            optional: !required.iter().any(|r| r.as_str() == Some(name)),
            default: prop.get("default").filter(|d| !d.is_null()).cloned(),
        });
    }
    Ok(out)
}

/// `_ParameterTypeEnum`'s check of the values against a declared `type` (one type, or
/// one type and `null`).
fn check_enum(o: &Map<String, Json>, values: &Json) -> R<()> {
    let Some(declared) = o.get("type") else {
        return Ok(());
    };
    let ty = match declared {
        Json::Array(ts) => match ts.as_slice() {
            [t] => t,
            [a, b] if ts.iter().any(|t| t.as_str() == Some("null")) => {
                if a.as_str() != Some("null") {
                    a
                } else {
                    b
                }
            }
            _ => {
                return Err(renderer_error(format!(
                    "Enum type {} is not supported",
                    py_str(declared)
                )))
            }
        },
        t => t,
    };
    for v in py_iter(values)? {
        check_enum_value(ty.as_str(), &v)?;
    }
    Ok(())
}

/// One enum value against its declared type (Python's `isinstance`, where `bool` is an
/// `int`); null always passes.
fn check_enum_value(ty: Option<&str>, v: &Json) -> R<()> {
    let is_int = v.is_boolean() || v.is_i64() || v.is_u64();
    let (ok, what) = match ty {
        _ if v.is_null() => (true, ""),
        Some("string") => (v.is_string(), "a string"),
        Some("number") => (v.is_boolean() || v.is_number(), "a number"),
        Some("integer") => (is_int, "an integer"),
        Some("boolean") => (v.is_boolean(), "a boolean"),
        _ => (true, ""),
    };
    if ok {
        Ok(())
    } else {
        Err(renderer_error(format!(
            "Enum value {} is not {what}",
            py_str(v)
        )))
    }
}

/// `_openai_function_to_typescript_style`: `$defs` as interfaces, the description as
/// comments, then `type name = (_: {...}) => any;`.
fn function_to_typescript(function: &Json) -> R<String> {
    let f = function
        .as_object()
        .ok_or_else(|| renderer_error("a tool must be an object"))?;
    let mut reg = Registry::default();
    let empty = Json::Object(Map::new());
    let parameters = f
        .get("parameters")
        .filter(|p| py_truthy(p))
        .unwrap_or(&empty);
    let parameters = parameters
        .as_object()
        .ok_or_else(|| renderer_error("a tool's \"parameters\" must be an object"))?;
    let parsed = parse_object(parameters, &mut reg)?;
    let Kind::Object(root) = &parsed.kind else {
        return Err(renderer_error("parameters did not parse as an object"));
    };

    let mut interfaces = Vec::new();
    let self_ref = reg.has_self_ref;
    if self_ref {
        interfaces.push(self_ref_interface(root)?);
    }
    // Definitions registered while these are parsed are not rendered (the Python iterates
    // a copy).
    let definitions = reg.definitions.clone();
    for (name, schema) in &definitions {
        interfaces.push(definition_interface(name, schema, &mut reg)?);
    }

    let name = f.get("name").map_or_else(|| "function".to_owned(), py_str);
    let type_def = if self_ref {
        format!("type {name} = (_: parameters) => any;")
    } else {
        format!("type {name} = (_: {}) => any;", root.to_ts("")?)
    };
    let description = match f.get("description") {
        Some(d) if py_truthy(d) => format_description(description_text(d)?, ""),
        _ => String::new(),
    };
    let pieces = [interfaces.join("\n"), description, type_def];
    Ok(pieces
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("\n"))
}

/// `interface parameters {...}` for parameters that refer to themselves: the fields in
/// schema order, without `additionalProperties`.
fn self_ref_interface(root: &ObjectType) -> R<String> {
    let mut fields = Vec::new();
    for p in &root.properties {
        fields.push(p.to_ts(TS_INDENT)?);
    }
    let body = if fields.is_empty() {
        String::new()
    } else {
        format!("\n{}\n", fields.join(TS_FIELD_DELIMITER))
    };
    Ok(format!("interface parameters {{{body}}}"))
}

/// `interface Name {...}` for one `$defs` entry, after its description.
fn definition_interface(name: &str, schema: &Json, reg: &mut Registry) -> R<String> {
    let ty = parse_type(schema, reg)?;
    let body = ty.to_ts("")?;
    let described = schema
        .as_object()
        .ok_or_else(|| renderer_error(format!("$defs entry {name:?} must be an object")))?
        .get("description")
        .filter(|d| py_truthy(d));
    let description = match described {
        Some(d) => format!("{}\n", format_description(description_text(d)?, "")),
        None => String::new(),
    };
    Ok(format!("{description}interface {name} {body}"))
}

/// A description, which the Python splits into lines (so it must be a string).
fn description_text(d: &Json) -> R<&str> {
    d.as_str()
        .ok_or_else(|| renderer_error("a description must be a string"))
}

/// `_format_description`: each non-empty line as `{indent}// line`.
fn format_description(description: &str, indent: &str) -> String {
    description
        .split('\n')
        .map(|line| {
            if line.is_empty() {
                String::new()
            } else {
                format!("{indent}// {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Iterating a value as Python does: a list's items, a string's characters, a dict's
/// keys; anything else is not iterable.
fn py_iter(v: &Json) -> R<Vec<Json>> {
    match v {
        Json::Array(a) => Ok(a.clone()),
        Json::String(s) => Ok(s.chars().map(|c| Json::from(c.to_string())).collect()),
        Json::Object(o) => Ok(o.keys().map(|k| Json::from(k.as_str())).collect()),
        other => Err(renderer_error(format!(
            "'{}' object is not iterable",
            py_type_name(other)
        ))),
    }
}

fn py_type_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "NoneType",
        Json::Bool(_) => "bool",
        Json::Number(n) if n.is_f64() => "float",
        Json::Number(_) => "int",
        Json::String(_) => "str",
        Json::Array(_) => "list",
        Json::Object(_) => "dict",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ts(tool: Json) -> String {
        encode_tools_to_typescript_style(&[json!({"type": "function", "function": tool})])
            .expect("encodes")
    }

    #[test]
    fn orders_required_fields_first_and_comments_constraints() {
        let out = ts(json!({
            "name": "search",
            "description": "Search.\nTwo lines.",
            "parameters": {
                "type": "object",
                "properties": {
                    "z": {"type": "integer", "minimum": 1, "description": "count"},
                    "q": {"type": "string", "maxLength": 9},
                    "tags": {"type": "array", "items": {"type": "string", "description": "t"}},
                    "mode": {"enum": ["a", 1, null], "default": "a"}
                },
                "required": ["z", "q"]
            }
        }));
        assert_eq!(
            out,
            "# Tools\n\n## functions\nnamespace functions {\n// Search.\n// Two lines.\n\
             type search = (_: {\n  // maxLength: 9\n  q: string,\n  // count\n  // minimum: 1\n  \
             z: number,\n  // Default: \"a\"\n  mode?: \"a\" | 1 | None,\n  tags?: Array<\n    \
             // t\n    string\n  >\n}) => any;\n}\n"
        );
    }

    #[test]
    fn self_references_and_definitions_become_interfaces() {
        let out = ts(json!({
            "name": "tree",
            "parameters": {
                "type": "object",
                "$defs": {"Leaf": {"type": "object", "description": "A leaf",
                                   "properties": {"v": {"type": "number"}}}},
                "properties": {"child": {"$ref": "#"}, "leaf": {"$ref": "#/$defs/Leaf"}}
            }
        }));
        assert_eq!(
            out,
            "# Tools\n\n## functions\nnamespace functions {\ninterface parameters {\n  \
             child?: parameters,\n  leaf?: Leaf\n}\n// A leaf\ninterface Leaf {\n  v?: number\n}\n\
             type tree = (_: parameters) => any;\n}\n"
        );
    }

    #[test]
    fn refuses_what_the_python_refuses() {
        let bad = |params: Json| {
            encode_tools_to_typescript_style(&[json!({"type": "function",
                "function": {"name": "f", "parameters": params}})])
            .is_err()
        };
        assert!(bad(
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/X"}}})
        ));
        assert!(bad(
            json!({"type": "object", "properties": {"a": {"enum": [1], "type": "string"}}})
        ));
        assert!(bad(
            json!({"type": "object", "properties": {"a": {"type": ["x"]}}})
        ));
        assert!(bad(
            json!({"type": "object", "properties": {"a": {"foo": 1}}})
        ));
        assert!(bad(json!({"type": "object", "additionalProperties": 3})));
        // The root's own description is never printed, so any value passes.
        assert!(!bad(json!({"type": "object", "description": 3})));
    }

    #[test]
    fn repr_follows_python() {
        assert_eq!(
            py_repr(&json!([1, 2.5, "it's", null, true])),
            "[1, 2.5, \"it's\", None, True]"
        );
        assert_eq!(py_repr(&json!({"a": "x\ny"})), "{'a': 'x\\ny'}");
    }
}
