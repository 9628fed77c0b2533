//! Password hashing for commerce and staff passwords.
//!
//! Passwords are low-entropy, so they are stored as argon2id PHC strings (memory-hard, salted)
//! with the argon2 crate's defaults (argon2id v19, m = 19 MiB, t = 2, p = 1, the OWASP
//! recommendation). The PHC string carries its own parameters, so raising the defaults later
//! keeps old hashes verifiable.
//!
//! Each hash or check fills 19 MiB and takes tens of milliseconds of one core, so the process
//! runs at most [`MAX_AT_ONCE`] of them at a time, whoever asks: a burst of logins waits its
//! turn instead of taking gigabytes and every core. Each turn comes with its own memory, kept
//! for the next turn rather than allocated and freed for every check (freed blocks of that
//! size stay with the thread's allocator arena, and the blocking threads are many). The engine's
//! async `hash` and `verify` wait for a turn without holding a thread and then run these on
//! the blocking pool, never on the async workers; called directly (the command line, tests)
//! they wait in their thread.

use std::sync::{Condvar, LazyLock, Mutex};

use argon2::password_hash::phc::{Output, ParamsString, PasswordHash, Salt};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use rand::RngCore;

use crate::secret::Secret;

/// How many argon2 computations run at once in the whole process.
pub const MAX_AT_ONCE: usize = 2;

/// A stored hash asking for more memory than this (KiB) is refused rather than computed: a
/// tampered row must not make one check take gigabytes. Four times today's 19 MiB.
const MAX_M_COST_KIB: u32 = 4 * Params::DEFAULT_M_COST;

/// The limit itself, on every computation whatever its caller: `MAX_AT_ONCE` turns, and the
/// memory of the turns not in use.
static GATE: Gate = Gate {
    state: Mutex::new(GateState {
        busy: 0,
        memory: Vec::new(),
    }),
    freed: Condvar::new(),
};

struct Gate {
    state: Mutex<GateState>,
    freed: Condvar,
}

struct GateState {
    busy: usize,
    /// Blocks left by finished turns (never more than `MAX_AT_ONCE` sets).
    memory: Vec<Vec<Block>>,
}

/// A turn at the gate, with the argon2 memory to use in it.
struct Turn {
    memory: Vec<Block>,
}

impl Gate {
    fn enter(&self) -> Turn {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while state.busy >= MAX_AT_ONCE {
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.busy += 1;
        Turn {
            memory: state.memory.pop().unwrap_or_default(),
        }
    }
}

impl Turn {
    /// The turn's memory as `blocks` argon2 blocks.
    fn blocks(&mut self, blocks: usize) -> &mut [Block] {
        if self.memory.len() < blocks {
            self.memory.resize(blocks, Block::new());
        }
        &mut self.memory[..blocks]
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        // What the last computation left there is derived from a password: wipe it.
        wipe_and_release(&mut self.memory);
        let mut state = GATE.state.lock().unwrap_or_else(|p| p.into_inner());
        state.memory.push(std::mem::take(&mut self.memory));
        state.busy -= 1;
        GATE.freed.notify_one();
    }
}

/// Zeroes the blocks, and hands the whole pages among them back to the system: a kept turn
/// costs its 19 MiB of address space but no resident memory between logins (an idle engine
/// held one or two such sets, 19-38 MiB, for nothing). The next turn faults the pages in
/// again, zeroed, which costs about a millisecond against the tens of milliseconds of argon2.
fn wipe_and_release(blocks: &mut [Block]) {
    #[cfg(target_os = "linux")]
    let blocks = {
        let page = 4096;
        let start = blocks.as_mut_ptr().cast::<u8>();
        let len = std::mem::size_of_val(blocks);
        let first_page = start.align_offset(page).min(len);
        let pages_len = (len - first_page) / page * page;
        if pages_len > 0 {
            // SAFETY: the range lies inside `blocks`, which this function borrows exclusively,
            // and is page-aligned. The heap is private anonymous memory, where MADV_DONTNEED
            // makes the next read of a page return zeroes, and all-zero is a valid `Block`
            // (an array of integers). Should the call fail, the `fill` below still wipes all.
            let released = unsafe {
                libc::madvise(start.add(first_page).cast(), pages_len, libc::MADV_DONTNEED)
            };
            if released == 0 {
                // Only the partial pages at either end are left to wipe by hand.
                let head = first_page.div_ceil(std::mem::size_of::<Block>());
                let tail = (first_page + pages_len) / std::mem::size_of::<Block>();
                let (before, rest) = blocks.split_at_mut(head);
                before.fill(Block::new());
                &mut rest[tail - head..]
            } else {
                blocks
            }
        } else {
            blocks
        }
    };
    blocks.fill(Block::new());
}

/// A hash of a random password nobody knows, with the current parameters: a login for an
/// account that does not exist is checked against it, so that it costs what a real check
/// costs and its timing does not tell which accounts exist. Made once per process
/// ([`prepare`] makes it at start, before the first login needs it).
static DUMMY_HASH: LazyLock<String> = LazyLock::new(|| {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hash_password(&Secret::new(hex::encode(bytes)))
});

/// Makes the stand-in hash for unknown accounts now, so the first such login does not pay
/// for it (and so stand out by its time).
pub fn prepare() {
    LazyLock::force(&DUMMY_HASH);
}

/// Hashes a password to an argon2id PHC string (`$argon2id$v=19$m=...,t=...,p=...$salt$hash`)
/// with a fresh random 16-byte salt. Blocks until a turn is free; async code calls the
/// engine's `hash`.
///
/// # Panics
/// Never with the fixed parameters and lengths used here.
#[must_use]
pub fn hash_password(password: &Secret<String>) -> String {
    let params = Params::default();
    let mut salt = [0u8; argon2::RECOMMENDED_SALT_LEN];
    rand::rng().fill_bytes(&mut salt);
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    {
        let mut turn = GATE.enter();
        Argon2::new(Algorithm::Argon2id, Version::V0x13, params.clone())
            .hash_password_into_with_memory(
                password.expose().as_bytes(),
                &salt,
                &mut out,
                turn.blocks(params.block_count()),
            )
            .expect("argon2id with the default parameters");
    }
    PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: ParamsString::try_from(&params).expect("the default parameters"),
        salt: Some(Salt::new(&salt).expect("a 16-byte salt")),
        hash: Some(Output::new(&out).expect("a 32-byte output")),
    }
    .to_string()
}

