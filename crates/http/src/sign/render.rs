//! The HTML of the signing pages: server-rendered, no script, inline CSS, Spanish (Chile),
//! laid out for a phone first. Written with maud, which escapes every value (`crate::pages`).

use maud::{Markup, html};

use crate::pages::{self, Look};
use mandato_engine::esign::ceremony::{Ceremony, mask_email};
use mandato_engine::esign::{ProcessState, SignatoryState, SignatureType, sandbox};

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

const LOOK: Look = Look {
    css: CSS,
    footer: "Firma electrónica. Este enlace es personal: no lo comparta. Cada acción queda \
             registrada con fecha, hora, dirección IP y navegador.",
};

/// A page that only says something, with an optional link back to the merchant.
pub fn message_page(title: &str, text: &str, commerce: Option<&str>, back: Option<&str>) -> String {
    pages::message_page(&LOOK, title, text, commerce, back)
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

fn pages_text(pages: i64) -> String {
    if pages == 1 {
        "1 página".to_string()
    } else {
        format!("{pages} páginas")
    }
}

fn documents(v: &PageView<'_>, sealed: bool) -> Markup {
    let docs = &v.ceremony.view.documents;
    html! {
        section {
            h2 { @if sealed { "Documentos firmados" } @else { "Documentos a firmar" } }
            ul class="docs" {
                @for (i, d) in docs.iter().enumerate() {
                    @let hash = if sealed {
                        d.sealed_sha256.as_deref().unwrap_or(&d.sha256)
                    } else {
                        &d.sha256
                    };
                    @let pages = if sealed {
                        v.sealed_pages.get(i).copied().flatten().map_or(d.page_count, i64::from)
                    } else {
                        d.page_count
                    };
                    li {
                        a class="doc" href={ "/sign/" (v.token) "/documentos/" (i + 1) }
                            target="_blank" rel="noopener" { (d.name) }
                        " "
                        span class="muted" { "· " (pages_text(pages)) }
                        div class="hash" { "SHA-256 " (hash) }
                    }
                }
            }
            p class="muted" { "Ábralos y revíselos antes de firmar." }
        }
    }
}

fn people(v: &PageView<'_>) -> Markup {
    let me = v.ceremony.me();
    html! {
        section {
            h2 { "Firmantes" }
            ul class="people" {
                @for p in &v.ceremony.view.signatories {
                    @let state = match p.state {
                        SignatoryState::Pending => "Pendiente",
                        SignatoryState::Signed => "Firmó",
                        SignatoryState::Rejected => "Rechazó",
                    };
                    li {
                        (p.full_name)
                        @if p.seq == me.seq { " (usted)" }
                        " "
                        span class="muted" { "· orden " (p.order) }
                        " "
                        span class={ "state s" (p.state.id()) } { (state) }
                    }
                }
            }
        }
    }
}

fn steps(extra: bool, current: usize) -> Markup {
    let mut names = vec!["Identidad"];
    if extra {
        names.push("Verificación");
    }
    names.push("Firma");
    html! {
        ol class="steps" {
            @for (i, name) in names.iter().enumerate() {
                @let class = match i.cmp(&current) {
                    std::cmp::Ordering::Less => "done",
                    std::cmp::Ordering::Equal => "now",
                    std::cmp::Ordering::Greater => "",
                };
                li class=(class) { (i + 1) ". " (name) }
            }
        }
    }
}

/// The page of a signing link, whatever its situation.
pub fn ceremony_page(v: &PageView<'_>) -> String {
    let c = v.ceremony;
    let p = &c.view.process;
    let me = c.me();
    let body = html! {
        section {
            h1 { (p.process_name) }
            p class="muted" { (me.full_name) " · " (me.kind.spanish()) }
        }
        @if let Some((ok, text)) = &v.notice {
            section class={ "notice " (if *ok { "ok" } else { "bad" }) } role="status" {
                p { (text) }
            }
        }
        @match (p.state, me.state) {
            (ProcessState::Completed, _) => {
                section class="notice ok" {
                    h2 { "Proceso completado" }
                    p {
                        "Todos los firmantes firmaron. Los documentos sellados incluyen las \
                         firmas y un certificado con el registro de auditoría."
                    }
                    p { a href=(p.url_callback) { "Volver al sitio del comercio" } }
                }
                (documents(v, true))
            }
            (_, SignatoryState::Signed) => {
                section class="notice ok" {
                    h2 { "Usted ya firmó" }
                    p {
                        "Firmó el " (local_time(me.signed_at.as_deref().unwrap_or(""), v.time_zone))
                        ". Faltan otras firmas; el comercio recibirá los documentos sellados \
                         cuando todos firmen."
                    }
                    p { a href=(p.url_callback) { "Volver al sitio del comercio" } }
                }
                (documents(v, false))
            }
            _ if c.locked() => {
                section class="notice bad" {
                    h2 { "Enlace bloqueado" }
                    p {
                        "Hubo demasiados intentos fallidos de verificación. Por seguridad este \
                         enlace ya no acepta intentos: contacte al comercio."
                    }
                }
            }
            _ if !c.is_turn() => {
                section class="notice" {
                    h2 { "Aún no es su turno" }
                    p {
                        "Este proceso se firma en orden. Podrá firmar cuando firmen quienes le \
                         anteceden; puede revisar los documentos mientras tanto."
                    }
                }
                (documents(v, false))
            }
            _ => {
                (documents(v, false))
                (action(v))
            }
        }
        (people(v))
    };
    let header = pages::commerce_header(Some(&c.commerce.name));
    pages::document(&LOOK, &p.process_name, header, body)
}

/// The form of the signatory's next step.
fn action(v: &PageView<'_>) -> Markup {
    let me = v.ceremony.me();
    let extra = me.kind.needs_extra_step();
    let step = if me.code_verified_at.is_none() {
        identity_step(v, extra)
    } else if extra && me.identity_confirmed_at.is_none() {
        verification_step(v, extra)
    } else {
        signing_step(v, extra)
    };
    html! { section { (step) } }
}

/// Step one: the RUT, then the one-time code sent to the signatory's e-mail.
fn identity_step(v: &PageView<'_>, extra: bool) -> Markup {
    let me = v.ceremony.me();
    let token = v.token;
    let code_pending = me.code_hash.is_some()
        && me.code_expires_at.as_deref().is_some_and(|e| e > v.now)
        && me.code_attempts < mandato_engine::esign::MAX_CODE_ATTEMPTS;
    let email = mask_email(&me.email);
    html! {
        (steps(extra, 0))
        @if code_pending {
            h2 { "Ingrese el código" }
            p {
                "Enviamos un código de 6 dígitos a " (email)
                ". Vence 10 minutos después de enviado."
            }
            form method="post" action={ "/sign/" (token) "/verificar" } {
                label for="codigo" { "Código" }
                input type="text" id="codigo" name="codigo" inputmode="numeric"
                    autocomplete="one-time-code" maxlength="6" required;
                button type="submit" { "Verificar código" }
            }
            @if v.sandbox {
                div class="sandbox" {
                    "Ambiente de pruebas: el código no se envía por correo. El equipo del \
                     comercio lo consulta en la consola de administración (API de personal, \
                     detalle del proceso)."
                }
            }
            details {
                summary { "¿No recibió el código?" }
                form method="post" action={ "/sign/" (token) "/codigo" } {
                    label for="rut2" { "Su RUT" }
                    input type="text" id="rut2" name="rut" autocomplete="off" required;
                    button type="submit" class="secondary" { "Enviar un código nuevo" }
                }
            }
        } @else {
            h2 { "Confirme su identidad" }
            p {
                "Ingrese su RUT. Le enviaremos un código de un solo uso a su correo registrado ("
                (email) ")."
            }
            form method="post" action={ "/sign/" (token) "/codigo" } {
                label for="rut" { "RUT" }
                input type="text" id="rut" name="rut" placeholder="12.345.678-5"
                    autocomplete="off" required;
                button type="submit" { "Enviar código" }
            }
        }
    }
}

/// Step two of an advanced signature: the identity card's serial.
fn verification_step(v: &PageView<'_>, extra: bool) -> Markup {
    let title = match v.ceremony.me().kind {
        SignatureType::Fao => "Verificación de identidad en línea",
        _ => "Verificación avanzada de identidad",
    };
    html! {
        (steps(extra, 1))
        h2 { (title) }
        p {
            "Ingrese el número de serie (o número de documento) de su cédula de identidad \
             vigente. Se valida con el proveedor de identidad."
        }
        form method="post" action={ "/sign/" (v.token) "/identidad" } {
            label for="serie" { "Número de serie de la cédula" }
            input type="text" id="serie" name="serie" autocomplete="off" required;
            button type="submit" { "Verificar identidad" }
        }
        @if v.sandbox {
            div class="sandbox" {
                "Ambiente de pruebas: la verificación es simulada. Valores de prueba: "
                strong { (sandbox::SERIAL_APPROVED) }
                " aprueba; "
                strong { (sandbox::SERIAL_DENIED) }
                " simula un rechazo del proveedor; cualquier otro valor no coincide."
            }
        }
    }
}

/// The last step: sign, or reject with a reason.
fn signing_step(v: &PageView<'_>, extra: bool) -> Markup {
    let token = v.token;
    html! {
        (steps(extra, if extra { 2 } else { 1 }))
        h2 { "Firmar" }
        form method="post" action={ "/sign/" (token) "/firmar" } {
            div class="check" {
                input type="checkbox" id="acepto" name="acepto" value="si" required;
                label for="acepto" {
                    "Leí los documentos y acepto firmarlos electrónicamente ("
                    (v.ceremony.me().kind.name()) ")."
                }
            }
            button type="submit" { "Firmar documentos" }
        }
        details {
            summary { "Rechazar la firma" }
            form method="post" action={ "/sign/" (token) "/rechazar" } {
                label for="motivo" { "Motivo del rechazo" }
                textarea id="motivo" name="motivo" minlength="3" maxlength="500" required {}
                button type="submit" class="danger" { "Rechazar" }
            }
        }
    }
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
