//! Chat templates: `tokenizer_config.json`'s Jinja `chat_template`, rendered with
//! MiniJinja set up the way `transformers` sets up Jinja2 (`trim_blocks`,
//! `lstrip_blocks`, loop controls, Python string methods, its `tojson`,
//! `raise_exception` and `strftime_now`), so that the output is identical to
//! `apply_chat_template(..., tokenize=False)`.

use std::collections::BTreeMap;

use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, Error, ErrorKind};

use super::{Tokenizer, TokenizerError};
use crate::py_json::{self, Style, Value as PyValue};
use tinker_support::input::InputError;

/// The templates of a tokenizer: one default, and/or named ones (`tool_use`, …).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatTemplates {
    default: Option<String>,
    named: BTreeMap<String, String>,
}

impl ChatTemplates {
    /// Reads `chat_template` from a config: a string, or a list of `{name, template}`.
    pub(crate) fn from_config_value(v: Option<&serde_json::Value>) -> Result<Self, InputError> {
        match v {
            None | Some(serde_json::Value::Null) => Ok(Self::default()),
            Some(serde_json::Value::String(s)) => Ok(ChatTemplates {
                default: Some(s.clone()),
                named: BTreeMap::new(),
            }),
            Some(serde_json::Value::Array(list)) => {
                let mut named = BTreeMap::new();
                for (i, t) in list.iter().enumerate() {
                    let name = t.get("name").and_then(|n| n.as_str());
                    let template = t.get("template").and_then(|n| n.as_str());
                    match (name, template) {
                        (Some(n), Some(tpl)) => {
                            named.insert(n.to_owned(), tpl.to_owned());
                        }
                        _ => {
                            return Err(InputError::type_error(
                                format!("config.chat_template[{i}]"),
                                "must be an object with string `name` and `template`",
                            ))
                        }
                    }
                }
                Ok(ChatTemplates {
                    default: named.get("default").cloned(),
                    named,
                })
            }
            Some(_) => Err(InputError::type_error(
                "config.chat_template",
                "must be a string or a list of {name, template}",
            )),
        }
    }

    /// The default template, if any.
    pub fn default_template(&self) -> Option<&str> {
        self.default.as_deref()
    }

    /// Names of the named templates.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.named.keys().map(String::as_str)
    }

    pub(crate) fn set_default(&mut self, t: String) {
        self.default = Some(t);
    }

    /// The template `transformers.get_chat_template` would pick.
    fn pick<'a>(
        &'a self,
        requested: Option<&'a str>,
        has_tools: bool,
    ) -> Result<&'a str, TokenizerError> {
        if let Some(r) = requested {
            if let Some(t) = self.named.get(r) {
                return Ok(t);
            }
            // Not a name: the template source itself.
            return Ok(r);
        }
        if has_tools {
            if let Some(t) = self.named.get("tool_use") {
                return Ok(t);
            }
        }
        self.default.as_deref().ok_or_else(|| {
            TokenizerError::Input(InputError::type_error(
                "chat_template",
                "this tokenizer has no chat template: load it with its tokenizer_config.json, or pass `chat_template` (also a loader option)",
            ))
        })
    }
}

/// Options of [`Tokenizer::apply_chat_template`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatTemplateOptions {
    /// Append the header that starts an assistant turn.
    pub add_generation_prompt: bool,
    /// Leave the final message open (cut the rendering right after its content).
    pub continue_final_message: bool,
    /// Tool definitions (JSON schema objects), passed as `tools`.
    pub tools: Option<serde_json::Value>,
    /// Documents for retrieval templates, passed as `documents`.
    pub documents: Option<serde_json::Value>,
    /// A template name (from a config with several) or the template source itself.
    pub chat_template: Option<String>,
    /// More template variables (Python's `**kwargs`, e.g. `enable_thinking`).
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// "Now" for `strftime_now`, in seconds since the Unix epoch (UTC). Without it,
    /// a template that calls `strftime_now` fails: the core reads no clock.
    pub now_unix_secs: Option<i64>,
}

