//! Fintoc's webhooks at `/acquirers/fintoc/webhook` (CONTRACT 13).
//!
//! Fintoc signs each POST with the secret of the endpoint registered in its dashboard:
//! `Fintoc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "{t}.{raw body}">`
//! (docs.fintoc.com `webhooks-validating`; fintoc-python `fintoc/webhook.py`, whose
//! `DEFAULT_TOLERANCE` is 300 s; fintoc-node `src/lib/webhook.ts` also refuses a `t` that far
//! in the future, and so do we). Schemes other than `v1` are ignored, as the SDKs do.
//!
//! The request names no commerce, so the signature is checked against each commerce's Fintoc
//! webhook secret; the one that verifies says whose event it is. A verified event is kept once
//! per signature (`fintoc_events`): the same signed request again is a replay and is refused,
//! while Fintoc's own resend of an event (same id, signed anew) is taken without acting twice.
//! The event only says *what* to ask about: the follower (`charging::fintoc`) asks Fintoc's
//! API for that charge or subscription and applies its answer, so nothing in a body, even a
//! verified one, is believed on its own.

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use sha2::Sha256;

use mandato_core::clock::timestamp;
use mandato_core::error::{Error, Result};
use mandato_core::secret::Secret;
use mandato_store::fintoc::{self, Event};

use crate::engine::Engine;

/// How far a signature's `t` may be from now, either way (the SDKs' default).
pub const TOLERANCE_SECS: i64 = 300;

/// The header absent, malformed, or verified by no commerce's secret.
pub const INVALID_SIGNATURE: &str = "INVALID_SIGNATURE";
/// A signature older (or newer) than [`TOLERANCE_SECS`].
pub const SIGNATURE_EXPIRED: &str = "SIGNATURE_EXPIRED";
/// The very signed request received before.
pub const EVENT_REPLAYED: &str = "EVENT_REPLAYED";

/// The most `v1` signatures one header may carry (Fintoc sends one; a rotation, two).
const MAX_SIGNATURES: usize = 4;

/// A `Fintoc-Signature` value: its timestamp and `v1` digests.
#[derive(Debug, PartialEq, Eq)]
struct Signature {
    at: i64,
    /// `t` as sent: the signed text starts with it.
    at_text: String,
    digests: Vec<[u8; 32]>,
}

/// Splits the header at `,` then each part at the first `=`, as Fintoc's guide says.
fn parse_signature(value: &str) -> Option<Signature> {
    let mut at: Option<(i64, &str)> = None;
    let mut digests = Vec::new();
    for part in value.split(',') {
        let (scheme, content) = part.trim().split_once('=')?;
        match scheme {
            "t" => at = Some((content.parse::<i64>().ok()?, content)),
            "v1" if digests.len() < MAX_SIGNATURES => {
                let mut digest = [0u8; 32];
                hex::decode_to_slice(content, &mut digest).ok()?;
                digests.push(digest);
            }
            _ => {}
        }
    }
    let (at, at_text) = at?;
    (!digests.is_empty()).then(|| Signature {
        at,
        at_text: at_text.to_string(),
        digests,
    })
}

/// Whether one of the signature's digests is `secret`'s HMAC of `"{t}.{body}"` (compared in
/// constant time).
fn verifies(signature: &Signature, body: &[u8], secret: &Secret<String>) -> bool {
    signature.digests.iter().any(|digest| {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes())
            .expect("HMAC takes keys of any length");
        mac.update(signature.at_text.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac.verify_slice(digest).is_ok()
    })
}

/// What the engine reads of an event: its id, its type and its object's id.
#[derive(Deserialize)]
struct Posted {
    id: String,
    #[serde(rename = "type")]
    kind: String,
    data: PostedObject,
}

#[derive(Deserialize)]
struct PostedObject {
    id: String,
}

/// The longest id or type kept (Fintoc's are a few dozen characters).
const ID_MAX: usize = 100;

fn event_of(body: &[u8], signed_at: i64, commerce_id: i64) -> Result<Event> {
    let posted: Posted = serde_json::from_slice(body).map_err(|_| {
        Error::validation(
            "body",
            "INVALID_EVENT",
            "a Fintoc event: id, type and data.id",
        )
    })?;
    let shaped = |text: &str| {
        !text.is_empty() && text.len() <= ID_MAX && text.bytes().all(|b| b.is_ascii_graphic())
    };
    if !(shaped(&posted.id) && shaped(&posted.kind) && shaped(&posted.data.id)) {
        return Err(Error::validation(
            "body",
            "INVALID_EVENT",
            "a Fintoc event: id, type and data.id",
        ));
    }
    Ok(Event {
        event_id: posted.id,
        signed_at,
        commerce_id,
        kind: posted.kind,
        object_id: posted.data.id,
    })
}

