//! The completers' rules (`completers.py`): how many tokens `TinkerTokenCompleter` asks
//! for. The completers themselves are a sample call each (pkg/cookbook/cookbook.js).

use tinker_support::input::InputError;

/// `TinkerTokenCompleter.__call__`'s `max_tokens`: the per-call cap combined with the
/// completer's by the minimum, then capped so that the prompt and the completion fit the
/// context window (an error when the prompt leaves no room).
pub fn max_tokens(
    own: u64,
    per_call: Option<u64>,
    context_window: Option<u64>,
    prompt_length: u64,
) -> Result<u64, InputError> {
    let n = per_call.map_or(own, |p| own.min(p));
    match context_window {
        None => Ok(n),
        Some(w) if w > prompt_length => Ok(n.min(w - prompt_length)),
        Some(w) => Err(InputError::range_error(
            "context_window",
            format!("Prompt length ({prompt_length}) exceeds context window ({w}). No room for generation."),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_cap_wins_and_a_full_window_is_an_error() {
        let cases = [
            ((512, None, None, 100), Ok(512)),
            ((512, Some(64), None, 100), Ok(64)),
            ((512, Some(1024), None, 100), Ok(512)),
            ((512, None, Some(400), 100), Ok(300)),
            ((512, Some(16), Some(400), 100), Ok(16)),
            ((512, None, Some(101), 100), Ok(1)),
            ((512, None, Some(100), 100), Err(())),
            ((512, None, Some(50), 100), Err(())),
        ];
        for ((own, per_call, window, len), want) in cases {
            let got = max_tokens(own, per_call, window, len).map_err(drop);
            assert_eq!(got, want, "{own} {per_call:?} {window:?} {len}");
        }
        let e = max_tokens(8, None, Some(10), 12).unwrap_err().to_string();
        assert!(
            e.contains("Prompt length (12) exceeds context window (10)"),
            "{e}"
        );
    }
}
