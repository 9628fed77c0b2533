//! Makes sure `ui/dist` exists before `rust-embed` looks at it, so that a fresh clone compiles
//! (and `cargo test` passes) before the UI is built. The placeholder page says how to build it;
//! `scripts/run.sh` and `scripts/test.sh` always build the real UI first.

use std::path::Path;

const PLACEHOLDER: &str = r#"<!doctype html>
<html lang="es">
<head><meta charset="utf-8"><title>Mandato Desk</title></head>
<body style="font-family: sans-serif; max-width: 40rem; margin: 4rem auto">
<h1>La interfaz no está construida</h1>
<p>Este binario se compiló sin la interfaz de personal. Constrúyala con
<code>cd ui &amp;&amp; npm ci &amp;&amp; npm run build</code> y vuelva a compilar
(<code>scripts/run.sh</code> lo hace por usted).</p>
<h2>The UI is not built</h2>
<p>This binary was compiled without the staff UI. Build it with
<code>cd ui &amp;&amp; npm ci &amp;&amp; npm run build</code> and compile again
(<code>scripts/run.sh</code> does both).</p>
<!-- mandato:ui-placeholder -->
</body>
</html>
"#;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    // The UI lives at the top of the workspace, two levels above this crate.
    let dist = Path::new(&manifest_dir).join("../../ui/dist");
    let index = dist.join("index.html");
    if !index.exists() {
        std::fs::create_dir_all(&dist).expect("create ui/dist");
        std::fs::write(&index, PLACEHOLDER).expect("write the placeholder ui/dist/index.html");
    }
    println!("cargo:rerun-if-changed=build.rs");
    // Release builds embed the files, so a new UI build must recompile; debug builds read
    // ui/dist from disk at run time and need not.
    if std::env::var("PROFILE").as_deref() == Ok("release") {
        println!("cargo:rerun-if-changed=../../ui/dist");
    }
}
