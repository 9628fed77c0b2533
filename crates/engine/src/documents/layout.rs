//! The layout of the service's text documents: A4 pages, a title, headings, wrapped
//! paragraphs, label/value rows and rules, flowed onto as many pages as the text needs, with a
//! footer on every page; written as a PDF by `lopdf` (its object model, content operations and
//! serializer) in the embedded Liberation Sans of [`super::typeface`].
//!
//! The output is deterministic for a given input: the creation date is the caller's (the
//! acceptance, never the clock), object numbers follow the layout, and the file identifier is a
//! digest of the file itself, so the SHA-256 of a document identifies it.

use lopdf::content::{Content, Operation};
use lopdf::{Dictionary, Document, Object, Stream, StringFormat, dictionary};
use sha2::{Digest, Sha256};

use super::typeface::{Font, Glyphs, wrap};

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

const FOOTER_SIZE: f64 = 7.5;

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

fn op(operator: &str, operands: Vec<Object>) -> Operation {
    Operation::new(operator, operands)
}

/// A coordinate or size, rounded to hundredths of a point so the file does not depend on
/// floating-point noise.
fn pt(v: f64) -> Object {
    Object::Real(((v * 100.0).round() / 100.0) as f32)
}

fn text_ops(
    glyphs: &mut Glyphs,
    font: Font,
    size: f64,
    (x, y): (f64, f64),
    text: &str,
) -> [Operation; 5] {
    [
        op("BT", vec![]),
        op("Tf", vec![Object::Name(resource(font).into()), pt(size)]),
        op("Td", vec![pt(x), pt(y)]),
        op("Tj", vec![glyphs.string(font, text)]),
        op("ET", vec![]),
    ]
}

/// A horizontal line across the text column, in `gray`, `width` points thick.
fn rule_ops(y: f64, gray: f64, width: f64) -> [Operation; 7] {
    [
        op("q", vec![]),
        op("G", vec![pt(gray)]),
        op("w", vec![pt(width)]),
        op("m", vec![pt(MARGIN_X), pt(y)]),
        op("l", vec![pt(PAGE_WIDTH - MARGIN_X), pt(y)]),
        op("S", vec![]),
        op("Q", vec![]),
    ]
}

/// The operations drawing one page: its marks, then the footer and "Página i de n".
fn page_operations(
    glyphs: &mut Glyphs,
    marks: &[Mark],
    footer: &str,
    page: usize,
    pages: usize,
) -> Vec<Operation> {
    let mut ops = Vec::new();
    for mark in marks {
        match mark {
            Mark::Text {
                font,
                size,
                x,
                y,
                text,
            } => {
                ops.extend(text_ops(glyphs, *font, *size, (*x, *y), text));
            }
            Mark::Rule { y } => {
                ops.extend(rule_ops(*y, 0.6, 0.6));
            }
        }
    }
    ops.extend(rule_ops(BOTTOM - 14.0, 0.8, 0.5));
    let footer = format!("{footer} · Página {page} de {pages}");
    for (i, line) in wrap(&footer, Font::Regular, FOOTER_SIZE, CONTENT_WIDTH)
        .iter()
        .enumerate()
    {
        let y = BOTTOM - 26.0 - 9.0 * i as f64;
        ops.extend(text_ops(
            glyphs,
            Font::Regular,
            FOOTER_SIZE,
            (MARGIN_X, y),
            line,
        ));
    }
    ops
}

/// A text string of the Info dictionary: PDFDocEncoding for ASCII, UTF-16BE otherwise.
fn text_string(text: &str) -> Object {
    if text.is_ascii() {
        return Object::string_literal(text);
    }
    let mut bytes = vec![0xFE, 0xFF];
    for unit in text.encode_utf16() {
        bytes.extend_from_slice(&unit.to_be_bytes());
    }
    Object::String(bytes, StringFormat::Hexadecimal)
}

fn compressed(content: Vec<u8>) -> Stream {
    let mut stream = Stream::new(Dictionary::new(), content);
    // Deflating a buffer in memory does not fail; an uncompressed stream is as valid.
    let _ = stream.compress();
    stream
}

