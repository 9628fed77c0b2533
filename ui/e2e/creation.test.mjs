// Browser test of what staff create in Mandato Desk, against a real `mandato serve`
// (target/debug/mandato, or MANDATO_BIN) in Debian's Chromium: a customer from the Customers
// list (the server's refusals named beside each field, in Spanish and in English; the RUT
// typed with dots), a mandate from the Mandates list (an amount missing is named, then a UF
// installment with a Spanish due date; the Magic Link shown and copied), a signature process
// from the Signatures screen (a PDF uploaded), a signatory's link copied, the process cancelled
// after confirmation, and its events and audit entries linking to its page. Screenshots of the
// three dialogs at 1440 and 390 px go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, businessDate } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = { code: "76123456-0", name: "Gimnasio Central", password: "clave-secreta-1" };

let server;
let browser;
let page;
const ids = { customer: "", mandate: "", process: "" };

/** A one-page A4 PDF, its cross-reference table computed here. */
function onePagePdf(text) {
  const content = `BT /F1 18 Tf 72 760 Td (${text}) Tj ET`;
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  let pdf = "%PDF-1.4\n";
  const offsets = objects.map((object, i) => {
    const at = pdf.length;
    pdf += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return at;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  pdf += offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("");
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, "latin1");
}

async function shots(name) {
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(200);
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

/** The text under a labelled field of the open dialog (Mantine's error). */
async function fieldError(label) {
  const input = page.getByRole("dialog").getByLabel(label, { exact: false }).first();
  const id = await input.getAttribute("aria-describedby");
  assert.ok(id, `${label} has no description or error`);
  const texts = await Promise.all(id.split(" ").map((part) => page.locator(`[id="${part}"]`).innerText().catch(() => "")));
  return texts.join(" ");
}

async function clipboard() {
  return page.evaluate(() => navigator.clipboard.readText());
}

let failed = false;
function step(name, fn) {
  test(name, async (t) => {
    if (failed) return t.skip("an earlier step failed");
    try {
      await fn(t);
    } catch (e) {
      failed = true;
      await page?.screenshot({ path: join(SHOTS, "creation-failure.png"), fullPage: true }).catch(() => {});
      throw e;
    }
  });
}

describe("staff create customers, mandates and signature processes", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL" });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.base });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE.code, "--name", COMMERCE.name, "--password-stdin"], COMMERCE.password);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  step("a customer: refusals beside their fields, then created", async () => {
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();

    await page.getByRole("link", { name: "Clientes", exact: true }).click();
    await page.getByRole("heading", { name: "Clientes" }).waitFor();
    await page.getByTestId("new-customer").click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("Nuevo cliente").first().waitFor();
    // The only commerce is chosen already.
    assert.match(await dialog.getByTestId("customer-commerce").inputValue(), /Gimnasio Central/);
    await dialog.getByTestId("customer-rut").fill("12.345.678-9");
    await dialog.getByTestId("customer-email").fill("no es correo");
    await dialog.getByTestId("customer-phone").fill("llámame");
    await dialog.getByTestId("customer-submit").click();
    await dialog.getByText("El RUT no es válido").waitFor();
    assert.match(await fieldError("RUT"), /El RUT no es válido/);
    assert.match(await fieldError("Correo"), /El correo no es válido/);
    assert.match(await fieldError("Teléfono"), /El teléfono no es válido/);
    assert.match(await fieldError("Nombre"), /Es obligatorio/);
    assert.match(await fieldError("Apellido paterno"), /Es obligatorio/);
    await shots("create-customer-errors");

    // The same refusal in English.
    await dialog.getByRole("button", { name: "Cancelar" }).click();
    await page.getByRole("radiogroup", { name: "Idioma" }).getByText("EN", { exact: true }).click();
    await page.getByRole("heading", { name: "Customers" }).waitFor();
    await page.getByTestId("new-customer").click();
    await dialog.getByTestId("customer-rut").fill("12.345.678-9");
    await dialog.getByTestId("customer-submit").click();
    await dialog.getByText("The RUT is not valid").waitFor();
    assert.match(await fieldError("E-mail"), /The email address is not valid/);
    assert.match(await fieldError("Last name"), /Is required/);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await page.getByRole("radiogroup", { name: "Language" }).getByText("ES", { exact: true }).click();
    await page.getByRole("heading", { name: "Clientes" }).waitFor();

    await page.getByTestId("new-customer").click();
    await dialog.getByTestId("customer-rut").fill("12.345.678-5");
    await dialog.getByTestId("customer-firstName").fill("José");
    await dialog.getByTestId("customer-lastName").fill("Muñoz");
    await dialog.getByTestId("customer-email").fill("jose.munoz@example.cl");
    await dialog.getByTestId("customer-phone").fill("+56 9 1234 5678");
    await dialog.getByTestId("customer-commune").fill("Providencia");
    await shots("create-customer");
    await dialog.getByTestId("customer-submit").click();
    await page.waitForURL(/\/customers\/usr_/);
    ids.customer = page.url().split("/customers/")[1];
    await page.getByRole("heading", { name: "José Muñoz" }).waitFor();
    assert.match(await page.getByTestId("customer-rut").first().innerText(), /12\.345\.678-5/);
    // From the customer's page, a new mandate starts with this customer chosen.
    await page.getByTestId("new-mandate").click();
    const mandateDialog = page.getByRole("dialog");
    assert.match(await mandateDialog.getByTestId("mandate-customer").inputValue(), /José Muñoz \(12\.345\.678-5\)/);
    await mandateDialog.getByRole("button", { name: "Cancelar" }).click();
    await mandateDialog.waitFor({ state: "detached" });

    // Again: the RUT is taken, said beside it.
    await page.getByRole("link", { name: "Clientes", exact: true }).click();
    await page.getByTestId("new-customer").click();
    await dialog.getByTestId("customer-rut").fill("12345678-5");
    await dialog.getByTestId("customer-firstName").fill("Otro");
    await dialog.getByTestId("customer-lastName").fill("Cliente");
    await dialog.getByTestId("customer-email").fill("otro@example.cl");
    await dialog.getByTestId("customer-submit").click();
    await dialog.getByText("Ya existe un cliente con ese RUT").waitFor();
    // Another RUT under the first one's id: the id is named.
    await dialog.getByTestId("customer-rut").fill("7.654.321-6");
    await dialog.getByTestId("customer-userId").fill("12345678-5");
    await dialog.getByTestId("customer-submit").click();
    await dialog.getByText("Ya existe un cliente con ese ID en el comercio").waitFor();
    assert.match(await fieldError("ID del cliente"), /Ya existe un cliente con ese ID/);
    await dialog.getByRole("button", { name: "Cancelar" }).click();
  });

  step("a mandate: the missing amount named, then a UF installment and its Magic Link", async () => {
    await page.getByRole("link", { name: "Mandatos", exact: true }).click();
    await page.getByRole("heading", { name: "Mandatos" }).waitFor();
    await page.getByTestId("new-mandate").click();
    const dialog = page.getByRole("dialog");
    await dialog.getByTestId("mandate-customer").click();
    await dialog.getByTestId("mandate-customer").fill("muñoz");
    await page.getByRole("option", { name: /José Muñoz/ }).click();
    await dialog.getByTestId("mandate-id").fill("GYM-77");
    await dialog.getByTestId("mandate-name").fill("Plan anual");
    await dialog.getByTestId("mandate-type").getByText("Pago único").click();
    await dialog.getByTestId("mandate-submit").click();
    await dialog.getByText("Es obligatorio").first().waitFor();
    assert.match(await fieldError("Monto"), /Es obligatorio/);

    await dialog.getByTestId("mandate-type").getByText("Dinámico").click();
    await dialog.getByTestId("mandate-currency").getByText("UF").click();
    await dialog.getByTestId("installment-amount").fill("1,5");
    const [y, m, d] = businessDate(10).split("-");
    await dialog.getByTestId("installment-due-date").fill(`${d}-${m}-${y}`);
    await dialog.getByTestId("installment-due-date").press("Enter");
    await shots("create-mandate");
    await dialog.getByTestId("mandate-submit").click();
    await dialog.getByTestId("mandate-created").waitFor();
    const link = await dialog.getByTestId("magic-link").inputValue();
    assert.ok(link.startsWith(`${server.base}/link/`), link);
    await dialog.getByTestId("copy-magic-link").click();
    assert.equal(await clipboard(), link);
    await shots("create-mandate-link");
    await dialog.getByTestId("open-created-mandate").click();
    await page.waitForURL(/\/mandates\/man_/);
    ids.mandate = page.url().split("/mandates/")[1];
    await page.getByRole("heading", { name: "Plan anual" }).waitFor();
    await page.getByText("1,5000", { exact: false }).first().waitFor();
    // The link opens the customer's page.
    const customerPage = await fetch(link);
    assert.equal(customerPage.status, 200);
  });

  step("a signature process: a PDF uploaded, a signer's link copied, cancelled", async () => {
    await page.getByRole("link", { name: "Firmas", exact: true }).click();
    await page.getByRole("heading", { name: "Firmas" }).waitFor();
    await page.getByTestId("new-signature").click();
    const dialog = page.getByRole("dialog");
    await dialog.getByTestId("signature-name").fill("Contrato de socio");
    await dialog.getByTestId("signer-customer").click();
    await dialog.getByTestId("signer-customer").fill("12.345");
    await page.getByRole("option", { name: /José Muñoz/ }).click();
    await dialog.locator('input[type="file"]').setInputFiles({ name: "contrato.pdf", mimeType: "application/pdf", buffer: onePagePdf("Contrato de socio") });
    await dialog.getByTestId("signature-callback").fill("https://gimnasio.example/firmas/listo");
    await dialog.getByTestId("signature-webhook").fill("http://gimnasio.example/hooks");
    await dialog.getByTestId("signature-submit").click();
    // The webhook must be https: named beside it.
    await dialog.getByText("La URL no es válida").waitFor();
    assert.match(await fieldError("URL de webhook"), /La URL no es válida/);
    await dialog.getByTestId("signature-webhook").fill("https://gimnasio.example/hooks");
    await shots("create-signature");
    await dialog.getByTestId("signature-submit").click();
    await page.waitForURL(/\/signatures\/sig_/);
    ids.process = page.url().split("/signatures/")[1];
    await page.getByRole("heading", { name: "Contrato de socio" }).waitFor();

    const copy = page.getByTestId("copy-signing-link");
    const url = await copy.getAttribute("data-url");
    assert.ok(url.startsWith(`${server.base}/sign/`), url);
    await copy.click();
    assert.equal(await clipboard(), url);

    await page.getByTestId("cancel-process").click();
    await page.getByRole("dialog").getByText("¿Cancelar el proceso de firma?").waitFor();
    // Going back changes nothing.
    await page.getByRole("button", { name: "No, volver" }).click();
    await page.getByTestId("cancel-process").waitFor();
    await page.getByTestId("cancel-process").click();
    await page.getByTestId("confirm").click();
    await page.getByText("Proceso de firma cancelado").first().waitFor();
    await page.locator('[data-state="CANCELLED"]').first().waitFor();
    assert.equal(await page.getByTestId("cancel-process").count(), 0);
    assert.equal(await page.getByTestId("copy-signing-link").count(), 0);
    await page.getByText("Personal (mesa)").waitFor();
  });

  step("its events and audit entries link to the process", async () => {
    await page.getByRole("link", { name: "Notificaciones", exact: true }).click();
    const link = page.getByTestId("event-signature-link").filter({ hasText: ids.process }).first();
    await link.waitFor();
    await link.click();
    await page.waitForURL(new RegExp(`/signatures/${ids.process}$`));
    await page.getByRole("heading", { name: "Contrato de socio" }).waitFor();

    await page.getByRole("link", { name: "Auditoría", exact: true }).click();
    const entry = page.getByTestId("audit-signature-link").filter({ hasText: ids.process }).first();
    await entry.waitFor();
    await page.getByText("Proceso de firma cancelado").first().waitFor();
    await entry.click();
    await page.waitForURL(new RegExp(`/signatures/${ids.process}$`));
  });
});
