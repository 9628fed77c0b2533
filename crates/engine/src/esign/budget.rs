//! What parsing an upload would cost, counted before `lopdf` touches it (CONTRACT 12,
//! "Documents").
//!
//! `lopdf` loads eagerly: every object the cross-reference data names is parsed, object
//! streams are inflated and every member parsed, and nothing bounds the total. A hostile file
//! multiplies that work: thousands of cross-reference entries naming one large object, an object
//! stream whose header lists one offset a million times, a tiny stream that inflates to
//! gigabytes. This module walks the raw bytes with its own bounded scanner and charges an upper
//! bound of what `lopdf` would materialise:
//!
//! - every indirect object the file holds, wherever a `N G obj` header stands (what a rebuilt
//!   cross-reference table parses), with the text it spans;
//! - once more per object number that any cross-reference section (table or stream, wherever it
//!   stands) names, at the costliest offset named for it;
//! - every stream's inflated bytes (all `FlateDecode` layers, counted without keeping them), and
//!   twice each object stream's members (loading, and the cache that resolves an indirect
//!   `/Length`), a member named twice in a header costing twice;
//! - each indirect `/Length`: the object it names, parsed again, and the bytes it makes copied.
//!
//! Values are objects, array elements and dictionary entries; bytes are inflated stream output
//! and parsed text. The scanner stops as soon as either budget is exceeded, so its own time and
//! memory are bounded by the budget, whatever the input.

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::rc::Rc;

use flate2::read::{DeflateDecoder, ZlibDecoder};
use lopdf::{Dictionary, Object, Stream};

/// All inflated and materialised bytes of one document together.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Objects, array elements and dictionary entries together.
pub const MAX_VALUES: u64 = 1_000_000;
/// How deep arrays and dictionaries may nest: `lopdf`'s own parsing limit.
pub const MAX_DEPTH: usize = 100;
/// `lopdf` refuses longer filter chains.
const MAX_FILTERS: usize = 8;

/// Why an upload is refused before it is parsed.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// Over a budget: `DOCUMENT_TOO_COMPLEX`.
    TooComplex(String),
    /// A structure the parser would decode with a filter this scanner cannot bound.
    Unsupported(String),
}

/// What the scan charged: an upper bound of the parse's work.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    pub values: u64,
    pub bytes: u64,
}

/// The running total against both limits.
#[derive(Debug)]
pub struct Budget {
    spent: Cost,
    max: Cost,
}

impl Budget {
    pub fn new(max_values: u64, max_bytes: u64) -> Self {
        Budget {
            spent: Cost::default(),
            max: Cost {
                values: max_values,
                bytes: max_bytes,
            },
        }
    }

    pub fn spent(&self) -> Cost {
        self.spent
    }

    pub fn values(&mut self, n: u64) -> Result<(), Refusal> {
        self.spent.values = self.spent.values.saturating_add(n);
        if self.spent.values > self.max.values {
            return Err(Refusal::TooComplex(format!(
                "parsing it would hold more than {} values",
                self.max.values
            )));
        }
        Ok(())
    }

    pub fn bytes(&mut self, n: u64) -> Result<(), Refusal> {
        self.spent.bytes = self.spent.bytes.saturating_add(n);
        if self.spent.bytes > self.max.bytes {
            return Err(Refusal::TooComplex(format!(
                "parsing it would inflate past {} MiB",
                self.max.bytes / (1024 * 1024)
            )));
        }
        Ok(())
    }

    pub fn charge(&mut self, cost: Cost) -> Result<(), Refusal> {
        self.values(cost.values)?;
        self.bytes(cost.bytes)
    }

    fn bytes_left(&self) -> u64 {
        self.max.bytes.saturating_sub(self.spent.bytes)
    }
}

/// Measures `bytes` against the contract's budgets.
pub fn measure(bytes: &[u8]) -> Result<Cost, Refusal> {
    let mut budget = Budget::new(MAX_VALUES, MAX_BYTES);
    Scan::new(bytes).run(&mut budget)?;
    Ok(budget.spent())
}

// ----- values, as far as the scan needs to see them -----

/// A parsed value. Only shallow parts are kept (what stream dictionaries need); the rest is
/// counted and dropped.
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Int(i64),
    Real,
    Name(Vec<u8>),
    Ref(u32),
    Str,
    Bool,
    Null,
    Array(Vec<Val>),
    Dict(Vec<(Vec<u8>, Val)>),
    Unkept,
}

fn get<'v>(dict: &'v [(Vec<u8>, Val)], key: &[u8]) -> Option<&'v Val> {
    dict.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\0')
}

