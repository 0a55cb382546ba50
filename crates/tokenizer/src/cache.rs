//! Which tokenizer a model uses (the Python SDK 0.38 rule), and a single-flight cache so
//! concurrent loads of one tokenizer id load it once.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

/// The HuggingFace id of a model's tokenizer, as the Python SDK 0.38 resolves it
/// (`_load_tokenizer_from_model_info`, with `get_info`'s suffix stripping):
///
/// 1. a `:suffix` is stripped from the model name, and from a server `tokenizer_id`;
/// 2. a server `tokenizer_id` wins;
/// 3. otherwise `meta-llama/Llama-3*` → `thinkingmachineslabinc/meta-llama-3-instruct-tokenizer`
///    (an ungated copy), `org/model/variant` → `org/model`, else the model name;
/// 4. `moonshotai/Kimi-K2.5-Text-Only` loads `moonshotai/Kimi-K2.5`.
///
/// ```
/// use tinker_tokenizer::resolve_tokenizer_id;
/// assert_eq!(resolve_tokenizer_id("Qwen/Qwen3-8B", None), "Qwen/Qwen3-8B");
/// assert_eq!(
///     resolve_tokenizer_id("meta-llama/Llama-3.1-8B", None),
///     "thinkingmachineslabinc/meta-llama-3-instruct-tokenizer"
/// );
/// ```
pub fn resolve_tokenizer_id(model_name: &str, server_tokenizer_id: Option<&str>) -> String {
    let model_name = model_name.split(':').next().unwrap_or_default();
    let id = match server_tokenizer_id {
        // `get_info` strips the suffix only from a non-empty id; an empty one is kept
        // (and is not `None`, so the heuristics do not apply), as in Python.
        Some(t) => {
            if t.is_empty() {
                String::new()
            } else {
                t.split(':').next().unwrap_or_default().to_owned()
            }
        }
        None => {
            if model_name.starts_with("meta-llama/Llama-3") {
                "thinkingmachineslabinc/meta-llama-3-instruct-tokenizer".to_owned()
            } else if model_name.matches('/').count() == 2 {
                let mut it = model_name.splitn(3, '/');
                let org = it.next().unwrap_or_default();
                let model = it.next().unwrap_or_default();
                format!("{org}/{model}")
            } else {
                model_name.to_owned()
            }
        }
    };
    if id == "moonshotai/Kimi-K2.5-Text-Only" {
        return "moonshotai/Kimi-K2.5".to_owned();
    }
    id
}

/// The pinned revision the Python SDK loads for a resolved id (Kimi models with remote
/// code), if any.
pub fn tokenizer_revision(resolved_id: &str) -> Option<&'static str> {
    match resolved_id {
        "moonshotai/Kimi-K2-Thinking" => Some("612681931a8c906ddb349f8ad0f582cb552189cd"),
        "moonshotai/Kimi-K2.5" => Some("4d01dfe0332d63057c186e0b262165819efb6611"),
        "moonshotai/Kimi-K2.6" => Some("b5aabbfb20227ed42becbf5541dbffd213942c58"),
        "moonshotai/Kimi-K3" => Some("f831ab66814297da540d832a5235f8e904f29d06"),
        _ => None,
    }
}

/// The Python SDK's error for an id it has no tokenizer for: `TML/…` and
/// `thinkingmachines/…` ids (Inkling) need `tml_tokenizers`, which is not published, so
/// `get_tokenizer` raises this. (tinker-cookbook tokenizes those models with
/// `tml-renderers`' o200k-based tokenizers instead; `Tokenizer.fromTiktoken` loads them.)
///
/// ```
/// use tinker_tokenizer::{resolve_tokenizer_id, tokenizer_unavailable};
/// let id = resolve_tokenizer_id("thinkingmachines/Inkling", None);
/// assert!(tokenizer_unavailable(&id).is_some());
/// assert!(tokenizer_unavailable("Qwen/Qwen3-8B").is_none());
/// ```
pub fn tokenizer_unavailable(resolved_id: &str) -> Option<&'static str> {
    (resolved_id.starts_with("TML/") || resolved_id.starts_with("thinkingmachines/")).then_some(
        "Thinking Machines models do not support get_tokenizer. Prefer to construct a \
         renderer with tml-renderers instead: https://pypi.org/project/tml-renderers/",
    )
}

enum Slot<V, E> {
    Loading(Vec<Waker>),
    Ready(V),
    Failed(E),
}

/// A single-threaded, keyed, single-flight cache: the first `get_or_load` of a key runs
/// its loader; concurrent callers for that key wait for the same result. A success is
/// kept; a failure is handed to every waiter of that attempt and then forgotten, so a
/// later call retries.
pub struct SingleFlight<K, V, E> {
    slots: Rc<RefCell<HashMap<K, Slot<V, E>>>>,
}

impl<K, V, E> Clone for SingleFlight<K, V, E> {
    fn clone(&self) -> Self {
        SingleFlight {
            slots: self.slots.clone(),
        }
    }
}

impl<K, V, E> Default for SingleFlight<K, V, E> {
    fn default() -> Self {
        SingleFlight {
            slots: Rc::new(RefCell::new(HashMap::new())),
        }
    }
}

