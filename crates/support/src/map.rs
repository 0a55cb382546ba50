//! Small ordered collections for the client's maps: loss inputs and outputs, metrics,
//! user metadata, pending requests. They are sorted vectors: keys iterate in order (as
//! the `BTreeMap`s they replace did, so bodies and results keep their order), and each
//! value type costs a few hundred bytes of wasm instead of a B-tree's several KB
//! (issue 8's size budget). Every map here holds at most a few thousand entries.
//!
//! ```
//! use tinker_support::map::StrMap;
//! let mut m = StrMap::new();
//! m.insert("b", 2);
//! m.insert("a", 1);
//! assert_eq!(m.insert("b", 3), Some(2));
//! assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b"]);
//! assert_eq!(m.get("b"), Some(&3));
//! ```

use std::fmt;

/// A map from strings to `V`, iterated in key order.
#[derive(Clone, PartialEq)]
pub struct StrMap<V>(Vec<(String, V)>);

impl<V> Default for StrMap<V> {
    fn default() -> Self {
        StrMap(Vec::new())
    }
}

impl<V> StrMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        StrMap(Vec::new())
    }
    fn find(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }
    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.find(key).ok().map(|i| &self.0[i].1)
    }
    /// The value of `key`, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        self.find(key).ok().map(|i| &mut self.0[i].1)
    }
    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }
    /// Sets `key`; returns its old value.
    pub fn insert(&mut self, key: impl Into<String>, value: V) -> Option<V> {
        let key = key.into();
        match self.find(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }
    /// The value of `key`, inserting `f()` first if absent.
    pub fn get_or_insert_with(&mut self, key: &str, f: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(key) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (key.to_string(), f()));
                i
            }
        };
        &mut self.0[i].1
    }
    /// Removes `key`.
    pub fn remove(&mut self, key: &str) -> Option<V> {
        self.find(key).ok().map(|i| self.0.remove(i).1)
    }
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.0.iter().map(|(k, _)| k)
    }
    /// The values in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.0.iter().map(|(_, v)| v)
    }
    /// Removes every entry, returning them in key order.
    pub fn drain(&mut self) -> std::vec::Drain<'_, (String, V)> {
        self.0.drain(..)
    }
}

impl<K: Into<String>, V> Extend<(K, V)> for StrMap<V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<V> std::ops::Index<&str> for StrMap<V> {
    type Output = V;
    /// The value of `key`; panics if absent (as `BTreeMap`'s index does).
    fn index(&self, key: &str) -> &V {
        self.get(key).expect("key present in the map")
    }
}

impl<V: fmt::Debug> fmt::Debug for StrMap<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Into<String>, V> FromIterator<(K, V)> for StrMap<V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = StrMap::new();
        for (k, v) in iter {
            m.insert(k, v);
        }
        m
    }
}

impl<K: Into<String>, V, const N: usize> From<[(K, V); N]> for StrMap<V> {
    fn from(entries: [(K, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl<V> IntoIterator for StrMap<V> {
    type Item = (String, V);
    type IntoIter = std::vec::IntoIter<(String, V)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, V> IntoIterator for &'a StrMap<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (String, V)>,
        fn(&'a (String, V)) -> (&'a String, &'a V),
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

/// A set of `T`, iterated in order.
#[derive(Clone, Debug, PartialEq)]
pub struct SortedSet<T>(Vec<T>);

impl<T> Default for SortedSet<T> {
    fn default() -> Self {
        SortedSet(Vec::new())
    }
}

impl<T: Ord> SortedSet<T> {
    /// Adds `v`; whether it was new.
    pub fn insert(&mut self, v: T) -> bool {
        match self.0.binary_search(&v) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, v);
                true
            }
        }
    }
    /// Removes `v`; whether it was there.
    pub fn remove<Q>(&mut self, v: &Q) -> bool
    where
        T: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        match self.0.binary_search_by(|x| x.borrow().cmp(v)) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The elements in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_keep_keys_sorted_and_unique() {
        let mut m: StrMap<u32> = [("c", 3), ("a", 1), ("b", 2), ("a", 4)].into();
        assert_eq!(m.len(), 3);
        assert_eq!(
            m.iter().map(|(k, v)| format!("{k}{v}")).collect::<String>(),
            "a4b2c3"
        );
        assert_eq!(m.remove("b"), Some(2));
        assert_eq!(m.remove("b"), None);
        *m.get_or_insert_with("d", || 0) += 5;
        *m.get_or_insert_with("a", || 0) += 1;
        assert_eq!(m.get("d"), Some(&5));
        assert_eq!(m.get("a"), Some(&5));
        assert!(m.contains_key("c") && !m.contains_key("z"));
        assert_eq!(format!("{m:?}"), r#"{"a": 5, "c": 3, "d": 5}"#);
    }

    #[test]
    fn sets_keep_order() {
        let mut s = SortedSet::default();
        for x in [5u64, 1, 3, 1] {
            s.insert(x);
        }
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [1, 3, 5]);
        assert!(s.remove(&3) && !s.remove(&3));
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), [1, 5]);
        let mut t: SortedSet<String> = SortedSet::default();
        t.insert("b".into());
        assert!(t.remove("b") && t.is_empty());
    }
}