fn is_delimiter(b: u8) -> bool {
    matches!(
        b,
        b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%'
    )
}

fn is_regular(b: u8) -> bool {
    !is_space(b) && !is_delimiter(b)
}

enum ParseError {
    Syntax,
    TooDeep,
}

/// Kept arrays and dictionaries hold at most this many items; the rest are counted only.
const KEEP_ITEMS: usize = 64;
/// Values nested deeper than this are counted, not kept.
const KEEP_DEPTH: usize = 2;

/// A recursive-descent reader of PDF values that counts every value it meets. Recursion is
/// bounded by [`MAX_DEPTH`], so no input can exhaust the stack.
struct Parser<'a> {
    buf: &'a [u8],
    pos: usize,
    values: u64,
}

impl<'a> Parser<'a> {
    fn new(buf: &'a [u8], pos: usize) -> Self {
        Parser {
            buf,
            pos,
            values: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.buf.get(self.pos).copied()
    }

    fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// White space and comments.
    fn skip_space(&mut self) {
        while let Some(b) = self.peek() {
            if is_space(b) {
                self.pos += 1;
            } else if b == b'%' {
                while let Some(c) = self.peek() {
                    if c == b'\n' || c == b'\r' {
                        break;
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    fn digits(&mut self) -> Option<u64> {
        let start = self.pos;
        let mut n: u64 = 0;
        while let Some(b @ b'0'..=b'9') = self.peek() {
            n = n.saturating_mul(10).saturating_add(u64::from(b - b'0'));
            self.pos += 1;
        }
        (self.pos > start).then_some(n)
    }

    fn value(&mut self, depth: usize, keep: bool) -> Result<Val, ParseError> {
        if depth >= MAX_DEPTH {
            return Err(ParseError::TooDeep);
        }
        self.skip_space();
        self.values += 1;
        let keep_inner = keep && depth < KEEP_DEPTH;
        match self.peek().ok_or(ParseError::Syntax)? {
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_space();
                    match self.peek() {
                        None => return Err(ParseError::Syntax),
                        Some(b']') => {
                            self.pos += 1;
                            break;
                        }
                        Some(_) => {
                            let kept = keep_inner && items.len() < KEEP_ITEMS;
                            let v = self.value(depth + 1, kept)?;
                            if kept {
                                items.push(v);
                            }
                        }
                    }
                }
                Ok(if keep { Val::Array(items) } else { Val::Unkept })
            }
            b'<' if self.rest().starts_with(b"<<") => {
                self.pos += 2;
                let mut entries = Vec::new();
                loop {
                    self.skip_space();
                    if self.rest().starts_with(b">>") {
                        self.pos += 2;
                        break;
                    }
                    if self.peek() != Some(b'/') {
                        return Err(ParseError::Syntax);
                    }
                    let key = self.name();
                    let kept = keep_inner && entries.len() < KEEP_ITEMS;
                    let v = self.value(depth + 1, kept)?;
                    if kept {
                        entries.push((key, v));
                    }
                }
                Ok(if keep {
                    Val::Dict(entries)
                } else {
                    Val::Unkept
                })
            }
            b'<' => {
                let end = self.rest().iter().position(|&b| b == b'>');
                match end {
                    Some(n) => {
                        self.pos += n + 1;
                        Ok(Val::Str)
                    }
                    None => {
                        self.pos = self.buf.len();
                        Err(ParseError::Syntax)
                    }
                }
            }
            b'(' => {
                self.pos += 1;
                let mut open = 1usize;
                while let Some(b) = self.peek() {
                    self.pos += 1;
                    match b {
                        b'\\' => self.pos += 1,
                        b'(' => open += 1,
                        b')' => {
                            open -= 1;
                            if open == 0 {
                                return Ok(Val::Str);
                            }
                        }
                        _ => {}
                    }
                }
                self.pos = self.buf.len();
                Err(ParseError::Syntax)
            }
            b'/' => {
                let name = self.name();
                Ok(if keep { Val::Name(name) } else { Val::Unkept })
            }
            b'0'..=b'9' | b'+' | b'-' | b'.' => Ok(self.number()),
            _ => {
                let start = self.pos;
                while self.peek().is_some_and(is_regular) {
                    self.pos += 1;
                }
                match &self.buf[start..self.pos] {
                    b"true" | b"false" => Ok(Val::Bool),
                    b"null" => Ok(Val::Null),
                    _ => {
                        // Not a value: the caller's object ends here.
                        self.values -= 1;
                        self.pos = start;
                        Err(ParseError::Syntax)
                    }
                }
            }
        }
    }

    /// A name after its `/`; kept to at most 127 bytes (the names the scan reads are short).
    fn name(&mut self) -> Vec<u8> {
        self.pos += 1;
        let start = self.pos;
        while self.peek().is_some_and(is_regular) {
            self.pos += 1;
        }
        let end = self.pos.min(start + 127);
        self.buf[start..end].to_vec()
    }

    fn number(&mut self) -> Val {
        let start = self.pos;
        if matches!(self.peek(), Some(b'+' | b'-')) {
            self.pos += 1;
        }
        let int = self.digits();
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.digits();
            return Val::Real;
        }
        let Some(n) = int else {
            return Val::Real;
        };
        let signed = self.buf[start] == b'-' || self.buf[start] == b'+';
        let value = if self.buf[start] == b'-' {
            -(n.min(i64::MAX as u64) as i64)
        } else {
            n.min(i64::MAX as u64) as i64
        };
        if signed {
            return Val::Int(value);
        }
        // `N G R` is a reference.
        let after = self.pos;
        self.skip_space();
        if self.digits().is_some() {
            self.skip_space();
            if self.peek() == Some(b'R')
                && self.buf.get(self.pos + 1).is_none_or(|&b| !is_regular(b))
            {
                self.pos += 1;
                return Val::Ref(u32::try_from(n).unwrap_or(u32::MAX));
            }
        }
        self.pos = after;
        Val::Int(value)
    }
}

// ----- indirect objects -----

#[derive(Clone, Copy, Debug, PartialEq)]
enum Length {
    Direct(i64),
    Indirect(u32),
    Missing,
}

#[derive(Debug)]
struct StreamSite {
    dict: Vec<(Vec<u8>, Val)>,
    data_start: usize,
    /// The bytes `lopdf` takes as the stream's data: `/Length` when it ends at `endstream`,
    /// otherwise up to the next `endstream`.
    data_len: usize,
    length: Length,
}

impl StreamSite {
    fn data<'b>(&self, buf: &'b [u8]) -> &'b [u8] {
        &buf[self.data_start..self.data_start + self.data_len]
    }

    fn is_type(&self, name: &[u8]) -> bool {
        matches!(get(&self.dict, b"Type"), Some(Val::Name(n)) if n == name)
    }
}

#[derive(Debug)]
struct Site {
    number: u32,
    /// Its own parse: values and the bytes spanned.
    own: Cost,
    /// An object stream's inflation and members, paid each time the object is loaded.
    decoded: Cost,
    int: Option<i64>,
    stream: Option<Box<StreamSite>>,
}

impl Site {
    fn cost(&self) -> Cost {
        Cost {
            values: self.own.values + self.decoded.values,
            bytes: self.own.bytes + self.decoded.bytes,
        }
    }
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// Parses the `N G obj` header whose keyword `obj` stands at `keyword`: the object number.
fn header_before(buf: &[u8], keyword: usize) -> Option<u32> {
    let mut i = keyword;
    while i > 0 && is_space(buf[i - 1]) {
        i -= 1;
    }
    let gen_end = i;
    while i > 0 && buf[i - 1].is_ascii_digit() {
        i -= 1;
    }
    if i == gen_end {
        return None;
    }
    let space_end = i;
    while i > 0 && is_space(buf[i - 1]) {
        i -= 1;
    }
    if i == space_end {
        return None;
    }
    let number_end = i;
    while i > 0 && buf[i - 1].is_ascii_digit() {
        i -= 1;
    }
    if i == number_end {
        return None;
    }
    std::str::from_utf8(&buf[i..number_end])
        .ok()?
        .parse::<u64>()
        .ok()
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
}

/// From an offset a cross-reference entry names to the `obj` keyword `lopdf` would read there.
fn keyword_at(buf: &[u8], offset: usize) -> Option<usize> {
    let mut p = Parser::new(buf, offset);
    p.skip_space();
    p.digits()?;
    p.skip_space();
    p.digits()?;
    p.skip_space();
    p.rest().starts_with(b"obj").then_some(p.pos)
}

/// Parses the object after the `obj` keyword at `keyword`.
fn parse_site(buf: &[u8], keyword: usize, number: u32) -> Result<Site, Refusal> {
    let mut p = Parser::new(buf, keyword + 3);
    let start = keyword;
    let value = match p.value(0, true) {
        Ok(v) => Some(v),
        Err(ParseError::TooDeep) => return Err(too_deep()),
        Err(ParseError::Syntax) => None,
    };
    let mut site = Site {
        number,
        own: Cost::default(),
        decoded: Cost::default(),
        int: None,
        stream: None,
    };
    match value {
        Some(Val::Int(n)) => site.int = Some(n),
        Some(Val::Dict(dict)) => {
            p.skip_space();
            if p.rest().starts_with(b"stream") {
                p.pos += 6;
                while matches!(p.peek(), Some(b' ' | b'\t')) {
                    p.pos += 1;
                }
                if p.rest().starts_with(b"\r\n") {
                    p.pos += 2;
                } else if matches!(p.peek(), Some(b'\n' | b'\r')) {
                    p.pos += 1;
                }
                let data_start = p.pos.min(buf.len());
                let length = match get(&dict, b"Length") {
                    Some(Val::Int(n)) => Length::Direct(*n),
                    Some(Val::Ref(r)) => Length::Indirect(*r),
                    _ => Length::Missing,
                };
                let room = buf.len() - data_start;
                let declared = match length {
                    Length::Direct(n) if n >= 0 && (n as u64) <= room as u64 => {
                        let end = data_start + n as usize;
                        let mut q = Parser::new(buf, end);
                        if q.rest().starts_with(b"\r\n") {
                            q.pos += 2;
                        } else if matches!(q.peek(), Some(b'\n' | b'\r')) {
                            q.pos += 1;
                        }
                        q.rest().starts_with(b"endstream").then_some(n as usize)
                    }
                    _ => None,
                };
                let data_len = declared.unwrap_or_else(|| {
                    find(buf, b"endstream", data_start).map_or(room, |e| e - data_start)
                });
                p.pos = data_start + data_len;
                site.stream = Some(Box::new(StreamSite {
                    dict,
                    data_start,
                    data_len,
                    length,
                }));
            }
        }
        _ => {}
    }
    site.own = Cost {
        values: p.values.max(1),
        bytes: (p.pos.max(start) - start) as u64,
    };
    Ok(site)
}

fn too_deep() -> Refusal {
    Refusal::TooComplex(format!(
        "arrays or dictionaries nested more than {MAX_DEPTH} levels deep"
    ))
}

// ----- streams -----

/// The stream's filters, when every one is `FlateDecode` (`Some(0)` for none).
fn flate_layers(dict: &[(Vec<u8>, Val)]) -> Result<Option<usize>, Refusal> {
    let names: Vec<&Val> = match get(dict, b"Filter") {
        None | Some(Val::Null) => return Ok(Some(0)),
        Some(Val::Array(items)) => items.iter().collect(),
        Some(v) => vec![v],
    };
    if names.len() > MAX_FILTERS {
        return Ok(None);
    }
    let all_flate = names
        .iter()
        .all(|v| matches!(v, Val::Name(n) if n == b"FlateDecode"));
    Ok(all_flate.then_some(names.len()))
}

/// Adds what passes through to a shared count, failing once the count passes `limit`.
struct Counting<R> {
    inner: R,
    total: Rc<Cell<u64>>,
    limit: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        self.total.set(self.total.get() + n as u64);
        if self.total.get() > self.limit {
            return Err(io::Error::other("over budget"));
        }
        Ok(n)
    }
}

/// One `FlateDecode` layer as `lopdf` reads it: zlib, or raw deflate after the two header
/// bytes when the zlib header is not valid.
fn flate_layer<'r>(inner: Box<dyn Read + 'r>) -> Box<dyn Read + 'r> {
    let mut reader = BufReader::new(inner);
    let mut head = [0u8; 2];
    let mut seen = 0;
    while seen < 2 {
        match reader.fill_buf() {
            Ok([]) | Err(_) => break,
            Ok(available) => {
                // Look without consuming: only what fill_buf already holds.
                let n = available.len().min(2);
                head[..n].copy_from_slice(&available[..n]);
                seen = n;
                if n < 2 {
                    // A buffer holding one byte: treat it as not a zlib header.
                    break;
                }
            }
        }
    }
    let zlib = seen == 2
        && head[0] & 0x0f == 8
        && (u16::from(head[0]) * 256 + u16::from(head[1])) % 31 == 0;
    if zlib {
        Box::new(ZlibDecoder::new(reader))
    } else {
        reader.consume(seen.min(2));
        Box::new(DeflateDecoder::new(reader))
    }
}

