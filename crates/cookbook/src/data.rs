//! The cookbook's supervised data: conversation files (`FromConversationFileBuilder`) and
//! the order its rows are trained in (`SupervisedDatasetFromHFDataset`), which HuggingFace
//! `datasets` decides with numpy's seeded permutations ([`NumpyRng`]).
//!
//! Rows are kept as JSON; a row's `messages` become a datum through the renderers.

use serde_json::Value as Json;
use tinker_support::input::InputError;

use crate::rng::NumpyRng;

/// The rows of a conversation JSONL file: each line a JSON object with `messages`, as
/// `FromConversationFileBuilder` reads them. A line that is not one is refused with its
/// line number (from 1).
pub fn parse_conversations(text: &str) -> Result<Vec<Json>, InputError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let field = format!("line {}", i + 1);
        let row: Json = tinker_support::json::to_serde(line.trim()).map_err(|e| {
            InputError::type_error(&field, format!("is not JSON ({e}): {}", excerpt(line)))
        })?;
        match row.get("messages") {
            Some(Json::Array(_)) => rows.push(row),
            Some(other) => {
                return Err(InputError::type_error(
                    field + ".messages",
                    format!(
                        "must be a list of messages, got {}",
                        excerpt(&other.to_string())
                    ),
                ))
            }
            None => {
                return Err(InputError::type_error(
                    field,
                    format!(
                        "each line must be an object with a \"messages\" field, got {}",
                        excerpt(line)
                    ),
                ))
            }
        }
    }
    Ok(rows)
}

/// The first 80 characters of `s`, for error messages.
fn excerpt(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// Which rows (indices into the file) are held out and which are trained on: the file
/// shuffled once with `shuffle_seed`, its first `test_size` rows held out when the file
/// has more rows than that (else none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The training rows, in the shuffled order each epoch reshuffles from.
    pub train: Vec<usize>,
    /// The held-out rows (empty: no test set).
    pub test: Vec<usize>,
}

/// `Dataset.shuffle(seed=shuffle_seed)` then `take`/`skip(test_size)`.
pub fn split(rows: usize, test_size: usize, shuffle_seed: u64) -> Split {
    let order = NumpyRng::new(shuffle_seed).permutation(rows);
    if test_size > 0 && rows > test_size {
        Split {
            test: order[..test_size].to_vec(),
            train: order[test_size..].to_vec(),
        }
    } else {
        Split {
            train: order,
            test: Vec::new(),
        }
    }
}

/// The training rows of epoch `epoch` (`set_epoch(seed=epoch)`: the split's training
/// rows shuffled with the epoch's index as the seed, from the unshuffled split each time).
pub fn epoch_order(train: &[usize], epoch: u64) -> Vec<usize> {
    NumpyRng::new(epoch)
        .permutation(train.len())
        .into_iter()
        .map(|i| train[i])
        .collect()
}

/// The rows of batch `index` of an epoch's order (`get_batch`; whole batches only, the
/// remainder is not trained).
pub fn batch(order: &[usize], batch_size: usize, index: usize) -> &[usize] {
    &order[index * batch_size..(index + 1) * batch_size]
}

/// How many whole batches an epoch has (`len(dataset) // batch_size`).
pub fn batches_per_epoch(train_rows: usize, batch_size: usize) -> usize {
    train_rows.checked_div(batch_size).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_that_are_not_conversations_name_their_line() {
        let ok =
            "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n{\"messages\": []}\n";
        assert_eq!(parse_conversations(ok).unwrap().len(), 2);
        for (text, field, says) in [
            ("{\"messages\": []}\n\n", "line 2", "is not JSON"),
            (
                "{\"messages\": []}\n{\"text\": \"x\"}",
                "line 2",
                "\"messages\" field",
            ),
            (
                "{\"messages\": \"hi\"}",
                "line 1.messages",
                "must be a list",
            ),
            ("not json", "line 1", "is not JSON"),
        ] {
            let e = parse_conversations(text).unwrap_err();
            assert_eq!(e.field, field, "{text:?}");
            assert!(e.message.contains(says), "{e}");
        }
    }

    #[test]
    fn the_test_rows_are_held_out_only_when_the_file_has_more() {
        for (rows, test_size, held_out) in [(10, 2, 2), (10, 0, 0), (3, 3, 0), (3, 5, 0), (4, 3, 3)]
        {
            let s = split(rows, test_size, 7);
            assert_eq!(s.test.len(), held_out, "{rows} rows, test_size {test_size}");
            let mut all = [s.test.clone(), s.train.clone()].concat();
            all.sort_unstable();
            assert_eq!(all, (0..rows).collect::<Vec<_>>());
        }
    }

    #[test]
    fn each_epoch_reshuffles_the_same_training_rows() {
        let s = split(20, 4, 3);
        let (e0, e1) = (epoch_order(&s.train, 0), epoch_order(&s.train, 1));
        assert_ne!(e0, e1);
        let (mut a, mut b) = (e0.clone(), e1);
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert_eq!(batches_per_epoch(16, 5), 3);
        assert_eq!(batches_per_epoch(16, 0), 0);
        assert_eq!(batch(&e0, 5, 2), &e0[10..15]);
    }
}
