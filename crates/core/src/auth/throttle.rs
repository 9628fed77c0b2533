//! Sign-in throttling (CONTRACT 12): the rule, free of I/O; `store::login_throttle` keeps each
//! key's window in the database, so a restart does not wipe a lock.
//!
//! The window is fixed, not sliding: it opens at a key's first counted attempt and lasts
//! [`WINDOW_MINUTES`]. An attempt counts the moment it starts (before its password is checked),
//! so that many attempts sent at once cannot all slip in before the first failure is written;
//! a successful sign-in clears the key. Once [`MAX_FAILURES`] attempts counted within the
//! window, every further attempt, even with the right password, is refused until the window
//! ends; then the key starts afresh.
//!
//! The keys an attacker can invent (any e-mail address) are bounded: at most [`MAX_KEYS`]
//! windows are kept. A new key when the table is full drops the finished windows; when none
//! has finished, the new key is refused ([`Decision::Crowded`], 429 like a lock) until the
//! oldest window ends. A window still open is never dropped to make room: otherwise a flood of
//! sign-ins to invented e-mails would push a locked account's window out and unlock it.

use chrono::{DateTime, Duration, Utc};

/// Attempts allowed per key within one window.
pub const MAX_FAILURES: u32 = 5;
/// How long a window lasts.
pub const WINDOW_MINUTES: i64 = 15;
/// The most windows kept at once.
pub const MAX_KEYS: i64 = 100_000;

/// What failures are counted against: one staff e-mail, one commerce, or the one-time setup
/// code. Never an IP address alone, which an attacker can change at will.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThrottleKey(String);

impl ThrottleKey {
    /// A staff account's e-mail, in any case: `Ana@x.cl` and `ana@x.cl` share one count.
    pub fn staff(email: &str) -> Self {
        ThrottleKey(format!("staff:{}", email.to_lowercase()))
    }

    /// A commerce's merchant logins (`POST /login` and the deprecated `GET /login`).
    pub fn commerce(code: &str) -> Self {
        ThrottleKey(format!("commerce:{code}"))
    }

    /// Guesses of the one-time first-visit setup code, from whoever sends them.
    pub fn setup_code() -> Self {
        ThrottleKey("setup-code".into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A key's current window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub opened_at: DateTime<Utc>,
    pub failures: u32,
}

impl Window {
    pub fn ends_at(&self) -> DateTime<Utc> {
        self.opened_at + Duration::minutes(WINDOW_MINUTES)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead; the key's window is now this (the attempt counted).
    Counted(Window),
    /// Refused: try again after this many seconds (at least 1).
    Locked { retry_after_secs: u64 },
    /// Refused without counting: the key has no window and the table of windows is full of open
    /// ones (a flood of invented keys); room comes when the oldest ends, in this many seconds.
    Crowded { retry_after_secs: u64 },
}

/// Seconds from `now` until `window` ends, rounded up and at least 1: a client that waits
/// exactly this long finds it closed.
pub fn seconds_left(window: &Window, now: DateTime<Utc>) -> u64 {
    let left = (window.ends_at() - now).num_milliseconds();
    u64::try_from((left + 999) / 1000).unwrap_or(1).max(1)
}

/// Whether an attempt at `now` may go ahead, given the key's window (if any).
pub fn attempt(current: Option<Window>, now: DateTime<Utc>) -> Decision {
    match current {
        Some(window) if now < window.ends_at() => {
            if window.failures >= MAX_FAILURES {
                Decision::Locked {
                    retry_after_secs: seconds_left(&window, now),
                }
            } else {
                Decision::Counted(Window {
                    failures: window.failures + 1,
                    ..window
                })
            }
        }
        _ => Decision::Counted(Window {
            opened_at: now,
            failures: 1,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64, seconds: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-25T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
            + Duration::minutes(minutes)
            + Duration::seconds(seconds)
    }

    #[test]
    fn five_attempts_then_locked_until_the_window_ends() {
        let mut window = None;
        for n in 1..=MAX_FAILURES {
            match attempt(window, at(i64::from(n), 0)) {
                Decision::Counted(w) => {
                    assert_eq!((w.opened_at, w.failures), (at(1, 0), n));
                    window = Some(w);
                }
                locked => panic!("attempt {n}: {locked:?}"),
            }
        }
        assert_eq!(
            attempt(window, at(6, 0)),
            Decision::Locked {
                retry_after_secs: 600
            }
        );
        assert_eq!(
            attempt(window, at(15, 59) + Duration::milliseconds(500)),
            Decision::Locked {
                retry_after_secs: 1
            }
        );
        assert_eq!(
            attempt(window, at(16, 0)),
            Decision::Counted(Window {
                opened_at: at(16, 0),
                failures: 1
            })
        );
    }

    #[test]
    fn keys_do_not_mix() {
        assert_ne!(
            ThrottleKey::staff("a@x.cl"),
            ThrottleKey::commerce("a@x.cl")
        );
        assert_eq!(
            ThrottleKey::staff("Ana@X.cl"),
            ThrottleKey::staff("ana@x.cl")
        );
    }
}