/// Inflates `layers` FlateDecode layers of `data` without keeping the output, counting every
/// layer's output. `Err` when the count passes `limit`.
fn inflated_size(data: &[u8], layers: usize, limit: u64) -> Result<u64, u64> {
    let total = Rc::new(Cell::new(0u64));
    let mut reader: Box<dyn Read + '_> = Box::new(data);
    for _ in 0..layers {
        reader = Box::new(Counting {
            inner: flate_layer(reader),
            total: Rc::clone(&total),
            limit,
        });
    }
    let mut sink = [0u8; 16 * 1024];
    loop {
        match reader.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(_) if total.get() > limit => return Err(total.get()),
            // A damaged stream: what inflated before the damage is what a reader gets.
            Err(_) => break,
        }
    }
    Ok(total.get())
}

fn to_object(v: &Val) -> Object {
    match v {
        Val::Int(n) => Object::Integer(*n),
        Val::Name(n) => Object::Name(n.clone()),
        Val::Array(items) => Object::Array(items.iter().map(to_object).collect()),
        Val::Dict(entries) => {
            let mut d = Dictionary::new();
            for (k, v) in entries {
                d.set(k.clone(), to_object(v));
            }
            Object::Dictionary(d)
        }
        _ => Object::Null,
    }
}

/// The decoded content of an object or cross-reference stream, after its inflation was
/// counted and charged: decoded by `lopdf` itself (filters and predictors as it applies them),
/// bounded by what the count found. Should `lopdf` inflate more than the count (a stream the
/// two read differently), the file is refused: its parse cannot be bounded.
fn decode(buf: &[u8], stream: &StreamSite, inflated: u64) -> Result<Vec<u8>, Refusal> {
    let mut dict = Dictionary::new();
    for key in [&b"Filter"[..], b"DecodeParms"] {
        if let Some(v) = get(&stream.dict, key) {
            dict.set(key.to_vec(), to_object(v));
        }
    }
    let s = Stream::new(dict, stream.data(buf).to_vec());
    if !s.dict.has(b"Filter") {
        return Ok(s.content);
    }
    let limit = usize::try_from(inflated.max(stream.data_len as u64)).unwrap_or(usize::MAX);
    match s.decompressed_content_with_limit(limit) {
        Ok(content) => Ok(content),
        Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. })) => Err(
            Refusal::TooComplex("an object stream inflates more than it could be measured".into()),
        ),
        // Damaged beyond decoding: the parser skips it too.
        Err(_) => Ok(Vec::new()),
    }
}

