//! Text in the standard Helvetica fonts, for the PDFs the service writes (the EPAC mandate and
//! the signature seal): widths from the font's metrics, line wrapping, and PDF string literals
//! in WinAnsiEncoding so that Spanish accents print without embedding a font.

use std::fmt::Write as _;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Font {
    Regular,
    Bold,
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

/// The width of `text` in points, from Helvetica's metrics (bold approximated as a little
/// wider, which only makes wrapping more careful).
pub fn text_width(text: &str, font: Font, size: f64) -> f64 {
    let units: u32 = text.chars().map(char_width).sum();
    let factor = match font {
        Font::Regular => 1.0,
        Font::Bold => 1.09,
    };
    f64::from(units) * size / 1000.0 * factor
}

/// Helvetica advance widths (1/1000 em) of the printable ASCII range, from the standard AFM.
const HELVETICA_ASCII: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // ' '../
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, // 0..?
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, // @..O
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, // P.._
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, // `..o
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, // p..~
];

fn char_width(c: char) -> u32 {
    let base = match c {
        'á' | 'à' | 'â' | 'ä' | 'ã' => 'a',
        'é' | 'è' | 'ê' | 'ë' => 'e',
        'í' | 'ì' | 'î' | 'ï' => 'i',
        'ó' | 'ò' | 'ô' | 'ö' | 'õ' => 'o',
        'ú' | 'ù' | 'û' | 'ü' => 'u',
        'ñ' => 'n',
        'ç' => 'c',
        'Á' | 'À' | 'Â' | 'Ä' | 'Ã' => 'A',
        'É' | 'È' | 'Ê' | 'Ë' => 'E',
        'Í' | 'Ì' | 'Î' | 'Ï' => 'I',
        'Ó' | 'Ò' | 'Ô' | 'Ö' | 'Õ' => 'O',
        'Ú' | 'Ù' | 'Û' | 'Ü' => 'U',
        'Ñ' => 'N',
        'Ç' => 'C',
        other => other,
    };
    match base {
        ' '..='~' => u32::from(HELVETICA_ASCII[base as usize - 0x20]),
        '¿' => 611,
        '¡' | '“' | '”' | '‘' | '’' => 333,
        '°' => 400,
        'º' | 'ª' => 370,
        '—' => 1000,
        '…' => 1000,
        _ => 556,
    }
}

/// `text` in WinAnsiEncoding; characters it cannot show become `?`.
fn win_ansi(text: &str) -> Vec<u8> {
    text.chars()
        .map(|c| match c {
            ' '..='~' => c as u8,
            '\u{a0}'..='\u{ff}' => c as u32 as u8,
            '€' => 0x80,
            '…' => 0x85,
            '‘' => 0x91,
            '’' => 0x92,
            '“' => 0x93,
            '”' => 0x94,
            '•' => 0x95,
            '–' => 0x96,
            '—' => 0x97,
            _ => b'?',
        })
        .collect()
}

/// A PDF literal string: `(` `)` `\` escaped, bytes outside printable ASCII as octal escapes,
/// so the file itself stays 7-bit after its header.
pub fn literal(text: &str) -> String {
    let mut out = String::from("(");
    for byte in win_ansi(text) {
        match byte {
            b'(' | b')' | b'\\' => {
                out.push('\\');
                out.push(byte as char);
            }
            0x20..=0x7e => out.push(byte as char),
            _ => {
                let _ = write!(out, "\\{byte:03o}");
            }
        }
    }
    out.push(')');
    out
}
