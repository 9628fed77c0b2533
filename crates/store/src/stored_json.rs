//! A JSON column's text, as stored: written into answers as it is, parsed only where a reader
//! needs its fields.
//!
//! Every mandate lookup answers the mandate's `charges`, `metadata` and enrolled method, each
//! installment's `payment` and the customer's `address`. Parsed into `Value` trees (an
//! allocation per key and string, an ordered map per object) and serialised back, those columns
//! were 4% of a lookup's request threads (`bench/README.md`). The text is what the engine
//! itself wrote with `serde_json`, compact and in the answer's key order, so the answer carries
//! it unchanged. It is checked to be JSON when read, so a damaged column is never copied into an
//! answer: the mandate's columns fail the read, as before; a damaged payment or address reads
//! as absent, as before.

use std::fmt;

use serde::{Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// JSON text checked to be one JSON value.
#[derive(Clone)]
pub struct StoredJson(Box<RawValue>);

impl StoredJson {
    /// The column's text, refused unless it is one JSON value.
    pub fn from_text(text: String) -> serde_json::Result<StoredJson> {
        RawValue::from_string(text).map(StoredJson)
    }

    /// The text a value is stored as.
    pub fn from_value(value: &Value) -> StoredJson {
        // A `Value` always serialises: its map keys are strings.
        StoredJson(serde_json::value::to_raw_value(value).expect("a Value serialises"))
    }

    /// The stored text, as bound to a statement.
    pub fn text(&self) -> &str {
        self.0.get()
    }

    /// The value as a tree, for readers of its fields.
    pub fn value(&self) -> Value {
        // Checked when it was made, so it parses; `Null` only if that ever stopped holding.
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }
}

impl Serialize for StoredJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl PartialEq for StoredJson {
    /// Equal when they hold the same value; texts that differ only in spacing are equal.
    fn eq(&self, other: &StoredJson) -> bool {
        self.text() == other.text() || self.value() == other.value()
    }
}

impl fmt::Debug for StoredJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_carry_the_stored_text_unchanged() {
        let stored = StoredJson::from_text(r#"{"b":1,"a":10.50,"c":[null,"x"]}"#.into()).unwrap();
        let answer = serde_json::to_string(&json!({"charges": stored})).unwrap();
        assert_eq!(answer, r#"{"charges":{"b":1,"a":10.50,"c":[null,"x"]}}"#);
    }

    #[test]
    fn text_that_is_not_one_json_value_is_refused() {
        for bad in ["", "{", r#"{"a":1} 2"#, "nope"] {
            assert!(StoredJson::from_text(bad.into()).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_value_round_trips_through_its_text() {
        let value = json!({"amount": 12345.67, "currencyId": 1, "periodicity": "MONTHLY"});
        let stored = StoredJson::from_value(&value);
        assert_eq!(stored.value(), value);
        assert_eq!(
            stored,
            StoredJson::from_text(
                r#"{ "amount": 12345.67, "currencyId": 1, "periodicity": "MONTHLY" }"#.into()
            )
            .unwrap()
        );
    }
}