// ----- the scan -----

struct Scan<'a> {
    buf: &'a [u8],
    sites: Vec<Site>,
    /// The `obj` keyword offset of each site, index-aligned with `sites`: found in file order,
    /// so sorted, and searched by halving (a map would double the memory of a file of many
    /// tiny objects).
    keywords: Vec<usize>,
    /// Integers stored in object streams, by object number: the `/Length`s they can give.
    member_ints: HashMap<u32, i64>,
}

impl<'a> Scan<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Scan {
            buf,
            sites: Vec::new(),
            keywords: Vec::new(),
            member_ints: HashMap::new(),
        }
    }

    fn run(mut self, budget: &mut Budget) -> Result<(), Refusal> {
        self.find_sites(budget)?;
        self.decode_streams(budget)?;
        self.cross_references(budget)?;
        self.trailers(budget)?;
        self.indirect_lengths(budget)
    }

    /// Every `N G obj` in the file, parsed once and charged.
    fn find_sites(&mut self, budget: &mut Budget) -> Result<(), Refusal> {
        let buf = self.buf;
        let mut from = 0;
        while let Some(k) = find(buf, b"obj", from) {
            from = k + 3;
            if k > 0 && !(is_space(buf[k - 1]) || buf[k - 1].is_ascii_digit()) {
                continue;
            }
            let Some(number) = header_before(buf, k) else {
                continue;
            };
            let site = parse_site(buf, k, number)?;
            budget.charge(site.own)?;
            self.keywords.push(k);
            self.sites.push(site);
        }
        Ok(())
    }

    /// Inflates every stream's FlateDecode layers (counted only), and reads object streams.
    fn decode_streams(&mut self, budget: &mut Budget) -> Result<(), Refusal> {
        let buf = self.buf;
        for i in 0..self.sites.len() {
            let Some(stream) = self.sites[i].stream.as_deref() else {
                continue;
            };
            let structural = stream.is_type(b"ObjStm") || stream.is_type(b"XRef");
            let layers = match flate_layers(&stream.dict)? {
                Some(n) => n,
                None if structural => {
                    return Err(Refusal::Unsupported(
                        "an object or cross-reference stream uses a filter other than \
                         FlateDecode"
                            .into(),
                    ));
                }
                // Other filters are not decoded when the document is parsed.
                None => continue,
            };
            let inflated = if layers == 0 {
                0
            } else {
                let size = inflated_size(stream.data(buf), layers, budget.bytes_left())
                    .map_err(|_| over_bytes())?;
                budget.bytes(size)?;
                size
            };
            if stream.is_type(b"ObjStm") {
                let decoded = decode(buf, stream, inflated)?;
                let mut members = Budget::new(u64::MAX, u64::MAX);
                let header = members_of(
                    &decoded,
                    stream,
                    &mut members,
                    budget,
                    &mut self.member_ints,
                )?;
                let cost = Cost {
                    values: members.spent().values + header,
                    bytes: members.spent().bytes + inflated,
                };
                // Loading parses them, and the cache for indirect lengths may again.
                budget.charge(cost)?;
                self.sites[i].decoded = cost;
            } else if stream.is_type(b"XRef") {
                self.sites[i].decoded = Cost {
                    values: 0,
                    bytes: inflated,
                };
            }
        }
        Ok(())
    }
}

