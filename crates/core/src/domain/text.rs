//! Free text that people read: names, addresses, a mandate's name and detail, a document's
//! name, a cancellation's reason. Such text goes into pages, PDFs, e-mails, CSV exports and
//! logs, so characters that change how the text around them is shown are refused:
//!
//! - every control character (Unicode category Cc: U+0000 to U+001F and U+007F to U+009F). A
//!   NUL truncates text in C libraries and PDF viewers; a line break forges log lines and CSV
//!   rows. None of these texts has a line of its own, a cancellation's reason included (it is
//!   shown in lists and exported one row each), so line breaks and tabs are refused everywhere;
//! - the bidirectional controls (U+202A to U+202E, U+2066 to U+2069) and the invisible
//!   direction marks (U+200E, U+200F, U+061C): they reorder what is displayed, so a name could
//!   read differently from what is stored ("Trojan Source"), and no name needs them;
//! - the invisible characters that show nothing at all: the zero-width space (U+200B), the
//!   word joiner and invisible operators (U+2060 to U+2064), the byte-order mark (U+FEFF) and
//!   the Mongolian vowel separator (U+180E), with which two names that look the same differ;
//!   and the line and paragraph separators (U+2028, U+2029), which break lines as LF does.
//!   The zero-width joiner and non-joiner stay: emoji and several scripts are written with them.
//!
//! Leading and trailing spaces are trimmed by the callers before this rule applies.

use std::fmt;

/// The field error code for a text that holds a refused character.
pub const INVALID_CHARACTERS: &str = "INVALID_CHARACTERS";

/// The first refused character of a text, and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefusedCharacter {
    pub character: char,
    /// Position in characters, counted from 0.
    pub position: usize,
}

impl fmt::Display for RefusedCharacter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "must not contain control, text-direction or invisible characters (U+{:04X} at position {})",
            u32::from(self.character),
            self.position
        )
    }
}

impl std::error::Error for RefusedCharacter {}

/// Whether `c` may not appear in text shown to people.
pub fn is_refused(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{061C}'
                | '\u{200B}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{2060}'..='\u{2064}'
                | '\u{FEFF}'
                | '\u{180E}'
        )
}

/// `Ok` when `text` can be shown as it is; otherwise its first refused character.
pub fn check_shown_text(text: &str) -> Result<(), RefusedCharacter> {
    match text.chars().enumerate().find(|(_, c)| is_refused(*c)) {
        None => Ok(()),
        Some((position, character)) => Err(RefusedCharacter {
            character,
            position,
        }),
    }
}

/// Text from elsewhere (a received body, an error) as a terminal line shows it without obeying
/// it: every character [`is_refused`] would refuse is written as `\u{XXXX}`, so an escape
/// sequence (ESC ] 0 ; title BEL, ESC ] 52 ; clipboard) or a direction override is seen, not
/// run, and a line break cannot forge another line.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_refused) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_refused(c) {
            shown.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    std::borrow::Cow::Owned(shown)
}

/// A text cell of a CSV export as a spreadsheet will not run it. Excel, LibreOffice and Google
/// Sheets read a cell that starts with `=`, `+`, `-` or `@` (or a tab or carriage return before
/// one) as a formula, so a merchant's id or reference like `=HYPERLINK(...)` would run when an
/// accountant opens the file. Such a cell gets a leading `'`, which spreadsheets show as text
/// and hide; every other cell is written unchanged. Numeric cells (amounts, which may be
/// negative) are not passed through here: they are numbers, not text.
pub fn spreadsheet_safe(cell: &str) -> std::borrow::Cow<'_, str> {
    if cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        std::borrow::Cow::Owned(format!("'{cell}"))
    } else {
        std::borrow::Cow::Borrowed(cell)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_a_spreadsheet_would_run_become_text() {
        for (cell, written) in [
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("+56912345678", "'+56912345678"),
            ("-2+3", "'-2+3"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\t=1", "'\t=1"),
            ("\r=1", "'\r=1"),
            ("M-1", "M-1"),
            ("TRX-889", "TRX-889"),
            ("'quoted", "'quoted"),
            ("", ""),
        ] {
            assert_eq!(spreadsheet_safe(cell), written, "{cell:?}");
        }
    }

    #[test]
    fn names_people_write_are_accepted() {
        for text in [
            "Ana María Pérez Soto",
            "O'Higgins 1234, depto. 501",
            "Ñuñoa",
            "Zoë Ünal-Çelik",
            "محمد",
            "שלום",
            "李小龍",
            "Gimnasio 💪",
            "Plan mensual: 29.990 CLP (IVA incl.)",
            // A zero-width joiner is part of emoji and scripts; it reorders nothing.
            "👩\u{200D}💻",
        ] {
            assert_eq!(check_shown_text(text), Ok(()), "{text:?}");
        }
    }

    #[test]
    fn a_terminal_sees_escape_sequences_instead_of_running_them() {
        assert_eq!(terminal_safe("payment"), "payment");
        assert!(matches!(
            terminal_safe("payment"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            terminal_safe("\u{1b}]0;pwned\u{7}x\u{202E}y\nz"),
            "\\u{001B}]0;pwned\\u{0007}x\\u{202E}y\\u{000A}z"
        );
    }

    #[test]
    fn control_and_direction_characters_are_refused_with_their_place() {
        let cases: &[(&str, char, usize)] = &[
            ("Ana\0", '\0', 3),
            ("Ana\nPérez", '\n', 3),
            ("Ana\rPérez", '\r', 3),
            ("\tAna", '\t', 0),
            ("Ana\u{7F}", '\u{7F}', 3),
            ("Ana\u{85}", '\u{85}', 3),
            ("Ana\u{9F}", '\u{9F}', 3),
            ("Ana\u{1B}[31m", '\u{1B}', 3),
            ("invoice\u{202E}fdp.exe", '\u{202E}', 7),
            ("\u{202A}x", '\u{202A}', 0),
            ("x\u{2066}y\u{2069}", '\u{2066}', 1),
            ("x\u{2069}", '\u{2069}', 1),
            ("Plan\u{200B}", '\u{200B}', 4),
            ("Plan\u{2028}mensual", '\u{2028}', 4),
            ("\u{FEFF}Plan", '\u{FEFF}', 0),
            ("P\u{2060}lan", '\u{2060}', 1),
            ("Ana\u{200E}", '\u{200E}', 3),
            ("Ana\u{200F}", '\u{200F}', 3),
            ("Ana\u{061C}", '\u{061C}', 3),
            ("Pérez\u{0}", '\u{0}', 5),
        ];
        for (text, character, position) in cases {
            assert_eq!(
                check_shown_text(text),
                Err(RefusedCharacter {
                    character: *character,
                    position: *position
                }),
                "{text:?}"
            );
        }
        let message = check_shown_text("a\u{202E}").unwrap_err().to_string();
        assert!(message.contains("U+202E at position 1"), "{message}");
    }
}