impl Engine {
    /// Takes a webhook POSTed by Fintoc: verifies `Fintoc-Signature` over the raw body
    /// against the commerces' webhook secrets, refuses a stale or replayed one, keeps the
    /// event and wakes the follower, which asks Fintoc about the event's object. Blocking.
    pub fn receive_fintoc_webhook(&self, signature: Option<&str>, body: &[u8]) -> Result<()> {
        let invalid = || {
            Error::refused(
                INVALID_SIGNATURE,
                "Fintoc-Signature is missing or does not verify with a commerce's webhook secret",
            )
        };
        let signature = signature.and_then(parse_signature).ok_or_else(invalid)?;
        let secrets = self
            .store()
            .read(|c| Ok(mandato_store::acquirers::fintoc_webhook_secrets(c)?))?;
        let commerce_id = secrets
            .iter()
            .find(|(_, secret)| verifies(&signature, body, secret))
            .map(|(commerce, _)| *commerce)
            .ok_or_else(invalid)?;
        let now = self.clock.now();
        if (now.timestamp() - signature.at).abs() > TOLERANCE_SECS {
            return Err(Error::refused(
                SIGNATURE_EXPIRED,
                "the signature's timestamp is more than 5 minutes from now",
            ));
        }
        let event = event_of(body, signature.at, commerce_id)?;
        let kept = self
            .store()
            .write(|tx| Ok(fintoc::record_event(tx, &event, &timestamp(now))?))?;
        if !kept {
            return Err(Error::refused(
                EVENT_REPLAYED,
                "this signed event was received before",
            ));
        }
        tracing::info!(event = %event.event_id, kind = %event.kind, "fintoc event received");
        self.fintoc_wake.notify_one();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, at: i64, body: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{at}.{body}").as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    #[test]
    fn a_signature_verifies_only_with_its_secret_body_and_time() {
        let body = r#"{"id":"evt_1","type":"charge.succeeded","data":{"id":"ch_1"}}"#;
        let secret = Secret::new("whsec_test_secret".to_string());
        let header = format!(
            "t=1780000000,v1={}",
            sign("whsec_test_secret", 1780000000, body)
        );
        let signature = parse_signature(&header).unwrap();
        assert_eq!(signature.at, 1780000000);
        assert!(verifies(&signature, body.as_bytes(), &secret));
        assert!(!verifies(&signature, b"{}", &secret));
        assert!(!verifies(
            &signature,
            body.as_bytes(),
            &Secret::new("whsec_other".to_string())
        ));
        let moved = parse_signature(&header.replace("t=1780000000", "t=1780000001")).unwrap();
        assert!(!verifies(&moved, body.as_bytes(), &secret));
    }

    #[test]
    fn other_schemes_are_ignored_and_garbage_is_no_signature() {
        let digest = sign("s", 5, "x");
        let header = format!("t=5, v0=abc, v1={digest}");
        assert_eq!(parse_signature(&header).unwrap().digests.len(), 1);
        for garbage in [
            "",
            "t=5",
            "v1=00",
            &format!("v1={digest}"),
            &format!("t=x,v1={digest}"),
            "t=5,v1=zz",
            "t=5;v1=00",
        ] {
            assert_eq!(parse_signature(garbage), None, "{garbage}");
        }
    }

    #[test]
    fn an_event_needs_its_id_type_and_object() {
        let ok = event_of(
            br#"{"id":"evt_1","type":"subscription.activated","data":{"id":"sub_1","x":1}}"#,
            7,
            1,
        )
        .unwrap();
        assert_eq!(ok.object_id, "sub_1");
        assert_eq!(ok.kind, "subscription.activated");
        for bad in [
            &br#"{"id":"evt_1","type":"charge.failed"}"#[..],
            br#"{"id":"","type":"charge.failed","data":{"id":"ch_1"}}"#,
            b"not json",
        ] {
            assert!(event_of(bad, 7, 1).is_err());
        }
    }
}