/// Parses an object stream's members into `members` (and `budget`, so a huge stream stops
/// early), noting the integers among them; returns the count of header numbers.
fn members_of(
    content: &[u8],
    stream: &StreamSite,
    members: &mut Budget,
    budget: &mut Budget,
    member_ints: &mut HashMap<u32, i64>,
) -> Result<u64, Refusal> {
    let first = match get(&stream.dict, b"First") {
        Some(Val::Int(n)) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
        _ => return Ok(0),
    };
    let Some(index) = content.get(..first) else {
        return Ok(0);
    };
    let mut numbers = Vec::new();
    let mut p = Parser::new(index, 0);
    loop {
        p.skip_space();
        if p.peek().is_none() {
            break;
        }
        match p.digits() {
            Some(n) => numbers.push(n),
            None => {
                // `lopdf` keeps a token it cannot read as a number as a hole.
                numbers.push(u64::MAX);
                while p.peek().is_some_and(|b| !is_space(b)) {
                    p.pos += 1;
                }
            }
        }
        budget.values(1)?;
    }
    let header = numbers.len() as u64;
    let mut parsed: HashMap<usize, Cost> = HashMap::new();
    for pair in numbers.chunks_exact(2) {
        let (number, offset) = (pair[0], pair[1]);
        if number == u64::MAX || offset == u64::MAX {
            continue;
        }
        let Some(at) = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(first))
            .filter(|&a| a < content.len())
        else {
            continue;
        };
        let cost = match parsed.get(&at) {
            // Parsed again, materialised again.
            Some(seen) => *seen,
            None => {
                let mut m = Parser::new(content, at);
                let value = match m.value(0, true) {
                    Ok(v) => Some(v),
                    Err(ParseError::TooDeep) => return Err(too_deep()),
                    Err(ParseError::Syntax) => None,
                };
                if let (Some(Val::Int(n)), Ok(number)) = (value, u32::try_from(number)) {
                    let e = member_ints.entry(number).or_insert(n);
                    *e = (*e).max(n);
                }
                let cost = Cost {
                    values: m.values.max(1),
                    bytes: (m.pos - at) as u64,
                };
                parsed.insert(at, cost);
                // The first parse of each member: its bytes are the inflated ones.
                members.values(cost.values)?;
                budget.values(cost.values)?;
                continue;
            }
        };
        members.charge(cost)?;
        budget.charge(cost)?;
    }
    Ok(header)
}

