//! A small map of values read from the database, for the request path: trusted until this
//! process changes what they were read from (its [`Epoch`] moves), or for a short time at most
//! (its TTL, the bound on how late a change made by another process, such as the CLI, is seen).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A counter bumped by every function that changes what a cache holds. It is bumped inside the
/// changing transaction, before its commit: a read racing that commit may cache the old value,
/// for at most the cache's TTL.
pub struct Epoch(AtomicU64);

impl Epoch {
    pub const fn new() -> Self {
        Epoch(AtomicU64::new(0))
    }

    /// Drops what every cache over this epoch holds.
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    fn current(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

struct Entry<V> {
    value: V,
    epoch: u64,
    loaded: Instant,
}

/// Values by key, each kept while its epoch is current and it is younger than the TTL. At most
/// `max` keys: a full cache starts over, so keys an attacker can choose never grow it unbounded.
pub struct FreshCache<K, V> {
    epoch: &'static Epoch,
    ttl: Duration,
    max: usize,
    /// Which loaded values are kept; the others are read again at each use.
    keep: fn(&V) -> bool,
    entries: RwLock<HashMap<K, Entry<V>>>,
}

impl<K: Hash + Eq, V: Clone> FreshCache<K, V> {
    pub fn new(epoch: &'static Epoch, ttl: Duration, max: usize) -> Self {
        FreshCache {
            epoch,
            ttl,
            max,
            keep: |_| true,
            entries: RwLock::new(HashMap::new()),
        }
    }

    /// Keeps only the loaded values `keep` accepts (say, rows that exist, so that unknown keys
    /// are never cached).
    pub fn keeping_only(self, keep: fn(&V) -> bool) -> Self {
        FreshCache { keep, ..self }
    }

    /// The value under `key` while it is current; otherwise `load` reads it, kept if `keep`
    /// accepts it. The epoch and time are taken before `load`, so a change committed during the
    /// read leaves the kept value already stale.
    pub fn get_or_load<E>(&self, key: K, load: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        let epoch = self.epoch.current();
        if let Some(entry) = self
            .entries
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .filter(|e| e.epoch == epoch && e.loaded.elapsed() < self.ttl)
        {
            return Ok(entry.value.clone());
        }
        let loaded = Instant::now();
        let value = load()?;
        if (self.keep)(&value) {
            let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
            if entries.len() >= self.max {
                entries.clear();
            }
            let kept = Entry {
                value: value.clone(),
                epoch,
                loaded,
            };
            entries.insert(key, kept);
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::convert::Infallible;

    fn counting_load<'a>(
        reads: &'a Cell<u32>,
        value: Option<&'static str>,
    ) -> impl FnOnce() -> Result<Option<&'static str>, Infallible> + 'a {
        move || {
            reads.set(reads.get() + 1);
            Ok(value)
        }
    }

    #[test]
    fn a_value_is_read_once_until_the_epoch_moves() {
        static EPOCH: Epoch = Epoch::new();
        let cache = FreshCache::new(&EPOCH, Duration::from_secs(60), 8);
        let reads = Cell::new(0);
        assert_eq!(
            cache.get_or_load(1, counting_load(&reads, Some("a"))),
            Ok(Some("a"))
        );
        assert_eq!(
            cache.get_or_load(1, counting_load(&reads, Some("b"))),
            Ok(Some("a"))
        );
        assert_eq!(reads.get(), 1);
        EPOCH.bump();
        assert_eq!(
            cache.get_or_load(1, counting_load(&reads, Some("b"))),
            Ok(Some("b"))
        );
        assert_eq!(reads.get(), 2);
    }

    #[test]
    fn a_value_older_than_the_ttl_is_read_again() {
        static EPOCH: Epoch = Epoch::new();
        let cache = FreshCache::new(&EPOCH, Duration::from_millis(20), 8);
        let reads = Cell::new(0);
        cache
            .get_or_load(1, counting_load(&reads, Some("a")))
            .unwrap();
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(
            cache.get_or_load(1, counting_load(&reads, Some("b"))),
            Ok(Some("b"))
        );
        assert_eq!(reads.get(), 2);
    }

    #[test]
    fn nothing_found_is_never_kept_and_a_full_cache_starts_over() {
        static EPOCH: Epoch = Epoch::new();
        let cache =
            FreshCache::new(&EPOCH, Duration::from_secs(60), 2).keeping_only(Option::is_some);
        let reads = Cell::new(0);
        assert_eq!(cache.get_or_load(1, counting_load(&reads, None)), Ok(None));
        assert_eq!(cache.get_or_load(1, counting_load(&reads, None)), Ok(None));
        assert_eq!(reads.get(), 2);
        for key in [1, 2, 3] {
            cache
                .get_or_load(key, counting_load(&reads, Some("x")))
                .unwrap();
        }
        assert_eq!(cache.entries.read().unwrap().len(), 1);
    }
}
