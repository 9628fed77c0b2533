//! Field parsers shared by the resources: each reads one wire value into a domain type or
//! records why it cannot, so a request's every problem is reported at once.

use chrono::NaiveDate;

use mandato_core::domain::date::Date;
use mandato_core::domain::money::{Currency, Money};
use mandato_core::error::{Error, FieldErrors};
use mandato_engine::notify::destination::Destinations;
use mandato_engine::operations::CustomerRef;

pub fn currency(value: Option<&String>, field: &str, errors: &mut FieldErrors) -> Option<Currency> {
    match value {
        None => {
            errors.missing(field);
            None
        }
        Some(code) => {
            let parsed = Currency::parse(code);
            if parsed.is_none() {
                errors.push(field, "INVALID_CURRENCY", "must be CLP, CLF or USD");
            }
            parsed
        }
    }
}

pub fn json_number<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<serde_json::Number>, D::Error> {
    use serde::Deserialize;
    use serde::de::{Error, Unexpected};
    use serde_json::Value;
    let unexpected = match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => return Ok(Some(n)),
        Some(Value::Bool(b)) => Unexpected::Bool(b),
        Some(Value::String(_)) => Unexpected::Other("string"),
        Some(Value::Array(_)) => Unexpected::Seq,
        Some(Value::Object(_)) => Unexpected::Map,
    };
    Err(D::Error::invalid_type(unexpected, &"a JSON number"))
}

/// An amount in a currency; `currency` is `None` when the currency itself was bad, in which
/// case only presence is checked.
pub fn money(
    value: Option<&serde_json::Number>,
    currency: Option<Currency>,
    field: &str,
    errors: &mut FieldErrors,
) -> Option<Money> {
    let Some(number) = value else {
        errors.missing(field);
        return None;
    };
    let currency = currency?;
    match Money::parse(number, currency) {
        Ok(m) => Some(m),
        Err(e) => {
            errors.push(field, "INVALID_AMOUNT", e.to_string());
            None
        }
    }
}

/// A `YYYY-MM-DD` date from 1900-01-01 to 9999-12-31 (`domain::date` says why the range).
pub fn date(value: Option<&String>, field: &str, errors: &mut FieldErrors) -> Option<Date> {
    let Some(text) = value else {
        errors.missing(field);
        return None;
    };
    match Date::parse(text) {
        Ok(d) => Some(d),
        Err(e) => {
            errors.push(field, e.code(), e.to_string());
            None
        }
    }
}

/// A date that must not be before the business date.
pub fn future_date(
    value: Option<&String>,
    field: &str,
    today: NaiveDate,
    errors: &mut FieldErrors,
) -> Option<Date> {
    let d = date(value, field, errors)?;
    if d < today {
        errors.push(field, "DATE_IN_PAST", format!("must be {today} or later"));
        return None;
    }
    Some(d)
}

/// Exactly one of two alternative ids (`userId`/`internalUserId`, `id`/`internalId`).
/// Answers `(true, first)` or `(false, second)`.
pub fn one_of<T>(
    first: (Option<T>, &str),
    second: (Option<T>, &str),
    field: &str,
    errors: &mut FieldErrors,
) -> Option<(bool, T)> {
    match (first.0, second.0) {
        (Some(a), None) => Some((true, a)),
        (None, Some(b)) => Some((false, b)),
        (Some(_), Some(_)) => {
            errors.push(
                field,
                "ONE_OF_REQUIRED",
                format!("send exactly one of {} and {}, not both", first.1, second.1),
            );
            None
        }
        (None, None) => {
            errors.push(
                field,
                "ONE_OF_REQUIRED",
                format!("send one of {} or {}", first.1, second.1),
            );
            None
        }
    }
}

pub fn customer_ref(
    user_id: Option<&String>,
    internal_user_id: Option<&String>,
    field: &str,
    errors: &mut FieldErrors,
) -> Option<CustomerRef> {
    let (external, id) = one_of(
        (user_id, "userId"),
        (internal_user_id, "internalUserId"),
        field,
        errors,
    )?;
    if id.trim().is_empty() || id.len() > 64 {
        let which = if external { "userId" } else { "internalUserId" };
        errors.push(
            format!("{field}.{which}"),
            "INVALID_ID",
            "1 to 64 characters",
        );
        return None;
    }
    Some(if external {
        CustomerRef::UserId(id.clone())
    } else {
        CustomerRef::InternalUserId(id.clone())
    })
}