impl Scan<'_> {
    /// Every cross-reference entry (tables and streams, wherever they stand), and once more
    /// per object number the costliest object an entry names for it.
    fn cross_references(&self, budget: &mut Budget) -> Result<(), Refusal> {
        let buf = self.buf;
        let mut named: HashMap<u32, Cost> = HashMap::new();
        let mut note = |scan: &Self, number: u64, offset: u64, budget: &mut Budget| {
            budget.values(1)?;
            let site = usize::try_from(offset)
                .ok()
                .filter(|&o| o < buf.len())
                .and_then(|o| keyword_at(buf, o))
                .and_then(|k| scan.keywords.binary_search(&k).ok());
            if let (Some(i), Ok(number)) = (site, u32::try_from(number)) {
                let cost = scan.sites[i].cost();
                let e = named.entry(number).or_default();
                e.values = e.values.max(cost.values);
                e.bytes = e.bytes.max(cost.bytes);
            }
            Ok::<(), Refusal>(())
        };
        // Tables: `xref`, then subsections of `start count` and their entries.
        let mut from = 0;
        while let Some(at) = find(buf, b"xref", from) {
            from = at + 4;
            if at > 0 && buf[at - 1].is_ascii_alphabetic() {
                continue;
            }
            let mut p = Parser::new(buf, at + 4);
            loop {
                p.skip_space();
                let (Some(start), _, Some(count)) = (p.digits(), p.skip_space(), p.digits()) else {
                    break;
                };
                let mut k = 0u64;
                while k < count {
                    p.skip_space();
                    let (Some(offset), _, Some(_gen), _) =
                        (p.digits(), p.skip_space(), p.digits(), p.skip_space())
                    else {
                        break;
                    };
                    match p.peek() {
                        Some(b'n') => note(self, start.saturating_add(k), offset, budget)?,
                        Some(b'f') => budget.values(1)?,
                        _ => break,
                    }
                    p.pos += 1;
                    k += 1;
                }
                if k < count {
                    break;
                }
            }
        }
        // Streams.
        for i in 0..self.sites.len() {
            let Some(stream) = self.sites[i].stream.as_deref() else {
                continue;
            };
            if !stream.is_type(b"XRef") {
                continue;
            }
            let widths: Vec<usize> = match get(&stream.dict, b"W") {
                Some(Val::Array(w)) => w
                    .iter()
                    .map(|v| match v {
                        Val::Int(n) if (0..=8).contains(n) => Some(*n as usize),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            if widths.len() != 3 || widths.iter().sum::<usize>() == 0 {
                continue;
            }
            let row = widths.iter().sum::<usize>();
            let content = decode(buf, stream, self.sites[i].decoded.bytes)?;
            let mut numbers: Vec<u64> = Vec::new();
            match get(&stream.dict, b"Index") {
                Some(Val::Array(index)) => {
                    for pair in index.chunks_exact(2) {
                        if let (Val::Int(s), Val::Int(c)) = (&pair[0], &pair[1]) {
                            numbers.push((*s).max(0) as u64);
                            numbers.push((*c).max(0) as u64);
                        }
                    }
                }
                _ => {
                    let size = match get(&stream.dict, b"Size") {
                        Some(Val::Int(n)) => (*n).max(0) as u64,
                        _ => 0,
                    };
                    numbers.extend([0, size]);
                }
            }
            let field = |bytes: &[u8]| bytes.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
            let mut rows = content.chunks_exact(row);
            'sections: for section in numbers.chunks_exact(2) {
                for k in 0..section[1] {
                    let Some(entry) = rows.next() else {
                        break 'sections;
                    };
                    let kind = if widths[0] == 0 {
                        1
                    } else {
                        field(&entry[..widths[0]])
                    };
                    let second = field(&entry[widths[0]..widths[0] + widths[1]]);
                    if kind == 1 {
                        note(self, section[0].saturating_add(k), second, budget)?;
                    } else {
                        budget.values(1)?;
                    }
                }
            }
        }
        for cost in named.values() {
            budget.charge(*cost)?;
        }
        Ok(())
    }

    /// Each `trailer` dictionary is parsed with its section.
    fn trailers(&mut self, budget: &mut Budget) -> Result<(), Refusal> {
        let buf = self.buf;
        let mut from = 0;
        while let Some(at) = find(buf, b"trailer", from) {
            from = at + 7;
            let mut p = Parser::new(buf, at + 7);
            if let Err(ParseError::TooDeep) = p.value(0, false) {
                return Err(too_deep());
            }
            budget.charge(Cost {
                values: p.values,
                bytes: (p.pos - at) as u64,
            })?;
        }
        Ok(())
    }

    /// A stream whose `/Length` is a reference parses the object it names again, and copies as
    /// many bytes as it says.
    fn indirect_lengths(&mut self, budget: &mut Budget) -> Result<(), Refusal> {
        // Per object number: the costliest object of that number, its largest integer, and
        // whether one of them is a stream with an indirect length of its own.
        let mut by_number: HashMap<u32, (Cost, i64, bool)> = HashMap::new();
        for site in &self.sites {
            let e = by_number
                .entry(site.number)
                .or_insert((Cost::default(), -1, false));
            let cost = site.cost();
            e.0.values = e.0.values.max(cost.values);
            e.0.bytes = e.0.bytes.max(cost.bytes);
            e.1 = e.1.max(site.int.unwrap_or(-1));
            e.2 |= site
                .stream
                .as_ref()
                .is_some_and(|s| matches!(s.length, Length::Indirect(_)));
        }
        for site in &self.sites {
            let Some(stream) = site.stream.as_deref() else {
                continue;
            };
            let Length::Indirect(target) = stream.length else {
                continue;
            };
            let (cost, int, chained) =
                by_number
                    .get(&target)
                    .copied()
                    .unwrap_or((Cost::default(), -1, false));
            if chained {
                // Each resolution would parse the next stream, which resolves its own length:
                // quadratic in the chain's length.
                return Err(Refusal::TooComplex(
                    "a stream's length is given by another stream".into(),
                ));
            }
            let int = int.max(self.member_ints.get(&target).copied().unwrap_or(-1));
            let room = (self.buf.len() - stream.data_start) as u64;
            let copied = u64::try_from(int).unwrap_or(0).min(room);
            budget.charge(cost)?;
            budget.bytes(copied)?;
        }
        Ok(())
    }
}

fn over_bytes() -> Refusal {
    Refusal::TooComplex(format!(
        "parsing it would inflate past {} MiB",
        MAX_BYTES / (1024 * 1024)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::ZlibEncoder;
    use std::io::Write;

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn object_stream(content: &[u8]) -> Vec<u8> {
        let packed = zlib(content);
        let mut pdf = b"%PDF-1.5\n".to_vec();
        pdf.extend(
            format!(
                "1 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length {} >>\nstream\n",
                packed.len()
            )
            .as_bytes(),
        );
        pdf.extend(&packed);
        pdf.extend(b"\nendstream\nendobj\n%%EOF\n");
        pdf
    }

    #[test]
    fn the_budget_counts_values_and_bytes_and_stops_past_either() {
        let mut b = Budget::new(10, 100);
        b.values(10).unwrap();
        assert!(matches!(b.values(1), Err(Refusal::TooComplex(_))));
        let mut b = Budget::new(10, 100);
        b.bytes(60).unwrap();
        b.bytes(40).unwrap();
        assert_eq!(
            b.spent(),
            Cost {
                values: 0,
                bytes: 100
            }
        );
        assert!(b.bytes(1).is_err());
    }

    #[test]
    fn values_are_counted_once_per_object_array_element_and_entry() {
        let pdf = b"%PDF-1.4\n1 0 obj\n<< /A [1 2 3] /B << /C (x) >> /D 4 0 R >>\nendobj\n";
        let cost = measure(pdf).unwrap();
        // The dictionary, A's array and its 3 elements, B's dictionary and C, D's reference.
        assert_eq!(cost.values, 8);
    }

    #[test]
    fn an_inflation_bomb_in_an_object_stream_is_refused_without_holding_it() {
        let bomb = object_stream(&vec![b' '; 300 * 1024 * 1024]);
        assert!(bomb.len() < 400 * 1024);
        let refused = measure(&bomb).unwrap_err();
        assert!(
            matches!(refused, Refusal::TooComplex(ref m) if m.contains("256 MiB")),
            "{refused:?}"
        );
    }

    #[test]
    fn a_header_naming_one_member_many_times_pays_for_each() {
        let mut content = Vec::new();
        for _ in 0..200_000 {
            content.extend(b"2 0 ");
        }
        let first = content.len();
        content.extend(b"[1 2 3 4 5 6 7 8 9 10]");
        let mut pdf = object_stream(&content);
        // Put the real /First in.
        let at = find(&pdf, b"/First 4", 0).unwrap();
        pdf.splice(at..at + 8, format!("/First {first}").into_bytes());
        let refused = measure(&pdf).unwrap_err();
        assert!(
            matches!(refused, Refusal::TooComplex(ref m) if m.contains("values")),
            "{refused:?}"
        );
    }

    #[test]
    fn nesting_past_the_parser_limit_is_refused() {
        let mut pdf = b"%PDF-1.4\n1 0 obj\n".to_vec();
        pdf.extend(std::iter::repeat_n(b'[', 100_000));
        pdf.extend(std::iter::repeat_n(b']', 100_000));
        pdf.extend(b"\nendobj\n");
        assert!(matches!(measure(&pdf), Err(Refusal::TooComplex(m)) if m.contains("nested")));
    }

    #[test]
    fn cross_reference_entries_naming_one_object_pay_for_it_each_time() {
        let mut pdf = b"%PDF-1.4\n".to_vec();
        let offset = pdf.len();
        pdf.extend(b"1 0 obj\n[");
        pdf.extend(b"0 ".repeat(5_000));
        pdf.extend(b"]\nendobj\nxref\n0 400\n");
        for _ in 0..400 {
            pdf.extend(format!("{offset:010} 00000 n \n").as_bytes());
        }
        pdf.extend(b"trailer\n<< /Size 400 >>\nstartxref\n0\n%%EOF\n");
        assert!(matches!(measure(&pdf), Err(Refusal::TooComplex(_))));
        // One entry for it costs it once more.
        let single = measure(&pdf[..find(&pdf, b"xref", 0).unwrap()]).unwrap();
        assert!(single.values > 5_000 && single.values < 6_000);
    }
}
