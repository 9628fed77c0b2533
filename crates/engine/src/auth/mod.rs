//! Authentication for the engine: the primitives of `mandato_core::auth` (JWE, JWT, API keys,
//! password hashing, the throttle's rule), and the async password calls that wait their turn
//! without holding an async worker.

pub use mandato_core::auth::{api_key, jwe, jwt, throttle};

pub mod password;
