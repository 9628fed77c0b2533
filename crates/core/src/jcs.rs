//! RFC 8785 JSON Canonicalization Scheme, for the body `signature` field.
//!
//! Members are sorted by their UTF-16 code units, no whitespace is written, strings use the
//! ECMAScript escaping (which `serde_json` shares: short escapes for `\b \t \n \f \r " \\`,
//! lowercase `\u00xx` for other control characters, everything else literal). Numbers are
//! written as the service produced them, which is always the shortest form (`10.5`, `29990`).

use serde_json::Value;

pub fn canonicalize(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            out.push_str(&serde_json::to_string(value).expect("scalars always serialize"));
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push('{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key).expect("strings always serialize"));
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::canonicalize;
    use serde_json::json;

    #[test]
    fn sorts_members_by_utf16_and_drops_whitespace() {
        let v = json!({"b": [1, {"z": null, "a": true}], "a": "x\u{1}\n€", "\u{ff61}": 1, "\u{10000}": 2});
        // U+10000 is the surrogate pair D800 DC00, which sorts before U+FF61 in UTF-16 (and
        // after it in UTF-8 bytes).
        assert_eq!(
            canonicalize(&v),
            "{\"a\":\"x\\u0001\\n€\",\"b\":[1,{\"a\":true,\"z\":null}],\"\u{10000}\":2,\"\u{ff61}\":1}"
        );
    }
}
