//! PDFs of signature processes, with `lopdf`: reading an upload (a real parse: the page tree,
//! each page's size from its MediaBox, honouring CropBox and Rotate), and sealing a signed
//! document: a stamp in every MANUAL box, a signature page for LAST_PAGE signatories, then the
//! completion certificate with the audit trail.
//!
//! Positions arrive in PDF points with the origin at the top-left corner of the page as a
//! reader displays it (the CropBox, turned by Rotate). A stamp is drawn in that display space,
//! mapped onto the page's user space (origin bottom-left) by one `cm`, so it lands where the
//! merchant put the box and reads upright whatever the page's rotation.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use lopdf::{Dictionary, Document, LoadOptions, Object, ObjectId, Stream, dictionary};

use super::SignatureType;
use super::budget::{self, Refusal};
use crate::documents::typeface::{Font, Glyphs, text_width, wrap};

/// A single stream may not inflate beyond the whole document's budget; [`budget::measure`]
/// bounds the total before `lopdf` loads anything.
const MAX_INFLATED: usize = budget::MAX_BYTES as usize;
/// Font resource names the seal adds to the pages it draws on.
const FONT_REGULAR: &str = "MdtSealR";
const FONT_BOLD: &str = "MdtSealB";
/// The appended pages are A4.
const A4: (f64, f64) = (595.0, 842.0);
const MARGIN: f64 = 50.0;
/// Stamp ink: a dark blue.
const INK: &str = "0.08 0.2 0.55";

/// Why an upload is not a PDF this service can take.
#[derive(Debug, Clone, PartialEq)]
pub enum DocumentError {
    /// Not a PDF at all, or damaged beyond reading.
    Unreadable(String),
    /// Parsing it would exceed the budgets of CONTRACT 12 (`DOCUMENT_TOO_COMPLEX`).
    TooComplex(String),
    /// Encrypted: it could not be stamped and sealed.
    Encrypted,
    NoPages,
    /// A page without a usable MediaBox (1-based).
    BadPage(u32),
}

impl std::fmt::Display for DocumentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DocumentError::Unreadable(e) => write!(f, "not a readable PDF: {e}"),
            DocumentError::TooComplex(e) => write!(f, "the PDF is too complex: {e}"),
            DocumentError::Encrypted => write!(f, "encrypted PDFs cannot be signed and sealed"),
            DocumentError::NoPages => write!(f, "the PDF has no pages"),
            DocumentError::BadPage(n) => write!(f, "page {n} has no valid MediaBox"),
        }
    }
}

/// A page's size as displayed, in points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageSize {
    pub width: f64,
    pub height: f64,
}

/// What validation needs of an upload.
#[derive(Clone, Debug)]
pub struct Inspection {
    pub pages: Vec<PageSize>,
    /// What the budget charged for parsing it (an upper bound of the parser's work).
    pub cost: budget::Cost,
}

impl From<Refusal> for DocumentError {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::TooComplex(why) => DocumentError::TooComplex(why),
            Refusal::Unsupported(why) => DocumentError::Unreadable(why),
        }
    }
}

/// The visible rectangle of a page in user space, and its rotation.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Geometry {
    llx: f64,
    lly: f64,
    urx: f64,
    ury: f64,
    /// 0, 90, 180 or 270 (clockwise, as displayed).
    rotate: i64,
}

impl Geometry {
    fn size(&self) -> PageSize {
        let (w, h) = (self.urx - self.llx, self.ury - self.lly);
        if self.rotate % 180 == 0 {
            PageSize {
                width: w,
                height: h,
            }
        } else {
            PageSize {
                width: h,
                height: w,
            }
        }
    }

    /// The `cm` matrix from display space (origin bottom-left of the page as shown, y up) to
    /// user space.
    fn matrix(&self) -> [f64; 6] {
        let Geometry {
            llx, lly, urx, ury, ..
        } = *self;
        match self.rotate {
            90 => [0.0, 1.0, -1.0, 0.0, urx, lly],
            180 => [-1.0, 0.0, 0.0, -1.0, urx, ury],
            270 => [0.0, -1.0, 1.0, 0.0, llx, ury],
            _ => [1.0, 0.0, 0.0, 1.0, llx, lly],
        }
    }
}

