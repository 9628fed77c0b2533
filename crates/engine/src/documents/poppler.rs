//! Test helpers: the Debian poppler-utils tools (`pdftotext`, `pdfinfo`, `pdffonts`,
//! `pdftoppm`, installed by `scripts/setup.sh`) read the PDFs the service writes, as a reader
//! independent of the library that wrote them.

/// Runs a poppler-utils tool (installed by `scripts/setup.sh`) on the document, with `PDF`
/// in `args` standing for its file and `ROOT` for `page` in a scratch directory; returns
/// what it printed and the directory.
pub fn poppler(tool: &str, args: &[&str], pdf: &[u8]) -> (Vec<u8>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mandato.pdf");
    std::fs::write(&path, pdf).unwrap();
    let args: Vec<std::ffi::OsString> = args
        .iter()
        .map(|a| match *a {
            "PDF" => path.clone().into_os_string(),
            "ROOT" => dir.path().join("page").into_os_string(),
            other => other.into(),
        })
        .collect();
    let output = std::process::Command::new(tool)
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("{tool} (poppler-utils, scripts/setup.sh): {e}"));
    assert!(
        output.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output.stdout, dir)
}

pub fn poppler_text(tool: &str, args: &[&str], pdf: &[u8]) -> String {
    String::from_utf8(poppler(tool, args, pdf).0).expect("UTF-8 output")
}

/// The document's text as `pdftotext` reads it, with runs of whitespace made one space.
pub fn text_of(pdf: &[u8]) -> String {
    page_text(pdf, None)
}

/// One page's text (all pages with `None`), as [`text_of`].
pub fn page_text(pdf: &[u8], page: Option<usize>) -> String {
    let page = page.map(|p| p.to_string());
    let mut args = vec!["-layout", "-enc", "UTF-8"];
    if let Some(p) = &page {
        args.extend(["-f", p.as_str(), "-l", p.as_str()]);
    }
    args.extend(["PDF", "-"]);
    // -layout keeps each label beside its value, as the page shows them.
    let text = poppler_text("pdftotext", &args, pdf);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn page_count(pdf: &[u8]) -> usize {
    let info = poppler_text("pdfinfo", &["PDF"], pdf);
    info.lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no page count in {info}"))
}