/// Builds the document's objects and serializes it.
fn write_file(pages: &[Vec<Mark>], meta: &Meta<'_>) -> Vec<u8> {
    let mut doc = Document::with_version("1.7");
    let pages_id = doc.new_object_id();
    let regular_id = doc.new_object_id();
    let bold_id = doc.new_object_id();
    let mut glyphs = Glyphs::new();
    let mut kids = Vec::with_capacity(pages.len());
    for (i, marks) in pages.iter().enumerate() {
        let operations = page_operations(&mut glyphs, marks, meta.footer, i + 1, pages.len());
        let content = Content { operations }
            .encode()
            .expect("content of names, numbers and strings encodes");
        let content_id = doc.add_object(compressed(content));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "MediaBox" => vec![0.into(), 0.into(), pt(PAGE_WIDTH), pt(PAGE_HEIGHT)],
            "Resources" => dictionary! {
                "Font" => dictionary! {
                    resource(Font::Regular) => regular_id,
                    resource(Font::Bold) => bold_id,
                },
            },
            "Contents" => content_id,
        });
        kids.push(Object::Reference(page_id));
    }
    doc.set_object(
        pages_id,
        dictionary! { "Type" => "Pages", "Count" => kids.len() as i64, "Kids" => kids },
    );
    for (font, id) in [(Font::Regular, regular_id), (Font::Bold, bold_id)] {
        glyphs
            .embed(&mut doc, font, id)
            .expect("the bundled font subsets (a unit test renders every document kind)");
    }
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    let info_id = doc.add_object(dictionary! {
        "Title" => text_string(meta.title),
        "Subject" => text_string(meta.subject),
        "Author" => text_string(meta.author),
        "Producer" => Object::string_literal("mandato"),
        "CreationDate" => Object::string_literal(meta.creation_date),
    });
    doc.trailer.set("Root", catalog_id);
    doc.trailer.set("Info", info_id);
    // The file identifier: a digest of the file written without it.
    let id = Object::String(
        Sha256::digest(save(&mut doc))[..16].to_vec(),
        StringFormat::Hexadecimal,
    );
    doc.trailer.set("ID", vec![id.clone(), id]);
    save(&mut doc)
}

fn save(doc: &mut Document) -> Vec<u8> {
    let mut out = Vec::new();
    doc.save_to(&mut out)
        .expect("writing a document into memory does not fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Meta<'static> {
        Meta {
            title: "Prueba",
            subject: "Señal",
            author: "a",
            creation_date: "D:20261122081210Z",
            footer: "pie",
        }
    }

    #[test]
    fn long_text_flows_onto_pages_that_all_parse() {
        let blocks: Vec<Block> = (0..200)
            .map(|i| Block::Paragraph(format!("Línea número {i} del documento")))
            .collect();
        let bytes = render(&blocks, &meta());
        let doc = Document::load_mem(&bytes).expect("the file parses");
        let pages = doc.get_pages();
        assert!(pages.len() > 3, "several pages were needed");
        assert_eq!(
            doc.get_dictionary(
                doc.catalog()
                    .unwrap()
                    .get(b"Pages")
                    .unwrap()
                    .as_reference()
                    .unwrap()
            )
            .unwrap()
            .get(b"Count")
            .unwrap()
            .as_i64()
            .unwrap(),
            pages.len() as i64
        );
        let id = doc.trailer.get(b"ID").unwrap().as_array().unwrap();
        assert_eq!(id[0].as_str().unwrap().len(), 16);
    }

    #[test]
    fn the_same_blocks_give_the_same_bytes() {
        let blocks = [
            Block::Title("Título".into()),
            Block::Row("Nombre".into(), "José Muñoz Ñúñez".into()),
            Block::Rule,
        ];
        assert_eq!(render(&blocks, &meta()), render(&blocks, &meta()));
        let other = [Block::Title("Título".into())];
        assert_ne!(render(&blocks, &meta()), render(&other, &meta()));
    }

    #[test]
    fn info_strings_outside_ascii_are_utf16() {
        assert_eq!(
            text_string("Ñ"),
            Object::String(vec![0xFE, 0xFF, 0x00, 0xD1], StringFormat::Hexadecimal)
        );
        assert_eq!(text_string("abc"), Object::string_literal("abc"));
    }
}