/// How many PDF parses or seals run at once in the process (CONTRACT 12). Each runs on one
/// blocking thread, so PDFs never take more than this many cores.
pub const CONCURRENT: usize = 2;

/// How many of them one party may run at once: one fewer than all, so that one commerce's
/// uploads (however many, however heavy) always leave a turn to the others.
pub const PER_PARTY: usize = if CONCURRENT > 1 { CONCURRENT - 1 } else { 1 };

static PERMITS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(CONCURRENT);

/// Whose PDF work a turn is for: a commerce's upload, or the installation's own work
/// (sealing, the customer's and staff's pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Party {
    Commerce(i64),
    Installation,
}

/// A turn to parse or seal; it ends when dropped.
pub struct Turn {
    _all: tokio::sync::SemaphorePermit<'static>,
    _own: tokio::sync::OwnedSemaphorePermit,
}

/// Waits for a turn: first among the party's own work (at most [`PER_PARTY`] at once), then
/// for one of the process's [`CONCURRENT`]. The second queue holds at most one waiter per
/// party, so a newcomer waits behind one request of each other party, never behind another
/// commerce's backlog. A caller that gives up (a request cut at its time limit) leaves the
/// queues.
pub async fn turn(party: Party) -> Turn {
    let own = party_turns(party)
        .acquire_owned()
        .await
        .expect("a party's semaphore is never closed");
    let all = PERMITS
        .acquire()
        .await
        .expect("the PDF semaphore is never closed");
    Turn {
        _all: all,
        _own: own,
    }
}

fn party_turns(party: Party) -> Arc<tokio::sync::Semaphore> {
    static PARTIES: std::sync::LazyLock<
        std::sync::Mutex<std::collections::HashMap<Party, Arc<tokio::sync::Semaphore>>>,
    > = std::sync::LazyLock::new(Default::default);
    let mut parties = PARTIES.lock().unwrap_or_else(|p| p.into_inner());
    Arc::clone(
        parties
            .entry(party)
            .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(PER_PARTY))),
    )
}

/// Loads a document whose cost [`budget::measure`] has accepted.
fn load(bytes: &[u8]) -> Result<Document, DocumentError> {
    let options = LoadOptions {
        max_decompressed_size: Some(MAX_INFLATED),
        ..LoadOptions::default()
    };
    let doc = Document::load_mem_with_options(bytes, options).map_err(|e| match e {
        lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. }) => {
            DocumentError::TooComplex(e.to_string())
        }
        e => DocumentError::Unreadable(e.to_string()),
    })?;
    if doc.trailer.has(b"Encrypt") || doc.was_encrypted() {
        return Err(DocumentError::Encrypted);
    }
    Ok(doc)
}

/// How many pages a PDF has (a sealed one: its signature and certificate pages included).
/// Measured by the same budget as an upload first; callers run it under [`permit`].
pub fn page_count(bytes: &[u8]) -> Result<u32, DocumentError> {
    budget::measure(bytes)?;
    Ok(u32::try_from(load(bytes)?.get_pages().len()).unwrap_or(u32::MAX))
}

/// Parses an upload: its pages and their displayed sizes. The budget is measured first, so a
/// hostile file is refused before the parser spends memory or time on it. Pure and
/// single-threaded: callers run it off the async runtime, under [`permit`].
pub fn inspect(bytes: &[u8]) -> Result<Inspection, DocumentError> {
    let cost = budget::measure(bytes)?;
    let doc = load(bytes)?;
    let pages = doc.get_pages();
    if pages.is_empty() {
        return Err(DocumentError::NoPages);
    }
    let mut sizes = Vec::with_capacity(pages.len());
    for (number, id) in pages {
        let size = geometry(&doc, id)
            .ok_or(DocumentError::BadPage(number))?
            .size();
        sizes.push(size);
    }
    Ok(Inspection { pages: sizes, cost })
}

