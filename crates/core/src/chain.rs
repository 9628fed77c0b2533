//! Hash chains of append-only records: the one hashing rule of the signature audit
//! (`esign::audit`) and of the staff audit (`store::staff_audit`).
//!
//! A record's `hash` is `SHA-256(JCS(fields + {"prevHash": prev}))` in lowercase hex, where
//! `fields` are all of the record's own values as a JSON object and `prev` is the previous
//! record's hash ([`GENESIS`] for the first). The canonical JSON (RFC 8785) is unambiguous:
//! no choice of field values can make two different records encode alike. So changing a
//! record changes its hash, and removing, inserting or reordering records breaks a link.
//! No I/O: callers read and write the records.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::jcs;

/// The `prevHash` of a chain's first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The hash of a record with these `fields` following the record whose hash is `prev_hash`.
pub fn link_hash(mut fields: Map<String, Value>, prev_hash: &str) -> String {
    fields.insert("prevHash".into(), Value::String(prev_hash.to_string()));
    let canonical = jcs::canonicalize(&Value::Object(fields));
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

/// What is wrong with a record that breaks its chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The record's `prevHash` is not the hash of the record before it: a record before it
    /// was removed, inserted or moved.
    BrokenLink,
    /// The record's stored hash is not the hash of its fields: the record was changed.
    HashMismatch,
}

/// Checks a chain one record at a time, oldest first, keeping only the last hash: a chain of
/// any length is verified in constant memory.
#[derive(Debug)]
pub struct Walk {
    prev: String,
    records: u64,
}

impl Default for Walk {
    fn default() -> Self {
        Walk {
            prev: GENESIS.to_string(),
            records: 0,
        }
    }
}

impl Walk {
    /// Checks the next record. A broken record stops the walk: the records after it can no
    /// longer be trusted to follow anything.
    pub fn step(
        &mut self,
        fields: Map<String, Value>,
        prev_hash: Option<&str>,
        hash: Option<&str>,
    ) -> Result<(), Fault> {
        if prev_hash != Some(self.prev.as_str()) {
            return Err(Fault::BrokenLink);
        }
        let hash = hash.ok_or(Fault::HashMismatch)?;
        if link_hash(fields, &self.prev) != hash {
            return Err(Fault::HashMismatch);
        }
        self.prev = hash.to_string();
        self.records += 1;
        Ok(())
    }

    /// How many records held so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The hash of the last record that held ([`GENESIS`] before any).
    pub fn head(&self) -> &str {
        &self.prev
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(n: u64, text: &str) -> Map<String, Value> {
        match json!({"n": n, "text": text}) {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    /// `(fields, prev_hash, hash)` of a valid chain of `len` records.
    fn chain(len: u64) -> Vec<(Map<String, Value>, String, String)> {
        let mut prev = GENESIS.to_string();
        (1..=len)
            .map(|n| {
                let f = fields(n, "x");
                let hash = link_hash(f.clone(), &prev);
                let record = (f, prev.clone(), hash.clone());
                prev = hash;
                record
            })
            .collect()
    }

    fn walk(records: &[(Map<String, Value>, String, String)]) -> Result<u64, (usize, Fault)> {
        let mut walk = Walk::default();
        for (i, (f, prev, hash)) in records.iter().enumerate() {
            walk.step(f.clone(), Some(prev), Some(hash))
                .map_err(|fault| (i, fault))?;
        }
        Ok(walk.records())
    }

    #[test]
    fn the_hash_covers_every_field_and_the_previous_hash() {
        let base = link_hash(fields(1, "x"), GENESIS);
        assert_eq!(base.len(), 64);
        assert_eq!(base, link_hash(fields(1, "x"), GENESIS));
        assert_ne!(base, link_hash(fields(2, "x"), GENESIS));
        assert_ne!(base, link_hash(fields(1, "y"), GENESIS));
        assert_ne!(base, link_hash(fields(1, "x"), &"1".repeat(64)));
    }

    #[test]
    fn the_encoding_is_the_canonical_json_with_the_previous_hash_as_a_member() {
        // Pinned: records already stored were hashed this way, so it can never change.
        let expected = hex::encode(Sha256::digest(
            format!(r#"{{"n":1,"prevHash":"{GENESIS}","text":"x"}}"#).as_bytes(),
        ));
        assert_eq!(link_hash(fields(1, "x"), GENESIS), expected);
    }

    #[test]
    fn field_values_cannot_be_shifted_between_fields() {
        let a = json!({"action": "a", "target": "b|c"});
        let b = json!({"action": "a|b", "target": "c"});
        let (Value::Object(a), Value::Object(b)) = (a, b) else {
            unreachable!()
        };
        assert_ne!(link_hash(a, GENESIS), link_hash(b, GENESIS));
    }

    #[test]
    fn an_intact_chain_walks_to_its_end() {
        assert_eq!(walk(&chain(5)), Ok(5));
        assert_eq!(walk(&[]), Ok(0));
    }

    #[test]
    fn a_changed_removed_or_moved_record_stops_the_walk_at_it() {
        let mut changed = chain(5);
        changed[2].0 = fields(3, "changed");
        assert_eq!(walk(&changed), Err((2, Fault::HashMismatch)));

        let mut removed = chain(5);
        removed.remove(2);
        assert_eq!(walk(&removed), Err((2, Fault::BrokenLink)));

        let mut moved = chain(5);
        moved.swap(1, 3);
        assert_eq!(walk(&moved), Err((1, Fault::BrokenLink)));

        let mut first_removed = chain(3);
        first_removed.remove(0);
        assert_eq!(walk(&first_removed), Err((0, Fault::BrokenLink)));
    }

    #[test]
    fn a_record_without_its_hashes_is_broken() {
        let records = chain(1);
        let mut walk = Walk::default();
        assert_eq!(
            walk.step(records[0].0.clone(), None, None),
            Err(Fault::BrokenLink)
        );
        assert_eq!(
            walk.step(records[0].0.clone(), Some(GENESIS), None),
            Err(Fault::HashMismatch)
        );
    }
}
