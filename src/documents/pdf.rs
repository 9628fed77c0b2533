//! A small PDF 1.4 writer for text documents: the two standard Helvetica fonts (no embedding,
//! WinAnsi encoding, so Spanish accents print), A4 pages, wrapped paragraphs, label/value rows
//! and rules, flowed onto as many pages as the text needs. Content streams are left
//! uncompressed: the documents are small and stay inspectable.
//!
//! The output is deterministic for a given input (no clock, no random id), so the SHA-256 of a
//! document identifies it.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use super::helvetica::literal;
use super::helvetica::{Font, wrap};

const PAGE_WIDTH: f64 = 595.0;
const PAGE_HEIGHT: f64 = 842.0;
const MARGIN_X: f64 = 56.0;
const TOP: f64 = 790.0;
/// Text stops above this line; the footer sits below it.
const BOTTOM: f64 = 72.0;
const CONTENT_WIDTH: f64 = PAGE_WIDTH - 2.0 * MARGIN_X;
/// Where the value column of a label/value row starts.
const VALUE_X: f64 = MARGIN_X + 150.0;

/// The page resource name of each font.
fn resource(font: Font) -> &'static str {
    match font {
        Font::Regular => "F1",
        Font::Bold => "F2",
    }
}

/// One piece of a document, laid out top to bottom.
#[derive(Clone, Debug)]
pub enum Block {
    Title(String),
    Heading(String),
    Paragraph(String),
    /// Small print, for hashes and identifiers.
    Small(String),
    /// A label in bold and its value beside it (the value wraps in its column).
    Row(String, String),
    Rule,
}

/// Document-level metadata (the Info dictionary) and the footer of every page.
pub struct Meta<'a> {
    pub title: &'a str,
    pub subject: &'a str,
    pub author: &'a str,
    /// PDF date, `D:YYYYMMDDHHmmSSZ`.
    pub creation_date: &'a str,
    /// Printed at the foot of every page, before "Página i de n".
    pub footer: &'a str,
}

/// A positioned line of text or a rule on a page.
enum Mark {
    Text {
        font: Font,
        size: f64,
        x: f64,
        y: f64,
        text: String,
    },
    Rule {
        y: f64,
    },
}

/// Lays the blocks out and writes the whole file.
pub fn render(blocks: &[Block], meta: &Meta<'_>) -> Vec<u8> {
    let pages = layout(blocks);
    write_file(&pages, meta)
}

fn layout(blocks: &[Block]) -> Vec<Vec<Mark>> {
    let mut pages: Vec<Vec<Mark>> = vec![Vec::new()];
    let mut y = TOP;
    // Moves to a new page when `needed` points do not fit above the bottom margin.
    let room = |pages: &mut Vec<Vec<Mark>>, y: &mut f64, needed: f64| {
        if *y - needed < BOTTOM {
            pages.push(Vec::new());
            *y = TOP;
        }
    };
    for block in blocks {
        match block {
            Block::Title(text) => {
                for line in wrap(text, Font::Bold, 16.0, CONTENT_WIDTH) {
                    room(&mut pages, &mut y, 22.0);
                    y -= 20.0;
                    push_text(&mut pages, Font::Bold, 16.0, MARGIN_X, y, line);
                }
                y -= 6.0;
            }
            Block::Heading(text) => {
                // Keep a heading with at least two lines of what follows it.
                room(&mut pages, &mut y, 48.0);
                y -= 8.0;
                for line in wrap(text, Font::Bold, 11.5, CONTENT_WIDTH) {
                    room(&mut pages, &mut y, 16.0);
                    y -= 15.0;
                    push_text(&mut pages, Font::Bold, 11.5, MARGIN_X, y, line);
                }
                y -= 3.0;
            }
            Block::Paragraph(text) => {
                for line in wrap(text, Font::Regular, 10.0, CONTENT_WIDTH) {
                    room(&mut pages, &mut y, 14.0);
                    y -= 13.5;
                    push_text(&mut pages, Font::Regular, 10.0, MARGIN_X, y, line);
                }
                y -= 4.0;
            }
            Block::Small(text) => {
                for line in wrap(text, Font::Regular, 8.0, CONTENT_WIDTH) {
                    room(&mut pages, &mut y, 11.0);
                    y -= 10.5;
                    push_text(&mut pages, Font::Regular, 8.0, MARGIN_X, y, line);
                }
            }
            Block::Row(label, value) => {
                let labels = wrap(label, Font::Bold, 10.0, VALUE_X - MARGIN_X - 8.0);
                let values = wrap(value, Font::Regular, 10.0, PAGE_WIDTH - MARGIN_X - VALUE_X);
                let lines = labels.len().max(values.len()).max(1);
                room(&mut pages, &mut y, 13.5 * lines as f64);
                for i in 0..lines {
                    y -= 13.5;
                    if let Some(l) = labels.get(i) {
                        push_text(&mut pages, Font::Bold, 10.0, MARGIN_X, y, l.clone());
                    }
                    if let Some(v) = values.get(i) {
                        push_text(&mut pages, Font::Regular, 10.0, VALUE_X, y, v.clone());
                    }
                }
                y -= 1.5;
            }
            Block::Rule => {
                room(&mut pages, &mut y, 10.0);
                y -= 6.0;
                pages.last_mut().expect("a page").push(Mark::Rule { y });
                y -= 4.0;
            }
        }
    }
    pages
}