/// Checks a password against a stored PHC string. Blocks until a turn is free; async code
/// calls the engine's `verify`.
///
/// Answers `false`, never an error, for a malformed hash, one that is not argon2id, or one
/// whose memory cost is beyond reason: a login can only succeed or fail, and refusing other
/// algorithms means a tampered row cannot downgrade us to a weaker variant. The comparison of
/// outputs is constant-time (`phc::Output`).
#[must_use]
pub fn verify_password(password: &Secret<String>, phc: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    if parsed.algorithm != Algorithm::Argon2id.ident() {
        return false;
    }
    let (Some(salt), Some(expected)) = (&parsed.salt, &parsed.hash) else {
        return false;
    };
    let Ok(params) = Params::try_from(&parsed) else {
        return false;
    };
    let version = match parsed.version.map(Version::try_from) {
        None => Version::V0x13,
        Some(Ok(version)) => version,
        Some(Err(_)) => return false,
    };
    if params.m_cost() > MAX_M_COST_KIB {
        return false;
    }
    let mut out = vec![0u8; expected.len()];
    let computed = {
        let mut turn = GATE.enter();
        Argon2::new(Algorithm::Argon2id, version, params.clone()).hash_password_into_with_memory(
            password.expose().as_bytes(),
            salt.as_ref(),
            &mut out,
            turn.blocks(params.block_count()),
        )
    };
    computed.is_ok() && Output::new(&out).is_ok_and(|computed| computed == *expected)
}

/// Checks a password against the account's hash or, when there is no such account (`None`),
/// against a stand-in hash of the same cost, so the answer (`false`) takes as long as for a
/// real account. Blocks like [`verify_password`]; the engine's async `verify` runs it on the
/// blocking pool.
#[must_use]
pub fn verify_or_stand_in(password: &Secret<String>, phc: Option<&str>) -> bool {
    match phc {
        Some(phc) => verify_password(password, phc),
        None => {
            // The result is thrown away: nobody knows the stand-in's password.
            let _ = verify_password(password, &DUMMY_HASH);
            false
        }
    }
}