/// An inheritable page attribute (ISO 32000-1, 7.7.3.4): the page's, or the nearest ancestor's.
fn inherited<'a>(doc: &'a Document, page: ObjectId, key: &[u8]) -> Option<&'a Object> {
    let mut node = doc.get_dictionary(page).ok()?;
    let mut seen = HashSet::new();
    loop {
        if let Ok(value) = node.get(key) {
            return doc.dereference(value).ok().map(|(_, v)| v);
        }
        let parent = node.get(b"Parent").and_then(Object::as_reference).ok()?;
        if !seen.insert(parent) {
            return None;
        }
        node = doc.get_dictionary(parent).ok()?;
    }
}

fn number(doc: &Document, value: &Object) -> Option<f64> {
    let (_, value) = doc.dereference(value).ok()?;
    let n = f64::from(value.as_float().ok()?);
    n.is_finite().then_some(n)
}

fn rectangle(doc: &Document, value: &Object) -> Option<[f64; 4]> {
    let items = value.as_array().ok()?;
    if items.len() != 4 {
        return None;
    }
    let mut v = [0.0; 4];
    for (slot, item) in v.iter_mut().zip(items) {
        *slot = number(doc, item)?;
    }
    // Any two opposite corners (7.9.5): normalized to lower-left, upper-right.
    Some([
        v[0].min(v[2]),
        v[1].min(v[3]),
        v[0].max(v[2]),
        v[1].max(v[3]),
    ])
}

fn geometry(doc: &Document, page: ObjectId) -> Option<Geometry> {
    let media = rectangle(doc, inherited(doc, page, b"MediaBox")?)?;
    // The CropBox, clipped to the MediaBox; an unusable one falls back to the MediaBox.
    let visible = inherited(doc, page, b"CropBox")
        .and_then(|c| rectangle(doc, c))
        .map(|c| {
            [
                c[0].max(media[0]),
                c[1].max(media[1]),
                c[2].min(media[2]),
                c[3].min(media[3]),
            ]
        })
        .filter(|c| c[2] - c[0] >= 1.0 && c[3] - c[1] >= 1.0)
        .unwrap_or(media);
    if visible[2] - visible[0] < 1.0 || visible[3] - visible[1] < 1.0 {
        return None;
    }
    let rotate = inherited(doc, page, b"Rotate")
        .and_then(|r| r.as_i64().ok())
        .unwrap_or(0)
        .rem_euclid(360);
    Some(Geometry {
        llx: visible[0],
        lly: visible[1],
        urx: visible[2],
        ury: visible[3],
        rotate: if rotate % 90 == 0 { rotate } else { 0 },
    })
}

// ----- sealing -----

/// What a stamp says about one signature.
#[derive(Clone, Debug)]
pub struct Stamp {
    pub name: String,
    pub rut: String,
    /// As printed, e.g. `22-11-2026 10:15:03 UTC`.
    pub signed_at: String,
    pub kind: SignatureType,
}

/// A stamp in a MANUAL box: the page (1-based) and the box in display space, origin top-left.
#[derive(Clone, Debug)]
pub struct BoxStamp {
    pub page: u32,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub stamp: Stamp,
}

/// One line of the certificate.
#[derive(Clone, Debug)]
pub enum Line {
    Title(String),
    Heading(String),
    Text(String),
    Small(String),
    Gap,
}

pub struct SealInput<'a> {
    pub boxes: &'a [BoxStamp],
    /// Signatures on the appended signature page (none: no such page).
    pub last_page: &'a [Stamp],
    /// Header of the signature page: the process and document names.
    pub signature_page_caption: &'a str,
    pub certificate: &'a [Line],
    /// Printed at the foot of every appended page.
    pub footer: &'a str,
}

