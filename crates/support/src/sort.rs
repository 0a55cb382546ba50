//! Stable sorting through one compiled sort. std's `sort_by` is generic over the element
//! and the comparison, so every call site compiles a merge sort of its own (about 3 KB
//! of wasm each: the renderers' and the tokenizer's ten cost the full module 8.5 KB
//! gzip). Here the sort runs once, on indices with a dynamic comparison, and the
//! elements are moved into place after. For the short lists it serves (tool schemas'
//! keys, added tokens, template dicts), not for hot loops.

use std::cmp::Ordering;

/// The stable order of `n` items under `cmp` (which compares two of their indices).
pub fn stable_order(n: usize, cmp: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// `v.sort_by(cmp)`: stable, equal items keep their order.
pub fn sort_by<T>(v: &mut Vec<T>, cmp: impl Fn(&T, &T) -> Ordering) {
    let order = stable_order(v.len(), &|a, b| cmp(&v[a], &v[b]));
    let mut items: Vec<Option<T>> = std::mem::take(v).into_iter().map(Some).collect();
    v.extend(
        order
            .into_iter()
            .map(|i| items[i].take().expect("each index once")),
    );
}

/// `v.sort_by_key(key)`: stable.
pub fn sort_by_key<T, K: Ord>(v: &mut Vec<T>, key: impl Fn(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_std_does_keeping_equal_items_in_order() {
        let cases: [&[(u8, char)]; 4] = [
            &[],
            &[(1, 'a')],
            &[(2, 'a'), (1, 'b'), (2, 'c'), (1, 'd'), (0, 'e')],
            &[(3, 'x'), (3, 'y'), (3, 'z')],
        ];
        for case in cases {
            let (mut ours, mut std_) = (case.to_vec(), case.to_vec());
            sort_by_key(&mut ours, |p| p.0);
            std_.sort_by_key(|p| p.0);
            assert_eq!(ours, std_);
            let mut rev = case.to_vec();
            sort_by(&mut rev, |a, b| b.0.cmp(&a.0));
            std_.sort_by_key(|b| std::cmp::Reverse(b.0));
            assert_eq!(rev, std_);
        }
    }
}
