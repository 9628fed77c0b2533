//! How staff searches compare text: without accents and case, so "jose munoz" finds
//! "José Muñoz" and "ÑUÑOA" finds "Ñuñoa" spelled "Nunoa". Letters are decomposed (Unicode
//! NFD), their combining marks dropped, and the rest lowercased. A RUT is compared by its
//! digits and check digit only, so "12345678-5", "12.345.678-5" and "123456785" are one RUT.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

/// The text as searches compare it.
pub fn fold(text: &str) -> String {
    text.nfd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The digits and check digit of a RUT-looking text, lowercased (`k`); other characters
/// (dots, dashes, spaces) dropped.
pub fn rut_key(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_ascii_digit() || matches!(c, 'k' | 'K'))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accents_and_case_do_not_matter() {
        for (text, folded) in [
            ("José Muñoz", "jose munoz"),
            ("ÑUÑOA", "nunoa"),
            ("Ágata Güell", "agata guell"),
            ("ana@Example.cl", "ana@example.cl"),
            ("", ""),
        ] {
            assert_eq!(fold(text), folded, "{text}");
        }
    }

    #[test]
    fn a_composed_and_a_decomposed_accent_fold_alike() {
        assert_eq!(fold("Jos\u{e9}"), fold("Jose\u{301}"));
    }

    #[test]
    fn a_rut_is_its_digits_and_check_digit() {
        assert_eq!(rut_key("12.345.678-5"), "123456785");
        assert_eq!(rut_key("15.555.555-K"), "15555555k");
        assert_eq!(rut_key("jose"), "");
    }
}
