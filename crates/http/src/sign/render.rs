//! The HTML of the signing pages: server-rendered, no script, inline CSS, Spanish (Chile),
//! laid out for a phone first. Every interpolated value goes through [`esc`].

use std::fmt::Write as _;

use mandato_engine::esign::ceremony::{Ceremony, mask_email};
use mandato_engine::esign::{ProcessState, SignatoryState, sandbox};

/// Escapes text for HTML element content and quoted attribute values.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

const CSS: &str = r#"
*{box-sizing:border-box}
body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
  background:#f3f5f8;color:#1d2433;line-height:1.45;font-size:16px}
main{max-width:680px;margin:0 auto;padding:16px}
header{padding:20px 16px 8px;max-width:680px;margin:0 auto}
header .who{font-size:.85rem;color:#5a6478;text-transform:uppercase;letter-spacing:.04em}
h1{font-size:1.45rem;margin:.2rem 0 .4rem}
h2{font-size:1.1rem;margin:0 0 .6rem}
section{background:#fff;border-radius:12px;padding:16px;margin:0 0 16px;
  box-shadow:0 1px 3px rgba(20,30,50,.08)}
ul.docs,ul.people{list-style:none;margin:0;padding:0}
ul.docs li,ul.people li{padding:10px 0;border-bottom:1px solid #e6e9ef;overflow-wrap:anywhere}
ul.docs li:last-child,ul.people li:last-child{border-bottom:0}
a.doc{font-weight:600;color:#1f5eff}
.hash{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.72rem;color:#5a6478;
  overflow-wrap:anywhere}
.state{display:inline-block;padding:1px 8px;border-radius:10px;font-size:.8rem;background:#eef1f6}
.state.s2{background:#dff5e6;color:#17663a}.state.s3{background:#fde8e8;color:#9b1c1c}
ol.steps{display:flex;gap:6px;list-style:none;padding:0;margin:0 0 12px;font-size:.82rem}
ol.steps li{flex:1;text-align:center;padding:6px 4px;border-radius:8px;background:#eef1f6;color:#5a6478}
ol.steps li.now{background:#1f5eff;color:#fff;font-weight:600}
ol.steps li.done{background:#dff5e6;color:#17663a}
label{display:block;font-size:.9rem;margin:10px 0 4px;color:#323b4e}
input[type=text],textarea{width:100%;padding:10px;font-size:1rem;border:1px solid #b9c1cf;
  border-radius:8px;background:#fff;font-family:inherit}
textarea{min-height:90px}
.check{display:flex;gap:8px;align-items:flex-start;margin-top:8px}
.check input{margin-top:4px;width:20px;height:20px;flex:none}
button{margin-top:14px;width:100%;padding:12px;font-size:1rem;font-weight:600;border:0;
  border-radius:8px;background:#1f5eff;color:#fff;cursor:pointer}
button.secondary{background:#fff;color:#1f5eff;border:1px solid #1f5eff}
button.danger{background:#fff;color:#b42318;border:1px solid #b42318}
details{margin-top:16px}summary{cursor:pointer;color:#b42318;font-weight:600}
.notice{border-left:4px solid #1f5eff;background:#eef3ff}
.notice.ok{border-color:#17a34a;background:#ecfbf1}
.notice.bad{border-color:#c81e1e;background:#fff1f1}
.muted{color:#5a6478;font-size:.9rem}
.sandbox{border:1px dashed #b7791f;background:#fffaf0;border-radius:8px;padding:10px;
  font-size:.86rem;margin-top:12px}
footer{max-width:680px;margin:0 auto;padding:8px 16px 32px;color:#566074;font-size:.8rem}
"#;

/// A whole HTML document.
pub fn document(title: &str, header: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"es-CL\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"robots\" content=\"noindex,nofollow\">\
         <title>{}</title><style>{CSS}</style></head><body>\
         <header>{header}</header><main>{body}</main>\
         <footer>Firma electrónica. Este enlace es personal: no lo comparta. Cada acción queda \
         registrada con fecha, hora, dirección IP y navegador.</footer>\
         </body></html>\n",
        esc(title)
    )
}

fn header(commerce: Option<&str>) -> String {
    match commerce {
        Some(name) => format!("<div class=\"who\">{}</div>", esc(name)),
        None => String::new(),
    }
}

/// A page that only says something, with an optional link back to the merchant.
pub fn message_page(title: &str, text: &str, commerce: Option<&str>, back: Option<&str>) -> String {
    let mut body = format!("<section><h1>{}</h1><p>{}</p>", esc(title), esc(text));
    if let Some(url) = back {
        let _ = write!(
            body,
            "<p><a href=\"{}\">Volver al sitio del comercio</a></p>",
            esc(url)
        );
    }
    body.push_str("</section>");
    document(title, &header(commerce), &body)
}

/// What the page shows besides the ceremony's state.
pub struct PageView<'a> {
    pub ceremony: &'a Ceremony,
    pub token: &'a str,
    /// A banner after a step (`Some((ok, text))`).
    pub notice: Option<(bool, String)>,
    pub sandbox: bool,
    /// Wall-clock now, RFC 3339, to tell whether a code is still valid.
    pub now: &'a str,
    /// The installation's time zone: times are shown in it, and it is named.
    pub time_zone: chrono_tz::Tz,
    /// Each sealed document's page count, read from the sealed PDF (empty before the seal).
    pub sealed_pages: &'a [Option<u32>],
}

/// `2026-11-22T10:15:03.123Z` → `22-11-2026 07:15:03 (hora de America/Santiago, UTC-03:00)`:
/// the signatory reads their own clock, and the zone is named so the time is unambiguous.
pub fn local_time(at: &str, zone: chrono_tz::Tz) -> String {
    chrono::DateTime::parse_from_rfc3339(at)
        .map(|t| {
            let local = t.with_timezone(&zone);
            format!(
                "{} (hora de {}, UTC{})",
                local.format("%d-%m-%Y %H:%M:%S"),
                zone.name(),
                local.format("%:z")
            )
        })
        .unwrap_or_else(|_| at.to_string())
}

fn documents(s: &mut String, v: &PageView<'_>, sealed: bool) {
    let docs = &v.ceremony.view.documents;
    let _ = write!(
        s,
        "<section><h2>{}</h2><ul class=\"docs\">",
        if sealed {
            "Documentos firmados"
        } else {
            "Documentos a firmar"
        }
    );
    for (i, d) in docs.iter().enumerate() {
        let hash = if sealed {
            d.sealed_sha256.as_deref().unwrap_or(&d.sha256)
        } else {
            &d.sha256
        };
        let pages = if sealed {
            v.sealed_pages
                .get(i)
                .copied()
                .flatten()
                .map_or(d.page_count, i64::from)
        } else {
            d.page_count
        };
        let pages = if pages == 1 {
            "1 página".to_string()
        } else {
            format!("{pages} páginas")
        };
        let _ = write!(
            s,
            "<li><a class=\"doc\" href=\"/sign/{}/documentos/{}\" target=\"_blank\" rel=\"noopener\">{}</a> \
             <span class=\"muted\">· {pages}</span><div class=\"hash\">SHA-256 {}</div></li>",
            esc(v.token),
            i + 1,
            esc(&d.name),
            esc(hash)
        );
    }
    s.push_str("</ul><p class=\"muted\">Ábralos y revíselos antes de firmar.</p></section>");
}

fn people(s: &mut String, v: &PageView<'_>) {
    let me = v.ceremony.me();
    s.push_str("<section><h2>Firmantes</h2><ul class=\"people\">");
    for p in &v.ceremony.view.signatories {
        let state = match p.state {
            SignatoryState::Pending => "Pendiente",
            SignatoryState::Signed => "Firmó",
            SignatoryState::Rejected => "Rechazó",
        };
        let you = if p.seq == me.seq { " (usted)" } else { "" };
        let _ = write!(
            s,
            "<li>{}{you} <span class=\"muted\">· orden {}</span> \
             <span class=\"state s{}\">{state}</span></li>",
            esc(&p.full_name),
            p.order,
            p.state.id()
        );
    }
    s.push_str("</ul></section>");
}

fn steps(s: &mut String, extra: bool, current: usize) {
    let mut names = vec!["Identidad"];
    if extra {
        names.push("Verificación");
    }
    names.push("Firma");
    s.push_str("<ol class=\"steps\">");
    for (i, name) in names.iter().enumerate() {
        let class = match i.cmp(&current) {
            std::cmp::Ordering::Less => "done",
            std::cmp::Ordering::Equal => "now",
            std::cmp::Ordering::Greater => "",
        };
        let _ = write!(s, "<li class=\"{class}\">{}. {name}</li>", i + 1);
    }
    s.push_str("</ol>");
}

/// The page of a signing link, whatever its situation.
pub fn ceremony_page(v: &PageView<'_>) -> String {
    let c = v.ceremony;
    let p = &c.view.process;
    let me = c.me();
    let mut s = String::new();
    let _ = write!(
        s,
        "<section><h1>{}</h1><p class=\"muted\">{} · {}</p></section>",
        esc(&p.process_name),
        esc(&me.full_name),
        esc(me.kind.spanish())
    );
    if let Some((ok, text)) = &v.notice {
        let _ = write!(
            s,
            "<section class=\"notice {}\" role=\"status\"><p>{}</p></section>",
            if *ok { "ok" } else { "bad" },
            esc(text)
        );
    }
    match (p.state, me.state) {
        (ProcessState::Completed, _) => {
            let _ = write!(
                s,
                "<section class=\"notice ok\"><h2>Proceso completado</h2><p>Todos los firmantes \
                 firmaron. Los documentos sellados incluyen las firmas y un certificado con el \
                 registro de auditoría.</p><p><a href=\"{}\">Volver al sitio del comercio</a></p>\
                 </section>",
                esc(&p.url_callback)
            );
            documents(&mut s, v, true);
        }
        (_, SignatoryState::Signed) => {
            let _ = write!(
                s,
                "<section class=\"notice ok\"><h2>Usted ya firmó</h2><p>Firmó el {}. Faltan otras \
                 firmas; el comercio recibirá los documentos sellados cuando todos firmen.</p>\
                 <p><a href=\"{}\">Volver al sitio del comercio</a></p></section>",
                esc(&local_time(
                    me.signed_at.as_deref().unwrap_or(""),
                    v.time_zone
                )),
                esc(&p.url_callback)
            );
            documents(&mut s, v, false);
        }
        _ if c.locked() => {
            s.push_str(
                "<section class=\"notice bad\"><h2>Enlace bloqueado</h2><p>Hubo demasiados \
                 intentos fallidos de verificación. Por seguridad este enlace ya no acepta \
                 intentos: contacte al comercio.</p></section>",
            );
        }
        _ if !c.is_turn() => {
            s.push_str(
                "<section class=\"notice\"><h2>Aún no es su turno</h2><p>Este proceso se firma \
                 en orden. Podrá firmar cuando firmen quienes le anteceden; puede revisar los \
                 documentos mientras tanto.</p></section>",
            );
            documents(&mut s, v, false);
        }
        _ => {
            documents(&mut s, v, false);
            action(&mut s, v);
        }
    }
    people(&mut s, v);
    document(&p.process_name, &header(Some(&c.commerce.name)), &s)
}

/// The form of the signatory's next step.
fn action(s: &mut String, v: &PageView<'_>) {
    let me = v.ceremony.me();
    let extra = me.kind.needs_extra_step();
    let token = esc(v.token);
    s.push_str("<section>");
    if me.code_verified_at.is_none() {
        steps(s, extra, 0);
        let code_pending = me.code_hash.is_some()
            && me.code_expires_at.as_deref().is_some_and(|e| e > v.now)
            && me.code_attempts < mandato_engine::esign::MAX_CODE_ATTEMPTS;
        if code_pending {
            let _ = write!(
                s,
                "<h2>Ingrese el código</h2><p>Enviamos un código de 6 dígitos a {}. Vence 10 \
                 minutos después de enviado.</p>\
                 <form method=\"post\" action=\"/sign/{token}/verificar\">\
                 <label for=\"codigo\">Código</label>\
                 <input type=\"text\" id=\"codigo\" name=\"codigo\" inputmode=\"numeric\" \
                 autocomplete=\"one-time-code\" maxlength=\"6\" required>\
                 <button type=\"submit\">Verificar código</button></form>",
                esc(&mask_email(&me.email))
            );
            if v.sandbox {
                s.push_str(
                    "<div class=\"sandbox\">Ambiente de pruebas: el código no se envía por \
                     correo. El equipo del comercio lo consulta en la consola de administración \
                     (API de personal, detalle del proceso).</div>",
                );
            }
            let _ = write!(
                s,
                "<details><summary>¿No recibió el código?</summary>\
                 <form method=\"post\" action=\"/sign/{token}/codigo\">\
                 <label for=\"rut2\">Su RUT</label>\
                 <input type=\"text\" id=\"rut2\" name=\"rut\" autocomplete=\"off\" required>\
                 <button type=\"submit\" class=\"secondary\">Enviar un código nuevo</button>\
                 </form></details>"
            );
        } else {
            let _ = write!(
                s,
                "<h2>Confirme su identidad</h2><p>Ingrese su RUT. Le enviaremos un código de un \
                 solo uso a su correo registrado ({}).</p>\
                 <form method=\"post\" action=\"/sign/{token}/codigo\">\
                 <label for=\"rut\">RUT</label>\
                 <input type=\"text\" id=\"rut\" name=\"rut\" placeholder=\"12.345.678-5\" \
                 autocomplete=\"off\" required>\
                 <button type=\"submit\">Enviar código</button></form>",
                esc(&mask_email(&me.email))
            );
        }
    } else if extra && me.identity_confirmed_at.is_none() {
        steps(s, extra, 1);
        let title = match me.kind {
            mandato_engine::esign::SignatureType::Fao => "Verificación de identidad en línea",
            _ => "Verificación avanzada de identidad",
        };
        let _ = write!(
            s,
            "<h2>{title}</h2><p>Ingrese el número de serie (o número de documento) de su cédula \
             de identidad vigente. Se valida con el proveedor de identidad.</p>\
             <form method=\"post\" action=\"/sign/{token}/identidad\">\
             <label for=\"serie\">Número de serie de la cédula</label>\
             <input type=\"text\" id=\"serie\" name=\"serie\" autocomplete=\"off\" required>\
             <button type=\"submit\">Verificar identidad</button></form>"
        );
        if v.sandbox {
            let _ = write!(
                s,
                "<div class=\"sandbox\">Ambiente de pruebas: la verificación es simulada. \
                 Valores de prueba: <strong>{}</strong> aprueba; <strong>{}</strong> simula un \
                 rechazo del proveedor; cualquier otro valor no coincide.</div>",
                sandbox::SERIAL_APPROVED,
                sandbox::SERIAL_DENIED
            );
        }
    } else {
        steps(s, extra, if extra { 2 } else { 1 });
        let _ = write!(
            s,
            "<h2>Firmar</h2><form method=\"post\" action=\"/sign/{token}/firmar\">\
             <div class=\"check\"><input type=\"checkbox\" id=\"acepto\" name=\"acepto\" \
             value=\"si\" required><label for=\"acepto\">Leí los documentos y acepto firmarlos \
             electrónicamente ({}).</label></div>\
             <button type=\"submit\">Firmar documentos</button></form>\
             <details><summary>Rechazar la firma</summary>\
             <form method=\"post\" action=\"/sign/{token}/rechazar\">\
             <label for=\"motivo\">Motivo del rechazo</label>\
             <textarea id=\"motivo\" name=\"motivo\" minlength=\"3\" maxlength=\"500\" required>\
             </textarea><button type=\"submit\" class=\"danger\">Rechazar</button></form></details>",
            esc(me.kind.name())
        );
    }
    s.push_str("</section>");
}

#[cfg(test)]
mod tests {
    use super::local_time;

    #[test]
    fn times_are_shown_in_the_zone_they_name() {
        let zone = chrono_tz::America::Santiago;
        // Summer time (UTC-3) and winter time (UTC-4).
        assert_eq!(
            local_time("2026-11-22T10:15:03.123Z", zone),
            "22-11-2026 07:15:03 (hora de America/Santiago, UTC-03:00)"
        );
        assert_eq!(
            local_time("2026-07-01T12:00:00.000Z", zone),
            "01-07-2026 08:00:00 (hora de America/Santiago, UTC-04:00)"
        );
        assert_eq!(local_time("not a time", zone), "not a time");
    }
}