/// A password for a new commerce registered without one: 24 base64url characters (144 random
/// bits), shown once to whoever registered it.
#[must_use]
pub fn generate_commerce_password() -> Secret<String> {
    use base64::Engine;
    let mut bytes = [0u8; 18];
    rand::rng().fill_bytes(&mut bytes);
    Secret::new(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Secret<String> {
        Secret::new(v.to_string())
    }

    #[test]
    fn a_finished_turn_leaves_no_byte_of_its_blocks() {
        // Offsets that start the blocks on, and off, a page boundary; lengths with and
        // without whole pages among them.
        for (skip, len) in [(0, 4 * 1024), (1, 64), (3, 19 * 1024), (0, 3), (2, 9)] {
            let mut memory = vec![Block::new(); skip + len];
            for (i, block) in memory.iter_mut().enumerate() {
                block
                    .as_mut()
                    .fill((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            }
            wipe_and_release(&mut memory[skip..]);
            assert!(
                memory[..skip]
                    .iter()
                    .all(|b| b.as_ref().iter().all(|&w| w != 0))
            );
            assert!(
                memory[skip..]
                    .iter()
                    .all(|b| b.as_ref().iter().all(|&w| w == 0)),
                "a word survived (skip {skip}, len {len})"
            );
        }
    }

    #[test]
    fn round_trip() {
        let phc = hash_password(&s("contraseña-ñandú-€"));
        assert!(phc.starts_with("$argon2id$v=19$"), "{phc}");
        assert!(verify_password(&s("contraseña-ñandú-€"), &phc));
        assert!(!verify_password(&s("contrasena-nandu-E"), &phc));
        assert!(!verify_password(&s(""), &phc));
    }

    #[test]
    fn salts_differ() {
        let a = hash_password(&s("same"));
        let b = hash_password(&s("same"));
        assert_ne!(a, b);
        assert!(verify_password(&s("same"), &a));
        assert!(verify_password(&s("same"), &b));
    }

    #[test]
    fn malformed_hash_is_false() {
        for bad in [
            "",
            "plain",
            "$argon2id$",
            "$argon2id$v=19$m=19456,t=2,p=1$$",
        ] {
            assert!(!verify_password(&s("x"), bad), "{bad:?}");
        }
    }

    #[test]
    fn no_more_than_two_run_at_once() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let done = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicUsize::new(0));
        let watcher = {
            let (done, peak) = (Arc::clone(&done), Arc::clone(&peak));
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let busy = GATE.state.lock().unwrap().busy;
                    peak.fetch_max(busy, Ordering::Relaxed);
                    std::thread::yield_now();
                }
            })
        };
        let workers: Vec<_> = (0..6)
            .map(|i| std::thread::spawn(move || hash_password(&s(&format!("pw{i}")))))
            .collect();
        for w in workers {
            assert!(w.join().unwrap().starts_with("$argon2id$"));
        }
        done.store(true, Ordering::Relaxed);
        watcher.join().unwrap();
        let peak = peak.load(Ordering::Relaxed);
        assert!((1..=MAX_AT_ONCE).contains(&peak), "peak {peak}");
    }

    #[test]
    fn an_unknown_account_is_refused_after_a_real_check() {
        let phc = hash_password(&s("right"));
        assert!(verify_or_stand_in(&s("right"), Some(&phc)));
        assert!(!verify_or_stand_in(&s("wrong"), Some(&phc)));
        assert!(!verify_or_stand_in(&s("right"), None));
        assert!(DUMMY_HASH.starts_with("$argon2id$v=19$"));
    }

    #[test]
    fn hashes_of_the_argon2_crate_itself_still_verify_and_ours_verify_there() {
        use argon2::password_hash::{PasswordHasher, PasswordVerifier};
        let theirs = Argon2::default().hash_password(b"pw").unwrap().to_string();
        assert!(verify_password(&s("pw"), &theirs));
        assert!(!verify_password(&s("pW"), &theirs));
        let ours = hash_password(&s("pw"));
        let parsed = PasswordHash::new(&ours).unwrap();
        assert!(Argon2::default().verify_password(b"pw", &parsed).is_ok());
        // Other parameters than today's are read from the string.
        let params = Params::new(8 * 1024, 1, 1, None).unwrap();
        let cheaper = Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
            .hash_password(b"pw")
            .unwrap()
            .to_string();
        assert!(verify_password(&s("pw"), &cheaper));
    }

    #[test]
    fn a_hash_asking_for_too_much_memory_is_refused_unchecked() {
        let ours = hash_password(&s("pw"));
        let greedy = ours.replace("m=19456", "m=4194304");
        assert_ne!(ours, greedy);
        assert!(!verify_password(&s("pw"), &greedy));
    }

    #[test]
    fn other_argon2_variants_are_refused() {
        use argon2::password_hash::PasswordHasher;
        let argon2i = Argon2::new(
            Algorithm::Argon2i,
            argon2::Version::V0x13,
            argon2::Params::default(),
        );
        let phc = argon2i.hash_password(b"pw").unwrap().to_string();
        assert!(phc.starts_with("$argon2i$"));
        assert!(!verify_password(&s("pw"), &phc));
    }
}