fn tojson(v: Value, kwargs: Kwargs) -> Result<String, Error> {
    let indent: Option<Value> = kwargs.get("indent")?;
    let sort: Option<bool> = kwargs.get("sort_keys")?;
    let separators: Option<Value> = kwargs.get("separators")?;
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    kwargs.assert_all_used()?;
    let indent = match indent {
        None => None,
        Some(i) if i.is_none() => None,
        Some(i) => Some(match i.as_i64() {
            Some(n) => " ".repeat(n.max(0) as usize),
            None => i.as_str().unwrap_or_default().to_owned(),
        }),
    };
    let default_seps = if indent.is_some() {
        (",", ": ")
    } else {
        (", ", ": ")
    };
    let seps_owned: Option<(String, String)> = match separators {
        Some(s) if !s.is_none() => {
            let items: Vec<Value> = s.try_iter()?.collect();
            match items.as_slice() {
                [a, b] => Some((a.to_string(), b.to_string())),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "tojson: separators must be a pair",
                    ))
                }
            }
        }
        _ => None,
    };
    let seps = seps_owned
        .as_ref()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .unwrap_or(default_seps);
    let style = Style {
        indent: indent.as_deref(),
        seps,
        ensure_ascii: ensure_ascii.unwrap_or(false),
    };
    Ok(py_json::dumps_with(
        &PyValue::from_template(&v, sort.unwrap_or(false))?,
        style,
    ))
}

/// A minimal `strftime` for `strftime_now` (UTC).
fn strftime(secs: i64, fmt: &str) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, mi, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = [
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
    ];
    let wd = DAYS[days.rem_euclid(7) as usize];
    let month = MONTHS[(m - 1) as usize];
    let mut out = String::new();
    let mut it = fmt.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('Y') => out.push_str(&y.to_string()),
            Some('y') => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            Some('b') => out.push_str(&month[..3]),
            Some('B') => out.push_str(month),
            Some('a') => out.push_str(&wd[..3]),
            Some('A') => out.push_str(wd),
            Some('H') => out.push_str(&format!("{h:02}")),
            Some('M') => out.push_str(&format!("{mi:02}")),
            Some('S') => out.push_str(&format!("{s:02}")),
            Some('j') => out.push_str(&format!("{:03}", doy_of(y, m, d))),
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}

fn doy_of(y: i64, m: i64, d: i64) -> i64 {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let cum = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    cum[(m - 1) as usize] + d + i64::from(leap && m > 2)
}

fn environment(now: Option<i64>) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .expect("default delimiters"),
    );
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_filter("tojson", tojson);
    env.add_function("raise_exception", |msg: String| -> Result<Value, Error> {
        Err(Error::new(ErrorKind::InvalidOperation, msg))
    });
    env.add_function(
        "strftime_now",
        move |fmt: String| -> Result<String, Error> {
            match now {
                Some(t) => Ok(strftime(t, &fmt)),
                None => Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "strftime_now needs the current time (pass `now`)",
                )),
            }
        },
    );
    env
}

fn describe(e: &Error) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

pub(crate) fn render(
    tok: &Tokenizer,
    messages: &serde_json::Value,
    opts: &ChatTemplateOptions,
) -> Result<String, TokenizerError> {
    let list = checked_messages(messages, opts)?;
    let has_tools = opts.tools.as_ref().is_some_and(|t| !t.is_null());
    let source = tok
        .chat_templates()
        .pick(opts.chat_template.as_deref(), has_tools)?;
    let ctx = template_context(tok, messages, opts);
    let env = environment(opts.now_unix_secs);
    let template = env
        .template_from_str(source)
        .map_err(|e| TokenizerError::Template(describe(&e)))?;
    let mut rendered = template
        .render(Value::from(minijinja::value::Serde(&ctx)))
        .map_err(|e| TokenizerError::Template(describe(&e)))?;

    if opts.continue_final_message {
        continue_final_message(list, &mut rendered)?;
    }
    Ok(rendered)
}

/// The messages as a list, each an object with a string `role`, and the options'
/// consistency, checked before anything renders.
fn checked_messages<'a>(
    messages: &'a serde_json::Value,
    opts: &ChatTemplateOptions,
) -> Result<&'a [serde_json::Value], TokenizerError> {
    let Some(list) = messages.as_array() else {
        return Err(InputError::type_error("messages", "must be an array of messages").into());
    };
    for (i, m) in list.iter().enumerate() {
        if !m.is_object() {
            return Err(InputError::type_error(
                format!("messages[{i}]"),
                "must be an object with `role` and `content`",
            )
            .into());
        }
        if !m.get("role").is_some_and(|r| r.is_string()) {
            return Err(InputError::type_error(
                format!("messages[{i}].role"),
                format!(
                    "must be a string, got {}",
                    m.get("role")
                        .map_or("undefined".to_string(), |v| v.to_string())
                ),
            )
            .into());
        }
    }
    if opts.add_generation_prompt && opts.continue_final_message {
        return Err(InputError::type_error(
            "continue_final_message",
            "cannot be used with add_generation_prompt: the final message is either continued or followed by a new turn",
        )
        .into());
    }
    Ok(list)
}