impl<K: Eq + Hash + Clone + 'static, V: Clone + 'static, E: Clone + 'static> SingleFlight<K, V, E> {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The cached value of `key`, if loaded.
    pub fn get(&self, key: &K) -> Option<V> {
        match self.slots.borrow().get(key) {
            Some(Slot::Ready(v)) => Some(v.clone()),
            _ => None,
        }
    }

    /// Whether a load of `key` is under way.
    pub fn is_loading(&self, key: &K) -> bool {
        matches!(self.slots.borrow().get(key), Some(Slot::Loading(_)))
    }

    /// Drops `key` (a later call loads again). A load under way still completes for
    /// its waiters.
    pub fn remove(&self, key: &K) {
        let mut slots = self.slots.borrow_mut();
        if matches!(slots.get(key), Some(Slot::Ready(_) | Slot::Failed(_))) {
            slots.remove(key);
        }
    }

    /// The value for `key`: cached, awaited from a load under way, or loaded by `load`
    /// (at most one loader runs per key at a time across concurrent callers).
    pub async fn get_or_load<F, Fut>(&self, key: K, load: F) -> Result<V, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
    {
        loop {
            let leader = {
                let mut slots = self.slots.borrow_mut();
                match slots.get(&key) {
                    Some(Slot::Ready(v)) => return Ok(v.clone()),
                    Some(Slot::Loading(_)) => false,
                    Some(Slot::Failed(_)) | None => {
                        slots.insert(key.clone(), Slot::Loading(Vec::new()));
                        true
                    }
                }
            };
            if leader {
                return self.lead(key, load).await;
            }
            let waited = Wait {
                slots: self.slots.clone(),
                key: key.clone(),
            }
            .await;
            if let Some(result) = waited {
                return result;
            }
            // The leader was dropped mid-load: take over with our own loader.
        }
    }

    async fn lead<F, Fut>(&self, key: K, load: F) -> Result<V, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<V, E>>,
    {
        // If this future is dropped mid-load, the guard clears the slot and wakes the
        // waiters, one of which then loads in its place.
        let mut guard = LeaderGuard {
            slots: self.slots.clone(),
            key: Some(key.clone()),
        };
        let result = load().await;
        guard.key = None;
        let slot = match &result {
            Ok(v) => Slot::Ready(v.clone()),
            // Kept for this attempt's waiters; the next call replaces it by loading again.
            Err(e) => Slot::Failed(e.clone()),
        };
        let wakers = match self.slots.borrow_mut().insert(key, slot) {
            Some(Slot::Loading(w)) => w,
            _ => Vec::new(),
        };
        wakers.into_iter().for_each(Waker::wake);
        result
    }
}

struct LeaderGuard<K: Eq + Hash, V, E> {
    slots: Rc<RefCell<HashMap<K, Slot<V, E>>>>,
    key: Option<K>,
}

impl<K: Eq + Hash, V, E> Drop for LeaderGuard<K, V, E> {
    fn drop(&mut self) {
        let Some(k) = self.key.take() else { return };
        let removed = match self.slots.try_borrow_mut() {
            Ok(mut slots) => slots.remove(&k),
            Err(_) => None,
        };
        if let Some(Slot::Loading(w)) = removed {
            w.into_iter().for_each(Waker::wake);
        }
    }
}

/// Resolves when the key's load under way settles: `Some(result)`, or `None` when the
/// leader was dropped (the slot is gone).
struct Wait<K, V, E> {
    slots: Rc<RefCell<HashMap<K, Slot<V, E>>>>,
    key: K,
}

impl<K: Eq + Hash + Clone, V: Clone, E: Clone> Future for Wait<K, V, E> {
    type Output = Option<Result<V, E>>;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut slots = self.slots.borrow_mut();
        match slots.get_mut(&self.key) {
            Some(Slot::Ready(v)) => Poll::Ready(Some(Ok(v.clone()))),
            Some(Slot::Failed(e)) => Poll::Ready(Some(Err(e.clone()))),
            Some(Slot::Loading(w)) => {
                if !w.iter().any(|x| x.will_wake(cx.waker())) {
                    w.push(cx.waker().clone());
                }
                Poll::Pending
            }
            None => Poll::Ready(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_like_python_0_38() {
        let r = resolve_tokenizer_id;
        assert_eq!(r("Qwen/Qwen3-8B", None), "Qwen/Qwen3-8B");
        assert_eq!(r("Qwen/Qwen3-8B:peft:1234", None), "Qwen/Qwen3-8B");
        assert_eq!(
            r("meta-llama/Llama-3.1-8B-Instruct", None),
            "thinkingmachineslabinc/meta-llama-3-instruct-tokenizer"
        );
        assert_eq!(r("meta-llama/Llama-2-7b", None), "meta-llama/Llama-2-7b");
        assert_eq!(r("org/model/variant", None), "org/model");
        assert_eq!(r("org/model/variant:x", None), "org/model");
        assert_eq!(r("a/b/c/d", None), "a/b/c/d");
        // The server's id wins (suffix stripped), even for Llama-3 names.
        assert_eq!(
            r(
                "meta-llama/Llama-3.1-8B",
                Some("meta-llama/Llama-3.1-8B:rev")
            ),
            "meta-llama/Llama-3.1-8B"
        );
        assert_eq!(
            r("x/y", Some("moonshotai/Kimi-K2.5-Text-Only")),
            "moonshotai/Kimi-K2.5"
        );
        assert_eq!(r("x/y", Some("")), "");
        assert_eq!(
            tokenizer_revision("moonshotai/Kimi-K2.5"),
            Some("4d01dfe0332d63057c186e0b262165819efb6611")
        );
        assert_eq!(tokenizer_revision("Qwen/Qwen3-8B"), None);
    }
}