fn push_text(pages: &mut [Vec<Mark>], font: Font, size: f64, x: f64, y: f64, text: String) {
    pages.last_mut().expect("a page").push(Mark::Text {
        font,
        size,
        x,
        y,
        text,
    });
}

fn content_stream(marks: &[Mark], footer: &str, page: usize, pages: usize) -> String {
    let mut s = String::new();
    for mark in marks {
        match mark {
            Mark::Text {
                font,
                size,
                x,
                y,
                text,
            } => {
                let _ = writeln!(
                    s,
                    "BT /{} {size:.1} Tf 1 0 0 1 {x:.2} {y:.2} Tm {} Tj ET",
                    resource(*font),
                    literal(text)
                );
            }
            Mark::Rule { y } => {
                let _ = writeln!(
                    s,
                    "q 0.6 G 0.6 w {MARGIN_X:.2} {y:.2} m {:.2} {y:.2} l S Q",
                    PAGE_WIDTH - MARGIN_X
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "q 0.8 G 0.5 w {MARGIN_X:.2} {:.2} m {:.2} {:.2} l S Q",
        BOTTOM - 14.0,
        PAGE_WIDTH - MARGIN_X,
        BOTTOM - 14.0
    );
    let footer = format!("{footer} · Página {page} de {pages}");
    for (i, line) in wrap(&footer, Font::Regular, 7.5, CONTENT_WIDTH)
        .iter()
        .enumerate()
    {
        let _ = writeln!(
            s,
            "BT /F1 7.5 Tf 1 0 0 1 {MARGIN_X:.2} {:.2} Tm {} Tj ET",
            BOTTOM - 26.0 - 9.0 * i as f64,
            literal(line)
        );
    }
    s
}

/// Serializes the objects, the cross-reference table and the trailer.
fn write_file(pages: &[Vec<Mark>], meta: &Meta<'_>) -> Vec<u8> {
    // 1 catalog, 2 page tree, 3 and 4 fonts, 5 info, then a page and its content per page.
    let page_count = pages.len();
    let page_id = |i: usize| 6 + 2 * i;
    let mut objects: Vec<String> = Vec::with_capacity(5 + 2 * page_count);
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    let kids: Vec<String> = (0..page_count)
        .map(|i| format!("{} 0 R", page_id(i)))
        .collect();
    objects.push(format!(
        "<< /Type /Pages /Kids [{}] /Count {page_count} >>",
        kids.join(" ")
    ));
    for base in ["Helvetica", "Helvetica-Bold"] {
        objects.push(format!(
            "<< /Type /Font /Subtype /Type1 /BaseFont /{base} /Encoding /WinAnsiEncoding >>"
        ));
    }
    objects.push(format!(
        "<< /Title {} /Subject {} /Author {} /Producer (mandato) /CreationDate {} >>",
        literal(meta.title),
        literal(meta.subject),
        literal(meta.author),
        literal(meta.creation_date)
    ));
    for (i, marks) in pages.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {PAGE_WIDTH:.0} {PAGE_HEIGHT:.0}] \
             /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents {} 0 R >>",
            page_id(i) + 1
        ));
        let stream = content_stream(marks, meta.footer, i + 1, page_count);
        objects.push(format!(
            "<< /Length {} >>\nstream\n{stream}endstream",
            stream.len()
        ));
    }

    let mut out: Vec<u8> = Vec::new();
    // The binary comment tells transfer tools the file is not plain text.
    out.extend_from_slice(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n");
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{body}\nendobj\n", i + 1).as_bytes());
    }
    let xref_at = out.len();
    let mut xref = format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1);
    for offset in &offsets {
        let _ = writeln!(xref, "{offset:010} 00000 n ");
    }
    // The file identifier: a digest of everything written before it.
    let id = hex::encode(&Sha256::digest(&out)[..16]);
    let _ = write!(
        xref,
        "trailer\n<< /Size {} /Root 1 0 R /Info 5 0 R /ID [<{id}> <{id}>] >>\nstartxref\n{xref_at}\n%%EOF\n",
        objects.len() + 1
    );
    out.extend_from_slice(xref.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::helvetica::text_width;

    #[test]
    fn literals_escape_delimiters_and_encode_accents() {
        assert_eq!(literal("a(b)c\\"), "(a\\(b\\)c\\\\)");
        // é is 0xE9 in WinAnsi, ñ 0xF1; a character outside it prints as `?`.
        assert_eq!(literal("é ñ 日"), "(\\351 \\361 ?)");
    }

    #[test]
    fn wrapping_respects_the_width() {
        let text = "palabra ".repeat(60);
        let lines = wrap(&text, Font::Regular, 10.0, 200.0);
        assert!(lines.len() > 5);
        for line in &lines {
            assert!(text_width(line, Font::Regular, 10.0) <= 200.0, "{line}");
        }
        let long = wrap(&"x".repeat(500), Font::Regular, 10.0, 100.0);
        assert!(
            long.iter()
                .all(|l| text_width(l, Font::Regular, 10.0) <= 100.0)
        );
        assert_eq!(long.concat().len(), 500);
    }

    #[test]
    fn the_cross_reference_table_points_at_every_object() {
        let blocks: Vec<Block> = (0..200)
            .map(|i| Block::Paragraph(format!("Línea número {i} del documento")))
            .collect();
        let meta = Meta {
            title: "Prueba",
            subject: "s",
            author: "a",
            creation_date: "D:20261122081210Z",
            footer: "pie",
        };
        let bytes = render(&blocks, &meta);
        // Everything after the binary comment of the header is ASCII.
        let tail = std::str::from_utf8(&bytes[15..]).expect("ASCII after the header");
        let start: usize = tail
            .rsplit("startxref\n")
            .next()
            .and_then(|t| t.lines().next())
            .and_then(|n| n.parse().ok())
            .expect("startxref");
        let xref = std::str::from_utf8(&bytes[start..]).unwrap();
        assert!(xref.starts_with("xref\n0 "));
        let entries: Vec<&str> = xref
            .lines()
            .skip(3)
            .take_while(|l| l.ends_with(" n "))
            .collect();
        assert!(entries.len() > 7, "several pages were needed");
        for (i, entry) in entries.iter().enumerate() {
            let offset: usize = entry[..10].parse().unwrap();
            assert!(
                bytes[offset..].starts_with(format!("{} 0 obj\n", i + 1).as_bytes()),
                "object {}",
                i + 1
            );
        }
    }
}
