//! Portal payments of one installment, one at a time in this process.
//!
//! Two submits of the same installment that race (a double click, two tabs, a card-testing
//! script) would otherwise both read the installment before either outcome is recorded, and
//! both pick the same processor key: the second would be answered with the first card's
//! outcome instead of its own. Taken in turn, the second sees what the first left: a recorded
//! payment (nothing more to pay), or a decline counted against the link's limit and a fresh
//! key for its own card. The processor key still guards the case this lock cannot see (a
//! retry after a crash).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// One lock per key, made on first use and forgotten once nobody holds or waits for it.
#[derive(Default)]
pub struct KeyedLocks {
    locks: Mutex<HashMap<String, Weak<AsyncMutex<()>>>>,
}

impl KeyedLocks {
    /// Waits for the key's turn; the turn ends when the guard is dropped.
    pub async fn lock(&self, key: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            // Only keys with a holder or a waiter stay: the map never outgrows the requests
            // in flight, whatever ids a client makes up.
            locks.retain(|_, lock| lock.strong_count() > 0);
            match locks.get(key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(AsyncMutex::new(()));
                    locks.insert(key.to_string(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.locks.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_key_waits_for_its_holder_and_other_keys_do_not() {
        let locks = Arc::new(KeyedLocks::default());
        let held = locks.lock("a").await;
        let other = tokio::time::timeout(std::time::Duration::from_secs(1), locks.lock("b")).await;
        assert!(other.is_ok(), "another key is free");
        let waiter = {
            let locks = Arc::clone(&locks);
            tokio::spawn(async move { locks.lock("a").await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "the same key waits");
        drop(held);
        let again = waiter.await.unwrap();
        drop(again);
        drop(other);
        // Forgotten once unused: the next lock call sweeps them.
        drop(locks.lock("c").await);
        assert_eq!(locks.len(), 1);
    }
}