/// Stamps, appends the signature page and the certificate, and writes the sealed file.
pub fn seal(original: &[u8], input: &SealInput<'_>) -> Result<Vec<u8>, DocumentError> {
    budget::measure(original)?;
    let mut doc = load(original)?;
    let pages = doc.get_pages();
    // The seal's text is in the service's embedded typeface, so that every name prints; the
    // font objects are written once every page is drawn and the glyphs used are known.
    let fonts = (doc.new_object_id(), doc.new_object_id());
    let mut glyphs = Glyphs::new();
    let mut by_page: BTreeMap<u32, Vec<&BoxStamp>> = BTreeMap::new();
    for b in input.boxes {
        by_page.entry(b.page).or_default().push(b);
    }
    for (number, stamps) in by_page {
        let page_id = *pages.get(&number).ok_or(DocumentError::BadPage(number))?;
        let geometry = geometry(&doc, page_id).ok_or(DocumentError::BadPage(number))?;
        stamp_page(&mut doc, &mut glyphs, page_id, geometry, &stamps, fonts)?;
    }
    let mut appended: Vec<String> = Vec::new();
    if !input.last_page.is_empty() {
        appended.extend(signature_pages(
            &mut glyphs,
            input.last_page,
            input.signature_page_caption,
        ));
    }
    appended.extend(flow(&mut glyphs, input.certificate));
    let total = appended.len();
    for (i, mut content) in appended.into_iter().enumerate() {
        footer(
            &mut glyphs,
            &mut content,
            &format!("{} · Hoja anexa {} de {total}", input.footer, i + 1),
        );
        append_page(&mut doc, content, fonts)?;
    }
    for (font, id) in [(Font::Regular, fonts.0), (Font::Bold, fonts.1)] {
        glyphs
            .embed(&mut doc, font, id)
            .map_err(|e| DocumentError::Unreadable(e.to_string()))?;
    }
    let mut out = Vec::with_capacity(original.len() + 64 * 1024);
    doc.save_to(&mut out)
        .map_err(|e| DocumentError::Unreadable(e.to_string()))?;
    Ok(out)
}

fn font_resources(fonts: (ObjectId, ObjectId)) -> Dictionary {
    dictionary! { FONT_REGULAR => fonts.0, FONT_BOLD => fonts.1 }
}

/// Adds the seal's fonts to the page's (own or inherited) resources.
fn add_page_fonts(
    doc: &mut Document,
    page: ObjectId,
    fonts: (ObjectId, ObjectId),
) -> Result<(), DocumentError> {
    let bad = |e: lopdf::Error| DocumentError::Unreadable(e.to_string());
    let font_ref = {
        let resources = doc
            .get_or_create_resources(page)
            .and_then(Object::as_dict_mut)
            .map_err(bad)?;
        match resources.get(b"Font") {
            Ok(Object::Reference(id)) => Some(*id),
            Ok(Object::Dictionary(_)) => None,
            _ => {
                resources.set("Font", Dictionary::new());
                None
            }
        }
    };
    let font_dict = match font_ref {
        Some(id) => doc
            .get_object_mut(id)
            .and_then(Object::as_dict_mut)
            .map_err(bad)?,
        None => doc
            .get_or_create_resources(page)
            .and_then(Object::as_dict_mut)
            .and_then(|r| r.get_mut(b"Font"))
            .and_then(Object::as_dict_mut)
            .map_err(bad)?,
    };
    font_dict.set(FONT_REGULAR, fonts.0);
    font_dict.set(FONT_BOLD, fonts.1);
    Ok(())
}

