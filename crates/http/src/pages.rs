//! What every server-rendered page shares (the Magic Link, receipts, the signing pages): the
//! document shell with the commerce's name on top, and the page that only says something.
//!
//! Pages are written with maud's `html!`, which escapes every interpolated value, in text and
//! in attributes alike; nothing here or in the pages escapes by hand, and markup that is not
//! escaped is only ever a `&'static str` of ours (`PreEscaped`).
//!
//! maud rather than askama. The pages are built from many small conditional pieces (a field
//! with its error, a notice, a folded form), which stay plain Rust functions with maud instead
//! of a template struct and a file each. Measured on the 2-core machine, another build running:
//! - askama 0.16 escapes with numeric references (`&#60;script&#62;&#34;&#39;&#38;`), so the
//!   pages would no longer show the `&lt;`, `&quot;`, `&amp;` and bare `'` that the API tests
//!   of escaping (`tests/api/link.rs`, `tests/api/signatures.rs`) read; maud writes those;
//! - building the crate and its macros alone, in an empty project: askama 11.8 s, maud 6.2 s;
//! - `cargo build -p mandato-http` after an edit of `link/render.rs`: 3.6 to 4.3 s;
//! - the mandate page with its six activation forms, debug build: 450 to 500 µs, as the
//!   hand-escaped page before it (410 to 490 µs): the terms and dates cost, not the markup.

use maud::{DOCTYPE, Markup, PreEscaped, html};

/// A front's look: its style sheet and the line under every page.
pub struct Look {
    pub css: &'static str,
    pub footer: &'static str,
}

/// The top of a page that names no more than the commerce (when known).
pub fn commerce_header(commerce: Option<&str>) -> Markup {
    html! {
        @if let Some(name) = commerce {
            div class="who" { (name) }
        }
    }
}

/// A whole HTML document: `title`, `header` on top, then `body`.
pub fn document(look: &Look, title: &str, header: Markup, body: Markup) -> String {
    let page = html! {
        (DOCTYPE)
        html lang="es-CL" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width,initial-scale=1";
                meta name="robots" content="noindex,nofollow";
                title { (title) }
                style { (PreEscaped(look.css)) }
            }
            body {
                header { (header) }
                main { (body) }
                footer { (look.footer) }
            }
        }
    };
    page.into_string()
}

/// A page that only says something (unknown, expired or closed links, failures), with a link
/// back to the merchant when there is one.
pub fn message_page(
    look: &Look,
    title: &str,
    text: &str,
    commerce: Option<&str>,
    back: Option<&str>,
) -> String {
    let body = html! {
        section {
            h1 { (title) }
            p { (text) }
            @if let Some(url) = back {
                p { a href=(url) { "Volver al sitio del comercio" } }
            }
        }
    };
    document(look, title, commerce_header(commerce), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOOK: Look = Look {
        css: "body{margin:0}",
        footer: "pie",
    };

    #[test]
    fn every_value_is_escaped_in_text_and_attributes() {
        let hostile = r#"<script>alert("x")</script>' & "#;
        let page = message_page(&LOOK, hostile, hostile, Some(hostile), Some(hostile));
        assert!(!page.contains("<script>"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;' &amp; "));
        assert!(
            page.contains(r#"href="&lt;script&gt;alert(&quot;x&quot;)"#),
            "{page}"
        );
        assert!(page.starts_with("<!DOCTYPE html><html lang=\"es-CL\">"));
        assert!(page.contains("<style>body{margin:0}</style>"));
    }
}
