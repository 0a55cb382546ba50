//! The cookbook's checkpoint records (`checkpoint_utils.py`): the line
//! `save_checkpoint_async` appends to `checkpoints.jsonl` for each save, and the record a
//! run resumes from (`get_last_checkpoint`).

use serde_json::{Map, Value as Json};
use tinker_support::input::InputError;
use tinker_tokenizer::py_json::{self, Value as Py};

/// `CheckpointRecord`'s own fields, in the order `to_dict` writes them; any other key
/// is kept after them in the order it came.
const KNOWN: [&str; 6] = [
    "name",
    "batch",
    "epoch",
    "final",
    "state_path",
    "sampler_path",
];

/// The record of a save named `name` (`CheckpointRecord.from_dict({"name": name,
/// **loop_state, **paths}).to_dict()`): the known fields first (those that are not
/// null), then the other keys of `loop_state` and `paths` in order.
pub fn record(
    name: &str,
    loop_state: &Map<String, Json>,
    paths: &Map<String, Json>,
) -> Map<String, Json> {
    let mut merged = Map::new();
    merged.insert("name".into(), Json::String(name.into()));
    for (k, v) in loop_state.iter().chain(paths) {
        merged.insert(k.clone(), v.clone());
    }
    normalized(&merged)
}

/// `from_dict(d).to_dict()`.
fn normalized(d: &Map<String, Json>) -> Map<String, Json> {
    let mut out = Map::new();
    for k in KNOWN {
        if let Some(v) = d.get(k).filter(|v| !v.is_null() || k == "name") {
            out.insert(k.into(), v.clone());
        }
    }
    for (k, v) in d {
        if !KNOWN.contains(&k.as_str()) {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// `CheckpointRecord.has(key)`: a known field that is not null, or any other key that is
/// present (even if null).
pub fn has(record: &Map<String, Json>, key: &str) -> bool {
    match record.get(key) {
        Some(v) if KNOWN.contains(&key) => !v.is_null(),
        Some(_) => true,
        None => false,
    }
}

/// The records of a `checkpoints.jsonl` text, one JSON object per line, read as Python's
/// `json.loads` reads them. A line that is not one is refused with its line number (from 1),
/// as the cookbook's reader fails on it.
pub fn parse_records(text: &str) -> Result<Vec<Map<String, Json>>, InputError> {
    text.lines()
        .enumerate()
        .map(
            |(i, line)| match py_json::loads(line).map(|v| v.to_json()) {
                Ok(Ok(Json::Object(m))) if m.contains_key("name") => Ok(normalized(&m)),
                _ => Err(InputError::type_error(
                    format!("checkpoints.jsonl line {}", i + 1),
                    "is not a checkpoint record (a JSON object with a \"name\")",
                )),
            },
        )
        .collect()
}

/// `get_last_checkpoint(log_dir, required_key)`: the last record that has `required_key`
/// (`state_path` to resume training; `sampler_path` to sample).
pub fn last_checkpoint(
    records: &[Map<String, Json>],
    required_key: &str,
) -> Option<Map<String, Json>> {
    records.iter().rev().find(|r| has(r, required_key)).cloned()
}

/// Whether a `metrics.jsonl` row is one `truncate_metrics(from_step)` drops: its `step` is
/// an `int` (Python's: `True` and `False` are 1 and 0) at or after `from_step`. The row is
/// read as `json.loads` reads it (`NaN` metrics included); a row that is not a JSON object,
/// or has no integer `step`, is kept.
fn drops(line: &str, from_step: u64) -> bool {
    let Ok(Py::Object(entries)) = py_json::loads(line) else {
        return false;
    };
    match entries.iter().find(|(k, _)| k == "step").map(|(_, v)| v) {
        Some(Py::Bool(b)) => u64::from(*b) >= from_step,
        Some(Py::Int(digits)) if !digits.starts_with('-') => {
            digits.parse::<u64>().map_or(true, |step| step >= from_step)
        }
        _ => false,
    }
}

/// `TrainingStore.truncate_metrics(from_step)` of a resumed run, given the text of
/// `metrics.jsonl`: `(backup name, kept text)` when rows at or after `from_step` are dropped
/// (the old file is kept as `metrics.jsonl.pre_resume_{from_step:06d}`), `None` otherwise.
pub fn truncate_metrics(text: &str, from_step: u64) -> Option<(String, String)> {
    let kept: Vec<&str> = text.lines().filter(|l| !drops(l, from_step)).collect();
    if kept.len() == text.lines().count() {
        return None;
    }
    let body = kept.iter().map(|l| format!("{l}\n")).collect();
    Some((format!("metrics.jsonl.pre_resume_{from_step:06}"), body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Json) -> Map<String, Json> {
        match v {
            Json::Object(m) => m,
            _ => unreachable!(),
        }
    }

    #[test]
    fn records_put_the_known_fields_first_and_drop_their_nulls() {
        let loop_state =
            obj(json!({"epoch": 0, "batch": 20, "elapsed_tokens": 51234, "rolling": true}));
        let paths = obj(json!({"state_path": "tinker://r/weights/000020"}));
        let r = record("000020", &loop_state, &paths);
        let keys: Vec<&str> = r.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "name",
                "batch",
                "epoch",
                "state_path",
                "elapsed_tokens",
                "rolling"
            ]
        );
        let r = record("x", &obj(json!({"final": null, "batch": 1})), &Map::new());
        assert_eq!(Json::Object(r), json!({"name": "x", "batch": 1}));
    }

    #[test]
    fn the_last_record_with_the_key_is_the_one_resumed() {
        let text = "{\"name\": \"000010\", \"batch\": 10, \"state_path\": \"a\", \"sampler_path\": \"b\"}\n\
                    {\"name\": \"000015\", \"batch\": 15, \"state_path\": \"c\", \"rolling\": true}\n\
                    {\"name\": \"s\", \"sampler_path\": \"d\", \"state_path\": null}\n";
        let records = parse_records(text).unwrap();
        assert_eq!(
            last_checkpoint(&records, "state_path").unwrap()["name"],
            "000015"
        );
        assert_eq!(
            last_checkpoint(&records, "sampler_path").unwrap()["name"],
            "s"
        );
        assert_eq!(
            last_checkpoint(&records, "rolling").unwrap()["name"],
            "000015"
        );
        assert!(last_checkpoint(&records, "final").is_none());
        assert!(last_checkpoint(&[], "state_path").is_none());
        let e = parse_records("{\"name\": \"a\"}\n[1]\n").unwrap_err();
        assert_eq!(e.field, "checkpoints.jsonl line 2");
    }
}
