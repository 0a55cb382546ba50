//! Renderer-level tests that span families (each family's own tests sit in its module).

use super::*;
use tinker_tokenizer::TokenizerError;

#[test]
fn messages_are_validated_with_field_paths() {
    let err = |v: serde_json::Value| Message::list_from_json(&v).unwrap_err().field;
    assert_eq!(err(serde_json::json!({})), "messages");
    assert_eq!(err(serde_json::json!([1])), "messages[0]");
    assert_eq!(
        err(serde_json::json!([{"role": "user", "content": 3}])),
        "messages[0].content"
    );
    assert_eq!(
        err(serde_json::json!([{"role": "user", "content": [{"type": "video"}]}])),
        "messages[0].content[0].type"
    );
    assert_eq!(
        err(
            serde_json::json!([{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": 3}}]}])
        ),
        "messages[0].tool_calls[0].function.arguments"
    );
    assert_eq!(
        TrainOnWhat::parse("x", "train_on_what").unwrap_err().field,
        "train_on_what"
    );
    let opts = RendererOptions::default();
    let input = |e: TokenizerError| match e {
        TokenizerError::Input(i) => i,
        other => panic!("expected an input error, got {other:?}"),
    };
    assert_eq!(input(Renderer::new("x", &opts).unwrap_err()).field, "name");
    // An unknown model names what is known, for its organisation or overall.
    let e = input(Renderer::for_model("Qwen/Qwen9", &opts).unwrap_err());
    assert!(e.message.contains("Qwen3-8B"), "{e}");
    let e = input(Renderer::for_model("acme/x", &opts).unwrap_err());
    assert!(e.message.contains("deepseek-ai"), "{e}");
    // A name the cookbook knows but cannot build is refused, saying why.
    assert!(matches!(
        Renderer::new("kimi_k31_pro_max_reasoning", &opts),
        Err(TokenizerError::Renderer(m)) if m.contains("tml-renderers")
    ));
}

/// The one `repr` of the renderers against Python's own: every code point Python's Unicode
/// tables assign, alone, and the quote choices, in the strings and inside containers
/// (`repr(json.loads(text))`).
#[test]
fn repr_is_pythons() {
    let mut texts: Vec<String> = ["it's", "say \"hi\"", "both ' and \"", "", "a\\b\tc\nd\re"]
        .map(String::from)
        .into();
    // The planes where code points are assigned, and private use's ends.
    let planes = (0..0x3_2000).chain(0xe_0000..0xe_0200);
    let private = [0xf_0000, 0xf_fffd, 0x10_0000, 0x10_fffd];
    texts.extend(
        planes
            .chain(private)
            .filter_map(char::from_u32)
            .map(String::from),
    );
    let values: Vec<Json> = texts
        .iter()
        .map(|t| serde_json::json!(t))
        .chain([serde_json::json!({"k\u{200b}": [1, 2.5, null, true, "\u{378}x", {"n": 1e-7}]})])
        .collect();
    let input: String = values.iter().map(|v| format!("{v}\n")).collect();
    let script = "import sys, json, unicodedata as u\nfor line in sys.stdin:\n v = json.loads(line)\n known = not isinstance(v, str) or all(u.category(c) not in ('Cn', 'Cs') for c in v)\n print(json.dumps(repr(v) if known else None))";
    let reprs: Vec<Option<String>> = python_lines(script, &input);
    assert_eq!(reprs.len(), values.len());
    let mut compared = 0;
    for (v, expected) in values.iter().zip(&reprs) {
        if let Some(expected) = expected {
            assert_eq!(&base::py_repr(v), expected, "repr({v})");
            compared += 1;
        }
    }
    assert!(compared > 140_000, "only {compared} values compared");
}

/// The one `json.loads` of the renderers against Python's: what it accepts (written back by
/// `json.dumps`), and the class and message of what it refuses, over hand-picked edges and
/// random texts from JSON's alphabet.
#[test]
fn json_loads_is_pythons() {
    // An unoptimised build's frames are several times a release build's: the nesting
    // Python allows (about 980) needs more than a test thread's 2 MiB here.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(json_loads_cases)
        .expect("a thread")
        .join()
        .expect("the cases pass");
}

fn json_loads_cases() {
    use py_json::Error;
    let mut texts: Vec<String> = [
        "",
        " ",
        "1",
        "-0",
        "01",
        "1.5e3",
        "1E-7",
        "-",
        "1.",
        ".5",
        "NaN",
        "-Infinity",
        "Infinity",
        "nan",
        "true",
        "tru",
        "null ",
        "[1, 2,]",
        "{\"a\": 1, \"a\": 2, \"b\": 3}",
        "{\"a\" 1}",
        "{'a': 1}",
        "\"\\ud83d\\ude00\"",
        "\"\\x41\"",
        "\"tab\there\"",
        "\"\\u00e9\"",
        "[1] [2]",
        "123456789012345678901234567890",
        "{\"k\": [null, {}]}",
    ]
    .map(String::from)
    .into();
    texts.push(format!("{}0", "9".repeat(5000)));
    texts.push(format!("{}{}", "[".repeat(100), "]".repeat(100)));
    texts.push("[".repeat(5000));
    let alphabet: Vec<char> = "{}[]\",:0123456789.eE+-tfnrulaNI \\u".chars().collect();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..4000 {
        let len = (state >> 60) as usize + 1;
        let text: String = (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                alphabet[(state >> 33) as usize % alphabet.len()]
            })
            .collect();
        texts.push(text);
    }
    let input: String = texts
        .iter()
        .map(|t| format!("{}\n", serde_json::json!(t)))
        .collect();
    let script = "import sys, json\nsys.set_int_max_str_digits(4300)\nfor line in sys.stdin:\n t = json.loads(line)\n try: out = ['ok', json.dumps(json.loads(t))]\n except json.JSONDecodeError as e: out = ['JSONDecodeError', str(e)]\n except RecursionError as e: out = ['RecursionError', '']\n except ValueError as e: out = ['ValueError', str(e)]\n print(json.dumps(out))";
    let answers: Vec<Vec<String>> = python_lines(script, &input);
    assert_eq!(answers.len(), texts.len());
    for (text, answer) in texts.iter().zip(&answers) {
        let ours = match py_json::loads(text) {
            Ok(v) => ["ok".to_owned(), py_json::dumps(&v, true)],
            Err(Error::Decode(m)) => ["JSONDecodeError".to_owned(), m],
            Err(Error::Recursion(_)) => ["RecursionError".to_owned(), String::new()],
            Err(Error::Value(m)) => ["ValueError".to_owned(), m],
        };
        assert_eq!(&ours[..], &answer[..], "json.loads({text:?})");
    }
    // A lone surrogate, which Python keeps and a Rust string cannot hold, becomes U+FFFD.
    let lone = py_json::loads("\"a\\udc00\"").map(|v| py_json::dumps(&v, false));
    assert_eq!(lone, Ok("\"a\u{fffd}\"".to_owned()));
    // As a JSON value: what one cannot hold is refused, naming it.
    assert_eq!(
        base::json_loads("[1, NaN]").unwrap_err(),
        "NaN is not a JSON number"
    );
    assert_eq!(
        base::json_loads("{\"a\": 1, \"a\": 2}").unwrap(),
        serde_json::json!({"a": 2})
    );
}

/// Runs a Python oracle over `input` (its stdin) and reads a JSON value from each line it
/// prints.
fn python_lines<T: serde::de::DeserializeOwned>(script: &str, input: &str) -> Vec<T> {
    tinker_support::testing::oracle("python3", &["-c", script], input)
        .iter()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}
