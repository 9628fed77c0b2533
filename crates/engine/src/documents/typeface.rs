//! The typeface of the PDFs the service writes: Liberation Sans (SIL OFL 1.1, files and licence
//! in `assets/fonts/`), embedded so that every Spanish character (á é í ó ú ü ñ Ñ ¿ ¡ º ª) and
//! every name a customer types prints the same in any reader, with no font installed.
//!
//! Metrics and the character-to-glyph map come from the font itself (`ttf-parser`); only the
//! glyphs a document uses are embedded (`subsetter`): a two-page mandate carries 21 KB and
//! 14 KB of the 411 KB and 414 KB faces (13 KB and 10 KB deflated), 31 KB in all (8.6 KB
//! when it named the standard Helvetica, embedding nothing and printing no character outside
//! WinAnsi).
//!
//! Why these and not a PDF-generation crate (measured): the PDF objects are `lopdf`'s, which the
//! service already uses to read and seal uploads; `printpdf` 0.12 resolves 132 crates and 0.7
//! 32, and both bring a second `lopdf` (0.44, 0.31) beside ours. `ttf-parser` and `subsetter`
//! (without its variable-font feature, which pulls in `skrifa`) build clean in about 4 s.
//! `lopdf`'s own `font_embedding` embeds the whole face per document, as a simple font.
//!
//! Text is written as a CID-keyed font (Type0, Identity-H) whose codes are the glyph ids of the
//! full font: a page's text can be encoded the moment it is laid out, and the subset, made
//! once every page is written, maps those ids onto its own through `CIDToGIDMap`. A `ToUnicode`
//! map makes the text searchable and extractable. Everything here is a function of the text, so
//! the same document gives the same bytes.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream, StringFormat, dictionary};
use sha2::{Digest, Sha256};
use ttf_parser::{Face, GlyphId};

static REGULAR_TTF: &[u8] = include_bytes!("../../../../assets/fonts/LiberationSans-Regular.ttf");
static BOLD_TTF: &[u8] = include_bytes!("../../../../assets/fonts/LiberationSans-Bold.ttf");

static REGULAR: LazyLock<Face<'static>> =
    LazyLock::new(|| Face::parse(REGULAR_TTF, 0).expect("the bundled regular face parses"));
static BOLD: LazyLock<Face<'static>> =
    LazyLock::new(|| Face::parse(BOLD_TTF, 0).expect("the bundled bold face parses"));

/// A character the font has no glyph for prints as this one.
const REPLACEMENT: char = '?';

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Font {
    Regular,
    Bold,
}

impl Font {
    fn face(self) -> &'static Face<'static> {
        match self {
            Font::Regular => &REGULAR,
            Font::Bold => &BOLD,
        }
    }

    fn file(self) -> &'static [u8] {
        match self {
            Font::Regular => REGULAR_TTF,
            Font::Bold => BOLD_TTF,
        }
    }

    fn postscript_name(self) -> &'static str {
        match self {
            Font::Regular => "LiberationSans",
            Font::Bold => "LiberationSans-Bold",
        }
    }

    /// The glyph that prints `c`, and the character it shows: `c` itself, or the replacement
    /// when the font has no glyph for it.
    fn printed(self, c: char) -> (GlyphId, char) {
        let face = self.face();
        match face.glyph_index(c) {
            Some(glyph) => (glyph, c),
            None => (
                face.glyph_index(REPLACEMENT).unwrap_or(GlyphId(0)),
                REPLACEMENT,
            ),
        }
    }

    /// A glyph's advance in thousandths of the font size (PDF glyph space).
    fn advance(self, glyph: GlyphId) -> f64 {
        let face = self.face();
        let units = face.glyph_hor_advance(glyph).unwrap_or(0);
        f64::from(units) * 1000.0 / f64::from(face.units_per_em())
    }

    /// A font-unit measure in PDF glyph space.
    fn scaled(self, units: impl Into<f64>) -> i64 {
        (units.into() * 1000.0 / f64::from(self.face().units_per_em())).round() as i64
    }
}

/// The width of `text` in points at `size`.
pub fn text_width(text: &str, font: Font, size: f64) -> f64 {
    let units: f64 = text.chars().map(|c| font.advance(font.printed(c).0)).sum();
    units * size / 1000.0
}

/// Breaks `text` into lines no wider than `width` points (explicit newlines are kept; a word
/// longer than a line is cut).
pub fn wrap(text: &str, font: Font, size: f64, width: f64) -> Vec<String> {
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        for word in paragraph.split(' ').filter(|w| !w.is_empty()) {
            let candidate = if line.is_empty() {
                word.to_string()
            } else {
                format!("{line} {word}")
            };
            if text_width(&candidate, font, size) <= width {
                line = candidate;
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            // A word wider than the line is cut where it overflows.
            let mut piece = String::new();
            for c in word.chars() {
                piece.push(c);
                if text_width(&piece, font, size) > width && piece.chars().count() > 1 {
                    piece.pop();
                    lines.push(std::mem::take(&mut piece));
                    piece.push(c);
                }
            }
            line = piece;
        }
        lines.push(line);
    }
    lines
}