/// A URL as stored and later sent as written: the URL parser drops tabs and line breaks and
/// takes credentials, so the text itself must hold no control or separator character
/// (CR, LF, TAB, NUL, U+2028...) and the URL no `user:password@`.
fn plain_url(text: &str) -> Option<url::Url> {
    let invisible = |c: char| {
        c.is_control()
            || matches!(
                c,
                '\u{2028}' | '\u{2029}' | '\u{200b}'..='\u{200f}' | '\u{feff}'
            )
    };
    if text.len() > 2048 || text.chars().any(invisible) {
        return None;
    }
    url::Url::parse(text)
        .ok()
        .filter(|u| u.username().is_empty() && u.password().is_none())
}

/// A webhook URL: `https://` with a host, at most 2048 characters.
pub fn https_url(value: Option<&String>, field: &str, errors: &mut FieldErrors) -> Option<String> {
    let text = value?.trim();
    match plain_url(text) {
        Some(u) if u.scheme() == "https" && u.host().is_some() => Some(text.to_string()),
        _ => {
            errors.push(field, "INVALID_URL", "must be an https:// URL");
            None
        }
    }
}

/// The refusal of a webhook URL whose destination the installation does not deliver to.
pub const WEBHOOK_URL_NOT_ALLOWED: &str = "WEBHOOK_URL_NOT_ALLOWED";

/// Webhook URLs (already valid `https://` URLs) whose host is written as an address, or
/// `localhost`, are refused at their field when the installation delivers to public addresses
/// only. Names are judged when resolved, at delivery. The message names no rule detail beyond
/// need: the merchant learns the URL is not acceptable here, not what lies behind it.
pub fn webhook_destinations<'a>(
    destinations: Destinations,
    urls: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<(), Error> {
    for (field, url) in urls {
        let Some(url) = url else { continue };
        let allowed = url::Url::parse(url).is_ok_and(|u| destinations.allows_url(&u));
        if !allowed {
            return Err(Error::refused_at(
                WEBHOOK_URL_NOT_ALLOWED,
                field,
                "webhook URLs must point to a public address: loopback, private, link-local \
                 and other reserved addresses, and localhost, are refused",
            ));
        }
    }
    Ok(())
}

/// The browser return address: `https://`, or `http://` on this machine (for development).
pub fn callback_url(
    value: Option<&String>,
    field: &str,
    errors: &mut FieldErrors,
) -> Option<String> {
    let text = value?.trim();
    let ok = match plain_url(text) {
        Some(u) => match u.scheme() {
            "https" => u.host().is_some(),
            "http" => matches!(u.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")),
            _ => false,
        },
        None => false,
    };
    if ok {
        Some(text.to_string())
    } else {
        errors.push(
            field,
            "INVALID_URL",
            "must be an https:// URL (or http://localhost)",
        );
        None
    }
}

/// A JSON integer: also written with a zero fraction (`5.0`), as JSON Schema counts it.
pub fn json_integer<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i64>, D::Error> {
    use serde::de::{Error, Unexpected};
    let Some(number) = json_number(deserializer)? else {
        return Ok(None);
    };
    if let Some(n) = number.as_i64() {
        return Ok(Some(n));
    }
    match number.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
        Some(f) => Err(D::Error::invalid_value(Unexpected::Float(f), &"an integer")),
        None => Err(D::Error::invalid_value(
            Unexpected::Other("number"),
            &"an integer",
        )),
    }
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn urls_with_hidden_characters_or_credentials_are_refused() {
        for bad in [
            "https://merchant.example/hook\r\nX-Injected: 1",
            "https://merchant.example/ho\tok",
            "https://merchant.example/hook\u{0}",
            "https://merchant.example/ho\u{2028}ok",
            "https://merchant.example/ho\u{200b}ok",
            "https://user:pass@merchant.example/hook",
            "https://user@merchant.example/hook",
        ] {
            let mut errors = FieldErrors::new();
            assert!(
                https_url(Some(&bad.to_string()), "url", &mut errors).is_none(),
                "{bad:?}"
            );
            assert!(
                callback_url(Some(&bad.to_string()), "url", &mut errors).is_none(),
                "{bad:?}"
            );
        }
        let mut errors = FieldErrors::new();
        let good = "https://merchant.example/hook?x=1".to_string();
        assert_eq!(
            https_url(Some(&good), "url", &mut errors),
            Some(good.clone())
        );
        assert_eq!(callback_url(Some(&good), "url", &mut errors), Some(good));
    }
}
