//! Password hashing for async callers: [`hash`] and [`verify`] wait for a turn without holding
//! a thread, then run the blocking argon2 computation of `mandato_core::auth::password` on the
//! blocking pool, never on the async workers.

use tokio::sync::Semaphore;

pub use mandato_core::auth::password::*;

use mandato_core::secret::Secret;

/// Async callers queue here (a waiting request holds no thread), so that no more than
/// `MAX_AT_ONCE` blocking threads ever wait at the core's gate.
static ASYNC_TURNS: Semaphore = Semaphore::const_new(MAX_AT_ONCE);

/// [`hash_password`] for async code: waits for a turn, then hashes on the blocking pool.
pub async fn hash(password: Secret<String>) -> anyhow::Result<String> {
    let _turn = ASYNC_TURNS.acquire().await?;
    Ok(tokio::task::spawn_blocking(move || hash_password(&password)).await?)
}

/// [`verify_or_stand_in`] for async code: waits for a turn, then checks on the blocking pool.
/// Without an account (`None`) the answer is `false` after a check of the same cost.
pub async fn verify(password: Secret<String>, phc: Option<String>) -> anyhow::Result<bool> {
    let _turn = ASYNC_TURNS.acquire().await?;
    Ok(tokio::task::spawn_blocking(move || verify_or_stand_in(&password, phc.as_deref())).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Secret<String> {
        Secret::new(v.to_string())
    }

    #[tokio::test]
    async fn an_unknown_account_is_refused_after_a_real_check() {
        let phc = hash(s("right")).await.unwrap();
        assert!(verify(s("right"), Some(phc.clone())).await.unwrap());
        assert!(!verify(s("wrong"), Some(phc)).await.unwrap());
        assert!(!verify(s("right"), None).await.unwrap());
    }
}