/// The glyphs one PDF uses of each face, collected as its text is encoded; then embedded as
/// subsets.
#[derive(Debug, Default)]
pub struct Glyphs {
    /// Per face, each glyph used and the text it stands for (for `ToUnicode`).
    used: BTreeMap<Font, BTreeMap<u16, char>>,
}

impl Glyphs {
    pub fn new() -> Self {
        Self::default()
    }

    /// `text` as the bytes of a string operand of `Tj` in `font` (two per character).
    pub fn encode(&mut self, font: Font, text: &str) -> Vec<u8> {
        let used = self.used.entry(font).or_default();
        let mut out = Vec::with_capacity(text.len() * 2);
        for c in text.chars() {
            let (glyph, shown) = font.printed(c);
            used.entry(glyph.0).or_insert(shown);
            out.extend_from_slice(&glyph.0.to_be_bytes());
        }
        out
    }

    /// [`Self::encode`] as a hexadecimal string object, for `lopdf` content operations.
    pub fn string(&mut self, font: Font, text: &str) -> Object {
        Object::String(self.encode(font, text), StringFormat::Hexadecimal)
    }

    /// [`Self::encode`] as a hexadecimal string literal, for content written as text.
    pub fn hex_literal(&mut self, font: Font, text: &str) -> String {
        format!("<{}>", hex::encode_upper(self.encode(font, text)))
    }

    /// Writes the font dictionary of `font` (its subset, widths and maps) as object `id`, which
    /// the pages' resources may already refer to.
    pub fn embed(&self, doc: &mut Document, font: Font, id: ObjectId) -> Result<(), FontError> {
        let empty = BTreeMap::new();
        let used = self.used.get(&font).unwrap_or(&empty);
        let mut remapper = subsetter::GlyphRemapper::new();
        for glyph in used.keys() {
            remapper.remap(*glyph);
        }
        let subset = subsetter::subset(font.file(), 0, &remapper)
            .map_err(|e| FontError(format!("{}: {e}", font.postscript_name())))?;
        let name = format!("{}+{}", subset_tag(font, used), font.postscript_name());

        let mut file = Stream::new(dictionary! { "Length1" => subset.len() as i64 }, subset);
        file.compress().map_err(|e| FontError(e.to_string()))?;
        let file_id = doc.add_object(file);
        let descriptor_id = doc.add_object(descriptor(font, &name, file_id));
        let mut cid_to_gid = Stream::new(Dictionary::new(), cid_to_gid_map(used, &remapper));
        cid_to_gid
            .compress()
            .map_err(|e| FontError(e.to_string()))?;
        let cid_to_gid_id = doc.add_object(cid_to_gid);
        let descendant_id = doc.add_object(dictionary! {
            "Type" => "Font",
            "Subtype" => "CIDFontType2",
            "BaseFont" => Object::Name(name.clone().into_bytes()),
            "CIDSystemInfo" => dictionary! {
                "Registry" => Object::string_literal("Adobe"),
                "Ordering" => Object::string_literal("Identity"),
                "Supplement" => 0,
            },
            "FontDescriptor" => descriptor_id,
            "DW" => font.scaled(font.face().glyph_hor_advance(GlyphId(0)).unwrap_or(0)),
            "W" => widths(font, used),
            "CIDToGIDMap" => cid_to_gid_id,
        });
        let mut to_unicode = Stream::new(Dictionary::new(), to_unicode_cmap(used).into_bytes());
        to_unicode
            .compress()
            .map_err(|e| FontError(e.to_string()))?;
        let to_unicode_id = doc.add_object(to_unicode);
        doc.set_object(
            id,
            dictionary! {
                "Type" => "Font",
                "Subtype" => "Type0",
                "BaseFont" => Object::Name(name.into_bytes()),
                "Encoding" => "Identity-H",
                "DescendantFonts" => vec![Object::Reference(descendant_id)],
                "ToUnicode" => to_unicode_id,
            },
        );
        Ok(())
    }
}

/// The bundled font could not be subset (it can only come from a damaged build).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("font subset failed: {0}")]
pub struct FontError(String);

/// Six capital letters naming the subset, derived from its glyphs (PDF 32000 9.6.4).
fn subset_tag(font: Font, used: &BTreeMap<u16, char>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(font.postscript_name().as_bytes());
    for glyph in used.keys() {
        hasher.update(glyph.to_be_bytes());
    }
    hasher
        .finalize()
        .iter()
        .take(6)
        .map(|b| char::from(b'A' + b % 26))
        .collect()
}

