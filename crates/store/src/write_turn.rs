//! Turns at writing SQLite's file, between the engine's two writing connections: the store's
//! writer (group commits and every other write) and the audit writer's own.
//!
//! SQLite lets one connection write at a time, and a connection that finds the file locked
//! polls it with growing sleeps (its busy handler). Under a steady stream of group commits the
//! writer releases the lock only for the microseconds between two groups, so the audit
//! writer's polls almost never found it free: for whole seconds of creations it wrote nothing,
//! its records piled up in memory, and an engine idle after the load still held them while it
//! caught up (bench/README.md). Here the two queue instead, and a turn that ends while the
//! other side waits is handed to it (`parking_lot`'s fair unlock), so neither waits more than
//! one of the other's transactions.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Mutex, MutexGuard};

#[derive(Default)]
pub struct WriteTurn {
    turn: Mutex<()>,
    /// Writers waiting for the turn now.
    waiting: AtomicUsize,
}

/// A turn being held; ending it hands the turn to a waiting writer, if any.
pub struct Turn<'a>(Option<MutexGuard<'a, ()>>);

impl WriteTurn {
    /// Waits for the turn. Take it before `BEGIN IMMEDIATE` and hold it through the commit.
    pub fn take(&self) -> Turn<'_> {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let guard = self.turn.lock();
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        Turn(Some(guard))
    }

    /// Whether another writer waits for the turn (asked by the one holding it).
    pub fn awaited(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(guard) = self.0.take() {
            MutexGuard::unlock_fair(guard);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    #[test]
    fn a_writer_that_takes_turns_back_to_back_lets_a_waiting_one_in() {
        let turn = Arc::new(WriteTurn::default());
        let stop = Arc::new(AtomicBool::new(false));
        let busy = {
            let (turn, stop) = (Arc::clone(&turn), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _held = turn.take();
                    std::hint::black_box((0..2_000).sum::<u64>());
                }
            })
        };
        let got = Arc::new(AtomicUsize::new(0));
        let other = {
            let (turn, got) = (Arc::clone(&turn), Arc::clone(&got));
            std::thread::spawn(move || {
                for _ in 0..200 {
                    let _held = turn.take();
                    got.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        other.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        busy.join().unwrap();
        assert_eq!(got.load(Ordering::Relaxed), 200);
    }

    #[test]
    fn the_holder_sees_whether_another_writer_waits() {
        let turn = Arc::new(WriteTurn::default());
        let held = turn.take();
        assert!(!turn.awaited());
        let waiter = {
            let turn = Arc::clone(&turn);
            std::thread::spawn(move || drop(turn.take()))
        };
        while !turn.awaited() {
            std::thread::yield_now();
        }
        drop(held);
        waiter.join().unwrap();
        assert!(!turn.awaited());
    }
}
