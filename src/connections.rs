//! Who keeps a connection when the listener is full (CONTRACT 12, "HTTP"; SECURITY.md).
//!
//! The listener serves at most `max_connections` at once. Holding a connection costs an
//! attacker nothing: a socket opened and left silent, reopened whenever it is cut. So a full
//! listener does not make newcomers wait behind silent sockets: it closes one that is idle (no
//! request in progress: waiting for its first request head, sending one slowly, or kept alive
//! between requests) to make room, and only waits when every connection is serving a request.
//!
//! The connection closed is the longest idle one of the address that holds the most
//! connections, so that one address (or a few) cannot keep others out. A connection idle for
//! less than [`GRACE`] is never closed: a fresh one is about to send its request (a real
//! client sends it with the connection), and an attacker that reopens its sockets as fast as
//! they are closed gets at most `max_connections` per [`GRACE`] instead of starving everyone
//! queued behind it; a newcomer waits for the first connection to come of age. An address also holds at most
//! `per_address` connections (three quarters of the cap): past that, its own longest idle one
//! makes room, and a newcomer of an address whose connections are all busy is turned away.
//!
//! A request under way is never cut to make room: a connection is busy from the moment its
//! request head is read until its response body has been written.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// How long a connection may sit idle before it can be closed to make room.
pub const GRACE: Duration = Duration::from_millis(250);

/// What the accept loop does with a newcomer.
#[derive(Debug, PartialEq, Eq)]
pub enum Room {
    /// Below the budgets: serve it.
    Free,
    /// An idle connection was told to close; serve the newcomer once it has.
    Made,
    /// Every idle connection is younger than [`GRACE`]: ask again after this long.
    Later(Duration),
    /// Full of busy connections: serve the newcomer when one ends.
    Wait,
    /// Its address holds its share, all of them busy: close the newcomer.
    Refuse,
}

/// The open connections, by id.
pub struct Connections {
    cap: usize,
    per_address: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next_id: u64,
    open: HashMap<u64, Entry>,
    per_address: HashMap<IpAddr, usize>,
}

struct Entry {
    peer: IpAddr,
    activity: Arc<Activity>,
    close: Arc<Notify>,
}