/// Wraps the page's content in `q`/`Q` (so a graphics state it leaves behind cannot move the
/// stamps) and draws the stamps after it.
fn stamp_page(
    doc: &mut Document,
    glyphs: &mut Glyphs,
    page: ObjectId,
    geometry: Geometry,
    stamps: &[&BoxStamp],
    fonts: (ObjectId, ObjectId),
) -> Result<(), DocumentError> {
    add_page_fonts(doc, page, fonts)?;
    let height = geometry.size().height;
    let m = geometry.matrix();
    let mut content = format!(
        "Q\nq {} {} {} {} {} {} cm\n",
        num(m[0]),
        num(m[1]),
        num(m[2]),
        num(m[3]),
        num(m[4]),
        num(m[5])
    );
    for b in stamps {
        draw_stamp(
            glyphs,
            &mut content,
            b.x,
            height - b.y - b.height,
            b.width,
            b.height,
            &b.stamp,
        );
    }
    content.push_str("Q\n");
    let existing = doc.get_page_contents(page);
    let open = doc.add_object(Stream::new(Dictionary::new(), b"q\n".to_vec()));
    let close = doc.add_object(Stream::new(Dictionary::new(), content.into_bytes()));
    let mut contents: Vec<Object> = vec![open.into()];
    contents.extend(existing.into_iter().map(Object::from));
    contents.push(close.into());
    doc.get_dictionary_mut(page)
        .map_err(|e| DocumentError::Unreadable(e.to_string()))?
        .set("Contents", contents);
    Ok(())
}

