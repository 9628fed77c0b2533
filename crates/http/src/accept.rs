//! Content negotiation on `Accept` (RFC 9110 section 12.5.1) for the operations that answer in
//! more than one media type. An offered type takes the quality of the most specific range that
//! matches it (`text/csv` before `text/*` before `*/*`); the highest quality above zero wins,
//! and on a tie the type offered first (JSON, the API's default). No `Accept`, or one with no
//! range that can be read, accepts anything, as if it were absent.

use axum::http::HeaderMap;
use axum::http::header::ACCEPT;
use mime::Mime;

/// One media range of an `Accept` header with its weight.
struct Range {
    mime: Mime,
    /// In thousandths, as RFC 9110 allows at most three decimals.
    quality: u16,
}

impl Range {
    fn parse(text: &str) -> Option<Range> {
        let mime: Mime = text.trim().parse().ok()?;
        let quality = match mime.get_param("q") {
            None => 1000,
            Some(q) => quality(q.as_str())?,
        };
        Some(Range { mime, quality })
    }

    /// How specifically this range names `offered`: `None` when it does not match it.
    fn specificity(&self, offered: &Mime) -> Option<u8> {
        let (kind, subtype) = (self.mime.type_(), self.mime.subtype());
        if kind == mime::STAR && subtype == mime::STAR {
            Some(0)
        } else if kind != offered.type_() {
            None
        } else if subtype == mime::STAR {
            Some(1)
        } else if subtype == offered.subtype() {
            Some(2)
        } else {
            None
        }
    }
}

/// A `q` value (`0` to `1`, at most three decimals) in thousandths.
pub(super) fn quality(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths = format!("{fraction:0<3}").parse::<u16>().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

/// Which of `offered` the client prefers: its index, or `None` when it accepts none of them
/// (answered 406).
pub fn preferred(headers: &HeaderMap, offered: &[Mime]) -> Option<usize> {
    let ranges: Vec<Range> = headers
        .get_all(ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(Range::parse)
        .collect();
    if ranges.is_empty() {
        return if offered.is_empty() { None } else { Some(0) };
    }
    let mut best: Option<(usize, u16)> = None;
    for (index, mime) in offered.iter().enumerate() {
        let quality = ranges
            .iter()
            .filter_map(|r| r.specificity(mime).map(|s| (s, r.quality)))
            .max_by_key(|(specificity, _)| *specificity)
            .map(|(_, quality)| quality)
            .unwrap_or(0);
        if quality > 0 && best.is_none_or(|(_, q)| quality > q) {
            best = Some((index, quality));
        }
    }
    best.map(|(index, _)| index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn check(accept: &[&str], expected: Option<usize>) {
        let mut headers = HeaderMap::new();
        for value in accept {
            headers.append(ACCEPT, HeaderValue::from_str(value).unwrap());
        }
        let offered = [mime::APPLICATION_JSON, mime::TEXT_CSV];
        assert_eq!(
            preferred(&headers, &offered),
            expected,
            "Accept: {accept:?}"
        );
    }

    #[test]
    fn json_unless_csv_is_preferred() {
        check(&[], Some(0));
        check(&["*/*"], Some(0));
        check(&["application/json"], Some(0));
        check(&["text/csv"], Some(1));
        check(&["text/csv; charset=utf-8"], Some(1));
        check(&["TEXT/CSV"], Some(1));
        check(&["text/*"], Some(1));
        check(&["application/json, text/csv"], Some(0));
        check(&["application/json;q=0.5, text/csv"], Some(1));
        check(&["text/csv;q=0.9, */*;q=0.1"], Some(1));
        check(&["text/html", "text/csv"], Some(1));
    }

    #[test]
    fn the_most_specific_range_sets_the_quality() {
        check(&["*/*, application/json;q=0"], Some(1));
        check(
            &["text/*;q=0.2, text/csv;q=0.9, application/*;q=0.5"],
            Some(1),
        );
        check(&["*/*, text/csv;q=0"], Some(0));
        check(&["text/*;q=1, text/csv;q=0"], None);
    }

    #[test]
    fn nothing_offered_is_not_acceptable() {
        check(&["application/xml"], None);
        check(&["image/*, text/html"], None);
        check(&["application/json;q=0, text/csv;q=0"], None);
        check(&["*/*;q=0"], None);
    }

    #[test]
    fn unreadable_ranges_are_ignored() {
        check(&["garbage"], Some(0));
        check(&["text/csv;q=2"], Some(0));
        check(&["text/csv;q=0.1234, application/xml"], None);
        check(&["nonsense, text/csv"], Some(1));
    }

    #[test]
    fn quality_values() {
        assert_eq!(quality("1"), Some(1000));
        assert_eq!(quality("1.000"), Some(1000));
        assert_eq!(quality("0.5"), Some(500));
        assert_eq!(quality("0.05"), Some(50));
        assert_eq!(quality("0"), Some(0));
        assert_eq!(quality("1.5"), None);
        assert_eq!(quality("0.-1"), None);
        assert_eq!(quality("-0"), None);
    }
}