/// What the template sees: transformers passes the special tokens map first, then its own
/// arguments, then kwargs.
fn template_context(
    tok: &Tokenizer,
    messages: &serde_json::Value,
    opts: &ChatTemplateOptions,
) -> serde_json::Map<String, serde_json::Value> {
    let mut ctx = serde_json::Map::new();
    let sp = tok.special_tokens();
    for (k, v) in [
        ("bos_token", &sp.bos),
        ("eos_token", &sp.eos),
        ("unk_token", &sp.unk),
        ("pad_token", &sp.pad),
    ] {
        if let Some(v) = v {
            ctx.insert(k.into(), v.clone().into());
        }
    }
    if !sp.additional.is_empty() {
        ctx.insert(
            "additional_special_tokens".into(),
            sp.additional.clone().into(),
        );
    }
    ctx.insert("messages".into(), messages.clone());
    ctx.insert(
        "tools".into(),
        opts.tools.clone().unwrap_or(serde_json::Value::Null),
    );
    ctx.insert(
        "documents".into(),
        opts.documents.clone().unwrap_or(serde_json::Value::Null),
    );
    ctx.insert(
        "add_generation_prompt".into(),
        opts.add_generation_prompt.into(),
    );
    for (k, v) in &opts.extra {
        ctx.insert(k.clone(), v.clone());
    }
    ctx
}

/// `continue_final_message`: the rendered chat cut after the final message's text, as
/// transformers cuts it.
fn continue_final_message(
    list: &[serde_json::Value],
    rendered: &mut String,
) -> Result<(), TokenizerError> {
    let last = list.last().ok_or_else(|| {
        TokenizerError::Input(InputError::type_error(
            "messages",
            "continue_final_message needs at least one message",
        ))
    })?;
    let content = match last.get("content") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(parts)) => parts
            .iter()
            .rev()
            .find_map(|p| p.get("text").and_then(|t| t.as_str()).map(str::to_owned))
            .ok_or_else(|| {
                TokenizerError::Input(InputError::type_error(
                    format!("messages[{}].content", list.len() - 1),
                    "continue_final_message needs a text part in the final message",
                ))
            })?,
        _ => {
            return Err(InputError::type_error(
                format!("messages[{}].content", list.len() - 1),
                "continue_final_message needs text content",
            )
            .into())
        }
    };
    let stripped = py_strip(&content);
    let Some(loc) = rendered.rfind(stripped) else {
        return Err(TokenizerError::Template(
            "continue_final_message is set but the final message does not appear in the rendered chat".into(),
        ));
    };
    let lstripped = py_lstrip(&content);
    let end = if rendered[loc..].starts_with(lstripped) && lstripped == content {
        loc + lstripped.len()
    } else {
        loc + stripped.len()
    };
    rendered.truncate(end);
    Ok(())
}

fn py_ws(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}
fn py_strip(s: &str) -> &str {
    s.trim_matches(py_ws)
}
fn py_lstrip(s: &str) -> &str {
    s.trim_start_matches(py_ws)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::py_json::py_float;

    #[test]
    fn python_float_repr() {
        for (f, s) in [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e16, "1.5e+16"),
            (1e15, "1000000000000000.0"),
            (-2.5, "-2.5"),
            (123.456, "123.456"),
        ] {
            assert_eq!(py_float(f), s, "{f}");
        }
    }

    #[test]
    fn strftime_formats_utc() {
        // 2024-07-23 12:34:56 UTC
        assert_eq!(
            strftime(1_721_738_096, "%d %b %Y %H:%M:%S %A %j"),
            "23 Jul 2024 12:34:56 Tuesday 205"
        );
        assert_eq!(strftime(0, "%Y-%m-%d %B"), "1970-01-01 January");
    }

    #[test]
    fn tojson_matches_python_json_dumps() {
        let env = environment(None);
        let v = serde_json::json!({"b": 1, "a": [true, null, "x\"\n\u{1}é"], "c": {}, "d": 1.5});
        let out = env
            .render_str(
                "{{ v | tojson }}|{{ v | tojson(indent=2) }}",
                Value::from(minijinja::value::Serde(serde_json::json!({"v": v}))),
            )
            .unwrap();
        assert_eq!(
            out,
            "{\"b\": 1, \"a\": [true, null, \"x\\\"\\n\\u0001é\"], \"c\": {}, \"d\": 1.5}|{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null,\n    \"x\\\"\\n\\u0001é\"\n  ],\n  \"c\": {},\n  \"d\": 1.5\n}"
        );
    }
}