/// A number as PDF content writes it: at most 3 decimals, no exponent.
fn num(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// Draws one stamp in the box whose lower-left corner is (x, y), in the current space.
fn draw_stamp(
    glyphs: &mut Glyphs,
    out: &mut String,
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    stamp: &Stamp,
) {
    let lines: [(Font, String); 4] = [
        (
            Font::Bold,
            format!("Firmado electrónicamente ({})", stamp.kind.name()),
        ),
        (Font::Regular, stamp.name.clone()),
        (
            Font::Regular,
            format!("RUT {}", mandato_core::domain::rut::dotted(&stamp.rut)),
        ),
        (Font::Regular, stamp.signed_at.clone()),
    ];
    let pad = (w.min(h) * 0.06).clamp(0.5, 5.0);
    let inner_w = (w - 2.0 * pad).max(1.0);
    // The largest size (up to 9 pt) at which four lines fit the height and each fits the width.
    let mut size = ((h - 2.0 * pad) / (lines.len() as f64 * 1.2)).min(9.0);
    for (font, text) in &lines {
        let at_one = text_width(text, *font, 1.0).max(0.001);
        size = size.min(inner_w / at_one);
    }
    let size = size.max(1.0);
    let _ = writeln!(
        out,
        "q {x} {y} {w} {h} re W n 0.94 0.96 1 rg {x} {y} {w} {h} re f {INK} RG 0.8 w {x} {y} {w} {h} re S",
        x = num(x),
        y = num(y),
        w = num(w),
        h = num(h)
    );
    let leading = size * 1.2;
    let block = leading * lines.len() as f64;
    // Centred vertically in the box.
    let mut baseline = y + h - (h - block) / 2.0 - size;
    for (font, text) in &lines {
        let resource = match font {
            Font::Regular => FONT_REGULAR,
            Font::Bold => FONT_BOLD,
        };
        let _ = writeln!(
            out,
            "BT {INK} rg /{resource} {} Tf 1 0 0 1 {} {} Tm {} Tj ET",
            num(size),
            num(x + pad),
            num(baseline),
            glyphs.hex_literal(*font, text)
        );
        baseline -= leading;
    }
    out.push_str("Q\n");
}

/// The signature page(s): a header, then one stamp per LAST_PAGE signature, two per row.
fn signature_pages(glyphs: &mut Glyphs, stamps: &[Stamp], caption: &str) -> Vec<String> {
    const BOX_W: f64 = 235.0;
    const BOX_H: f64 = 80.0;
    const GAP: f64 = 25.0;
    let mut pages = Vec::new();
    for chunk in stamps.chunks(14) {
        let mut s = String::new();
        let mut y = A4.1 - 70.0;
        text_line(
            glyphs,
            &mut s,
            Font::Bold,
            16.0,
            (MARGIN, y),
            "Página de firmas",
        );
        for line in wrap(caption, Font::Regular, 10.0, A4.0 - 2.0 * MARGIN) {
            y -= 16.0;
            text_line(glyphs, &mut s, Font::Regular, 10.0, (MARGIN, y), &line);
        }
        y -= 30.0;
        for row in chunk.chunks(2) {
            for (i, stamp) in row.iter().enumerate() {
                let x = MARGIN + i as f64 * (BOX_W + GAP);
                draw_stamp(glyphs, &mut s, x, y - BOX_H, BOX_W, BOX_H, stamp);
            }
            y -= BOX_H + GAP;
        }
        pages.push(s);
    }
    pages
}

/// Flows certificate lines onto as many A4 pages as they need.
fn flow(glyphs: &mut Glyphs, lines: &[Line]) -> Vec<String> {
    let width = A4.0 - 2.0 * MARGIN;
    let top = A4.1 - 60.0;
    let bottom = 70.0;
    let mut pages = vec![String::new()];
    let mut y = top;
    let mut put = |pages: &mut Vec<String>, y: &mut f64, font, size: f64, text: &str| {
        let step = size * 1.35;
        if *y - step < bottom {
            pages.push(String::new());
            *y = top;
        }
        *y -= step;
        let page = pages.last_mut().expect("a page");
        text_line(glyphs, page, font, size, (MARGIN, *y), text);
    };
    for line in lines {
        let (font, size, text) = match line {
            Line::Title(t) => (Font::Bold, 15.0, t),
            Line::Heading(t) => {
                y -= 6.0;
                (Font::Bold, 11.0, t)
            }
            Line::Text(t) => (Font::Regular, 9.0, t),
            Line::Small(t) => (Font::Regular, 7.0, t),
            Line::Gap => {
                y -= 6.0;
                continue;
            }
        };
        for piece in wrap(text, font, size, width) {
            put(&mut pages, &mut y, font, size, &piece);
        }
    }
    pages
}

fn text_line(
    glyphs: &mut Glyphs,
    out: &mut String,
    font: Font,
    size: f64,
    (x, y): (f64, f64),
    text: &str,
) {
    let resource = match font {
        Font::Regular => FONT_REGULAR,
        Font::Bold => FONT_BOLD,
    };
    let _ = writeln!(
        out,
        "BT 0 0 0 rg /{resource} {} Tf 1 0 0 1 {} {} Tm {} Tj ET",
        num(size),
        num(x),
        num(y),
        glyphs.hex_literal(font, text)
    );
}

fn footer(glyphs: &mut Glyphs, out: &mut String, text: &str) {
    let _ = writeln!(
        out,
        "q 0.7 G 0.5 w {m} 52 m {r} 52 l S Q",
        m = num(MARGIN),
        r = num(A4.0 - MARGIN)
    );
    for (i, line) in wrap(text, Font::Regular, 7.0, A4.0 - 2.0 * MARGIN)
        .iter()
        .enumerate()
    {
        text_line(
            glyphs,
            out,
            Font::Regular,
            7.0,
            (MARGIN, 42.0 - 9.0 * i as f64),
            line,
        );
    }
}

/// Appends an A4 page to the end of the document's page tree. Every inheritable attribute is
/// set on the page itself, so nothing of the original tree (a Rotate, a CropBox) applies to it.
fn append_page(
    doc: &mut Document,
    content: String,
    fonts: (ObjectId, ObjectId),
) -> Result<(), DocumentError> {
    let bad = |e: lopdf::Error| DocumentError::Unreadable(e.to_string());
    let root = doc
        .catalog()
        .and_then(|c| c.get(b"Pages"))
        .and_then(Object::as_reference)
        .map_err(bad)?;
    let content_id = doc.add_object(Stream::new(Dictionary::new(), content.into_bytes()));
    let media: Vec<Object> = vec![0.into(), 0.into(), A4.0.into(), A4.1.into()];
    let page = doc.add_object(dictionary! {
        "Type" => "Page",
        "Parent" => root,
        "MediaBox" => media.clone(),
        "CropBox" => media,
        "Rotate" => 0,
        "Resources" => dictionary! { "Font" => font_resources(fonts) },
        "Contents" => content_id,
    });
    let kids_ref = doc
        .get_dictionary(root)
        .and_then(|d| d.get(b"Kids"))
        .and_then(Object::as_reference)
        .ok();
    let kids = match kids_ref {
        Some(id) => doc.get_object_mut(id).and_then(Object::as_array_mut),
        None => doc
            .get_dictionary_mut(root)
            .and_then(|d| d.get_mut(b"Kids"))
            .and_then(Object::as_array_mut),
    }
    .map_err(bad)?;
    kids.push(page.into());
    let count = doc.get_pages().len() as i64;
    doc.get_dictionary_mut(root)
        .map_err(bad)?
        .set("Count", count);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents::poppler::page_text;

    fn page_pdf(media: [i64; 4], crop: Option<[i64; 4]>, rotate: Option<i64>) -> Vec<u8> {
        let mut doc = Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let content = doc.add_object(Stream::new(Dictionary::new(), b"0 0 m 10 10 l S".to_vec()));
        let mut page = dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content,
        };
        if let Some(c) = crop {
            page.set(
                "CropBox",
                c.iter().map(|v| Object::from(*v)).collect::<Vec<_>>(),
            );
        }
        if let Some(r) = rotate {
            page.set("Rotate", r);
        }
        let page_id = doc.add_object(page);
        // The MediaBox is inherited from the page tree.
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages",
                "Kids" => vec![page_id.into()],
                "Count" => 1,
                "MediaBox" => media.iter().map(|v| Object::from(*v)).collect::<Vec<_>>(),
            }),
        );
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    #[test]
    fn sizes_honour_inherited_mediabox_cropbox_and_rotate() {
        let plain = inspect(&page_pdf([0, 0, 612, 792], None, None)).unwrap();
        assert_eq!(
            plain.pages,
            [PageSize {
                width: 612.0,
                height: 792.0
            }]
        );
        let cropped = inspect(&page_pdf([0, 0, 612, 792], Some([10, 20, 310, 420]), None)).unwrap();
        assert_eq!(
            cropped.pages[0],
            PageSize {
                width: 300.0,
                height: 400.0
            }
        );
        let turned = inspect(&page_pdf([0, 0, 300, 200], None, Some(90))).unwrap();
        assert_eq!(
            turned.pages[0],
            PageSize {
                width: 200.0,
                height: 300.0
            }
        );
        let negative = inspect(&page_pdf([0, 0, 300, 200], None, Some(-90))).unwrap();
        assert_eq!(negative.pages[0].width, 200.0);
    }

    #[test]
    fn object_and_cross_reference_streams_are_measured_and_read() {
        let classic = page_pdf([0, 0, 612, 792], None, Some(90));
        let mut doc = Document::load_mem(&classic).unwrap();
        let mut modern = Vec::new();
        doc.save_modern(&mut modern).unwrap();
        assert!(String::from_utf8_lossy(&modern).contains("/ObjStm"));
        let inspection = inspect(&modern).unwrap();
        assert_eq!(inspection.pages[0].width, 792.0);
        // A handful of objects: each charged a few times over, far from the budget.
        assert!(inspection.cost.values > 10, "{:?}", inspection.cost);
        assert!(inspection.cost.values < 200, "{:?}", inspection.cost);
        assert!(inspection.cost.bytes < 64 * 1024, "{:?}", inspection.cost);
        // The same document with 2,000 pages of content: still well inside.
        let mut big = Document::load_mem(&classic).unwrap();
        let pages_id = big
            .catalog()
            .unwrap()
            .get(b"Pages")
            .unwrap()
            .as_reference()
            .unwrap();
        let mut kids: Vec<Object> = Vec::new();
        for _ in 0..2_000 {
            let content = big.add_object(Stream::new(Dictionary::new(), b"0 0 m 9 9 l S".to_vec()));
            kids.push(
                big.add_object(dictionary! {
                    "Type" => "Page", "Parent" => pages_id, "Contents" => content,
                    "MediaBox" => vec![0.into(), 0.into(), 100.into(), 100.into()],
                })
                .into(),
            );
        }
        let pages = big.get_dictionary_mut(pages_id).unwrap();
        pages.set("Kids", kids);
        pages.set("Count", 2_000);
        let mut out = Vec::new();
        big.save_modern(&mut out).unwrap();
        let inspection = inspect(&out).unwrap();
        assert_eq!(inspection.pages.len(), 2_000);
        assert!(inspection.cost.values < 200_000, "{:?}", inspection.cost);
    }

    #[test]
    fn what_is_not_a_pdf_is_refused() {
        assert!(matches!(
            inspect(b"hello, world"),
            Err(DocumentError::Unreadable(_))
        ));
        assert!(inspect(b"%PDF-1.4\n%%EOF\n").is_err());
    }

    #[test]
    fn the_display_matrix_maps_the_top_left_corner_for_every_rotation() {
        // Display point (0, H) (top-left, y up) must land on the corner a reader shows there.
        let g = |rotate| Geometry {
            llx: 10.0,
            lly: 20.0,
            urx: 110.0,
            ury: 220.0,
            rotate,
        };
        let apply =
            |m: [f64; 6], x: f64, y: f64| (m[0] * x + m[2] * y + m[4], m[1] * x + m[3] * y + m[5]);
        let top_left = |rotate| {
            let geometry = g(rotate);
            apply(geometry.matrix(), 0.0, geometry.size().height)
        };
        assert_eq!(top_left(0), (10.0, 220.0));
        assert_eq!(top_left(90), (10.0, 20.0));
        assert_eq!(top_left(180), (110.0, 20.0));
        assert_eq!(top_left(270), (110.0, 220.0));
    }

    #[test]
    fn sealing_stamps_the_page_and_appends_pages() {
        let original = page_pdf([0, 0, 300, 200], None, Some(90));
        let stamp = Stamp {
            name: "Ana Pérez Ñúñez".into(),
            rut: "12345678-5".into(),
            signed_at: "22-11-2026 10:00:00 UTC".into(),
            kind: SignatureType::Fes,
        };
        let boxes = [BoxStamp {
            page: 1,
            x: 10.0,
            y: 10.0,
            width: 150.0,
            height: 50.0,
            stamp: stamp.clone(),
        }];
        let sealed = seal(
            &original,
            &SealInput {
                boxes: &boxes,
                last_page: std::slice::from_ref(&stamp),
                signature_page_caption: "Contrato",
                certificate: &[Line::Title("Certificado".into())],
                footer: "sig_1",
            },
        )
        .unwrap();
        let doc = Document::load_mem(&sealed).unwrap();
        let pages = doc.get_pages();
        assert_eq!(pages.len(), 3);
        let first = String::from_utf8_lossy(&doc.get_page_content(pages[&1])).to_string();
        assert!(first.contains("0 1 -1 0 300 0 cm"), "{first}");
        let first = page_text(&sealed, Some(1));
        assert!(first.contains("RUT 12.345.678-5"), "{first}");
        assert!(first.contains("Ana Pérez Ñúñez"), "{first}");
        assert!(first.contains("Firmado electrónicamente (FES)"), "{first}");
        let second = page_text(&sealed, Some(2));
        assert!(second.contains("Página de firmas"), "{second}");
        assert!(second.contains("Ana Pérez Ñúñez"), "{second}");
        assert!(page_text(&sealed, Some(3)).contains("Certificado"));
        // The original still reads with its own size.
        assert_eq!(inspect(&sealed).unwrap().pages[0].width, 200.0);
    }
}