fn descriptor(font: Font, name: &str, file_id: ObjectId) -> Dictionary {
    let face = font.face();
    let bbox = face.global_bounding_box();
    let bold = font == Font::Bold;
    dictionary! {
        "Type" => "FontDescriptor",
        "FontName" => Object::Name(name.as_bytes().to_vec()),
        // Nonsymbolic (the Latin character set), plus ForceBold for the bold face.
        "Flags" => if bold { 32 | (1 << 18) } else { 32 },
        "FontBBox" => vec![
            font.scaled(bbox.x_min).into(),
            font.scaled(bbox.y_min).into(),
            font.scaled(bbox.x_max).into(),
            font.scaled(bbox.y_max).into(),
        ],
        "ItalicAngle" => face.italic_angle().round() as i64,
        "Ascent" => font.scaled(face.ascender()),
        "Descent" => font.scaled(face.descender()),
        "CapHeight" => font.scaled(face.capital_height().unwrap_or(face.ascender())),
        // The font has no stem width table; these are the usual values for its weights.
        "StemV" => if bold { 140 } else { 80 },
        "FontFile2" => file_id,
    }
}

/// `W`: each used glyph's width, keyed by its code (the full font's glyph id).
fn widths(font: Font, used: &BTreeMap<u16, char>) -> Vec<Object> {
    let mut out = Vec::with_capacity(used.len() * 2);
    for glyph in used.keys() {
        out.push(i64::from(*glyph).into());
        out.push(vec![Object::Real(font.advance(GlyphId(*glyph)) as f32)].into());
    }
    out
}

/// Code (the full font's glyph id) to the subset's glyph id, two bytes each, big-endian.
fn cid_to_gid_map(used: &BTreeMap<u16, char>, remapper: &subsetter::GlyphRemapper) -> Vec<u8> {
    let highest = used.keys().next_back().copied().unwrap_or(0);
    let mut map = vec![0u8; (usize::from(highest) + 1) * 2];
    for glyph in used.keys() {
        let new = remapper.get(*glyph).unwrap_or(0);
        let at = usize::from(*glyph) * 2;
        map[at..at + 2].copy_from_slice(&new.to_be_bytes());
    }
    map
}

/// The `ToUnicode` CMap (Adobe technical note 5411): each code to the text it shows.
fn to_unicode_cmap(used: &BTreeMap<u16, char>) -> String {
    let mut cmap = String::from(
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n\
         /CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n\
         /CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n\
         1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n",
    );
    let entries: Vec<(u16, char)> = used
        .iter()
        .filter(|(glyph, _)| **glyph != 0)
        .map(|(g, c)| (*g, *c))
        .collect();
    // At most 100 entries per block, as the CMap syntax requires.
    for block in entries.chunks(100) {
        cmap.push_str(&format!("{} beginbfchar\n", block.len()));
        for (glyph, c) in block {
            let mut units = [0u16; 2];
            let utf16: String = c
                .encode_utf16(&mut units)
                .iter()
                .map(|u| format!("{u:04X}"))
                .collect();
            cmap.push_str(&format!("<{glyph:04X}> <{utf16}>\n"));
        }
        cmap.push_str("endbfchar\n");
    }
    cmap.push_str("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
    cmap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spanish_character_has_its_own_glyph_in_both_faces() {
        for font in [Font::Regular, Font::Bold] {
            for c in "áéíóúüñÁÉÍÓÚÜÑ¿¡ºª$°·€".chars() {
                assert!(font.face().glyph_index(c).is_some(), "{c} in {font:?}");
            }
        }
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
    fn widths_are_the_fonts_own() {
        // Liberation Sans is metric-compatible with Helvetica: "a" is 556/1000, "W" 944.
        assert!((text_width("a", Font::Regular, 1000.0) - 556.0).abs() < 1.0);
        assert!((text_width("W", Font::Regular, 1000.0) - 944.0).abs() < 1.0);
        assert!(text_width("Ñandú", Font::Bold, 10.0) > text_width("Ñandú", Font::Regular, 10.0));
    }

    #[test]
    fn characters_outside_the_font_print_as_a_question_mark() {
        let mut glyphs = Glyphs::new();
        let unknown = glyphs.encode(Font::Regular, "日");
        let question = glyphs.encode(Font::Regular, "?");
        assert_eq!(unknown, question);
        assert_eq!(glyphs.encode(Font::Regular, "ñ").len(), 2);
    }

    #[test]
    fn the_maps_cover_exactly_the_glyphs_used() {
        let mut glyphs = Glyphs::new();
        glyphs.encode(Font::Regular, "José Ñúñez ¿$?");
        let used = &glyphs.used[&Font::Regular];
        let cmap = to_unicode_cmap(used);
        let n = Font::Regular.printed('Ñ').0.0;
        assert!(cmap.contains(&format!("<{n:04X}> <00D1>")), "{cmap}");
        assert!(cmap.contains("<00BF>"), "¿");
        let mut remapper = subsetter::GlyphRemapper::new();
        for glyph in used.keys() {
            remapper.remap(*glyph);
        }
        let map = cid_to_gid_map(used, &remapper);
        let at = usize::from(n) * 2;
        assert_eq!(
            u16::from_be_bytes([map[at], map[at + 1]]),
            remapper.get(n).unwrap()
        );
        assert_eq!(
            map.len(),
            (usize::from(*used.keys().last().unwrap()) + 1) * 2
        );
    }
}
