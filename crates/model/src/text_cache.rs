//! A small bounded map from text to a shared value, for things a server
//! derives again and again from the same strings (parsed queries, compiled
//! regexes).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Text → `Arc<V>`, at most `capacity` entries. When full, one arbitrary entry
/// makes room, so a working set a little over the size loses a few entries,
/// not the whole cache. Values are shared, so callers clone them outside the
/// lock.
pub struct TextCache<V> {
    capacity: usize,
    map: Mutex<Option<HashMap<String, Arc<V>>>>,
}

impl<V> TextCache<V> {
    pub const fn new(capacity: usize) -> Self {
        Self {
            capacity,
            map: Mutex::new(None),
        }
    }

    pub fn get(&self, text: &str) -> Option<Arc<V>> {
        self.map.lock().ok()?.as_ref()?.get(text).cloned()
    }

    pub fn insert(&self, text: &str, value: V) {
        let Ok(mut guard) = self.map.lock() else { return };
        let map = guard.get_or_insert_with(HashMap::new);
        if map.len() >= self.capacity
            && let Some(victim) = map.keys().next().cloned()
        {
            map.remove(&victim);
        }
        map.insert(text.to_string(), Arc::new(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_cache_stays_within_capacity_and_keeps_most_entries() {
        let c = TextCache::new(3);
        for (i, t) in ["a", "b", "c", "d"].iter().enumerate() {
            c.insert(t, i);
        }
        assert_eq!(*c.get("d").unwrap(), 3);
        let held = ["a", "b", "c", "d"].iter().filter(|t| c.get(t).is_some()).count();
        assert_eq!(held, 3, "one entry made room, the others stayed");
        assert!(c.get("e").is_none());
    }
}