/// One connection's requests in progress, and since when it has had none.
pub struct Activity {
    in_flight: AtomicUsize,
    idle_since: Mutex<Instant>,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
        }
    }

    /// Marks a request in progress until the returned guard is dropped (with its response's
    /// body, once written).
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy(Arc::clone(self))
    }

    /// Since when it has been idle; `None` while a request is in progress.
    fn idle_since(&self) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(*self.idle_since.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// A request in progress on a connection (see [`Activity::busy`]).
pub struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.idle_since.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A connection's place in the table: its activity, and the signal to close when idle.
pub struct Admitted {
    pub id: u64,
    pub activity: Arc<Activity>,
    pub close: Arc<Notify>,
}

impl Connections {
    pub fn new(cap: usize) -> Connections {
        Connections {
            cap: cap.max(1),
            per_address: (cap * 3 / 4).max(1),
            table: Mutex::new(Table::default()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes room for a newcomer from `peer`, if it needs any (see the module's rules).
    pub fn make_room(&self, peer: IpAddr) -> Room {
        let mut table = self.table();
        let own = table.per_address.get(&peer).copied().unwrap_or(0);
        let over_own = own >= self.per_address;
        if !over_own && table.open.len() < self.cap {
            return Room::Free;
        }
        let now = Instant::now();
        let candidates: Vec<(u64, IpAddr, Instant)> = table
            .open
            .iter()
            .filter(|(_, e)| !over_own || e.peer == peer)
            .filter_map(|(id, e)| Some((*id, e.peer, e.activity.idle_since()?)))
            .collect();
        let victim = candidates
            .iter()
            .filter(|(_, _, idle_since)| now.duration_since(*idle_since) >= GRACE)
            .max_by_key(|(id, peer, idle_since)| {
                // The most connections first, then the longest idle, then the oldest.
                let holds = table.per_address.get(peer).copied().unwrap_or(0);
                (holds, Reverse(*idle_since), Reverse(*id))
            })
            .map(|(id, _, _)| *id);
        if let Some(id) = victim {
            let entry = table.remove(id).expect("the victim is open");
            entry.close.notify_one();
            return Room::Made;
        }
        let soonest = candidates
            .iter()
            .map(|(_, _, idle_since)| GRACE.saturating_sub(now.duration_since(*idle_since)))
            .min();
        match soonest {
            Some(wait) => Room::Later(wait.max(Duration::from_millis(1))),
            None if over_own => Room::Refuse,
            None => Room::Wait,
        }
    }

    /// Enters a connection being served.
    pub fn admit(&self, peer: IpAddr) -> Admitted {
        let mut table = self.table();
        table.next_id += 1;
        let id = table.next_id;
        let activity = Arc::new(Activity::new());
        let close = Arc::new(Notify::new());
        table.open.insert(
            id,
            Entry {
                peer,
                activity: Arc::clone(&activity),
                close: Arc::clone(&close),
            },
        );
        *table.per_address.entry(peer).or_default() += 1;
        Admitted {
            id,
            activity,
            close,
        }
    }

    /// A connection ended (if it was told to close, it has left already).
    pub fn leave(&self, id: u64) {
        self.table().remove(id);
    }
}

impl Table {
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.open.remove(&id)?;
        if let Some(count) = self.per_address.get_mut(&entry.peer) {
            *count -= 1;
            if *count == 0 {
                self.per_address.remove(&entry.peer);
            }
        }
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    /// Makes every idle connection idle for longer than the grace, oldest first as admitted.
    fn age(c: &Connections) {
        let table = c.table();
        let mut entries: Vec<_> = table.open.iter().collect();
        entries.sort_by_key(|(id, _)| **id);
        let base = Instant::now() - GRACE * 10;
        for (n, (_, e)) in entries.into_iter().enumerate() {
            *e.activity.idle_since.lock().unwrap() = base + Duration::from_millis(n as u64);
        }
    }

    #[test]
    fn below_the_cap_everyone_is_served() {
        let c = Connections::new(4);
        for _ in 0..2 {
            assert_eq!(c.make_room(ip(1)), Room::Free);
            c.admit(ip(1));
        }
        assert_eq!(c.make_room(ip(2)), Room::Free);
    }

    #[test]
    fn a_full_listener_closes_the_longest_idle_of_the_busiest_address() {
        let c = Connections::new(4);
        let a1 = c.admit(ip(1));
        let a2 = c.admit(ip(1));
        let b1 = c.admit(ip(2));
        let b2 = c.admit(ip(2));
        // 127.0.0.1's first connection is serving a request; its second is idle.
        let _busy = a1.activity.busy();
        age(&c);
        // A tie on counts: the longest idle goes, 127.0.0.1's second (older than 127.0.0.2's).
        assert_eq!(c.make_room(ip(3)), Room::Made);
        assert!(notified(&a2.close));
        assert!(!notified(&b1.close) && !notified(&b2.close));
        c.admit(ip(3));
        age(&c);
        // Now 127.0.0.2 holds the most: its longest idle goes.
        assert_eq!(c.make_room(ip(3)), Room::Made);
        assert!(notified(&b1.close));
    }

    #[test]
    fn busy_connections_are_waited_for_never_cut() {
        let c = Connections::new(2);
        let a = c.admit(ip(1));
        let b = c.admit(ip(2));
        let (_a, _b) = (a.activity.busy(), b.activity.busy());
        assert_eq!(c.make_room(ip(3)), Room::Wait);
        c.leave(a.id);
        assert_eq!(c.make_room(ip(3)), Room::Free);
    }

    #[test]
    fn an_address_past_its_share_makes_room_among_its_own_or_is_turned_away() {
        let c = Connections::new(4);
        let own: Vec<Admitted> = (0..3).map(|_| c.admit(ip(1))).collect();
        age(&c);
        // Three quarters of 4: 127.0.0.1's fourth connection replaces its own longest idle.
        assert_eq!(c.make_room(ip(1)), Room::Made);
        assert!(notified(&own[0].close));
        c.admit(ip(1));
        let _busy: Vec<Busy> = own[1..].iter().map(|a| a.activity.busy()).collect();
        let newest = c.admit(ip(2));
        let _newest_busy = newest.activity.busy();
        age(&c);
        // 127.0.0.1 has its share again: its idle one (the newest) makes room...
        assert_eq!(c.make_room(ip(1)), Room::Made);
        c.admit(ip(1));
        let all_busy: Vec<Busy> = {
            let table = c.table();
            table
                .open
                .values()
                .filter(|e| e.peer == ip(1) && e.activity.idle_since().is_some())
                .map(|e| e.activity.busy())
                .collect()
        };
        assert_eq!(all_busy.len(), 1);
        // ... and with all of its share busy, a newcomer of that address is turned away.
        assert_eq!(c.make_room(ip(1)), Room::Refuse);
        // Another address still finds a place (waiting: all four are busy).
        assert_eq!(c.make_room(ip(2)), Room::Wait);
    }

    #[test]
    fn a_connection_younger_than_the_grace_is_not_closed_for_a_newcomer() {
        let c = Connections::new(2);
        let fresh = c.admit(ip(1));
        let _busy = c.admit(ip(2)).activity.busy();
        match c.make_room(ip(3)) {
            Room::Later(wait) => assert!(wait <= GRACE && !wait.is_zero(), "{wait:?}"),
            other => panic!("{other:?}"),
        }
        assert!(!notified(&fresh.close));
        age(&c);
        assert_eq!(c.make_room(ip(3)), Room::Made);
        assert!(notified(&fresh.close));
    }

    /// Whether `close` was signalled (consuming the signal).
    fn notified(close: &Notify) -> bool {
        use std::future::Future;
        let mut waiting = std::pin::pin!(close.notified());
        let waker = std::task::Waker::noop();
        waiting
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker))
            .is_ready()
    }
}
