// Browser test of the Signatures screen in Mandato Desk, against a real `mandato serve`
// (target/debug/mandato, or MANDATO_BIN) driven in Debian's Chromium: the merchant API creates
// a signature process, staff find it by part of the signatory's name typed without accents,
// open it, read the sandbox code the customer asks for on the real signing page, the customer
// signs, and the process shows COMPLETED with its sealed PDF and an intact audit chain. Back
// returns to the list as it was filtered; the screen also reads in English; a viewer reads a
// process but none of its codes. Screenshots of the list and the detail at 1440 and 390 px go
// to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, merchantApi } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = { code: "76123456-0", name: "Inmobiliaria Sur", password: "clave-secreta-1" };
const RUT = "12.345.678-5";
const CALLBACK = "https://merchant.example/firmas/listo";

let server;
let browser;
let page;
const ids = { process: "", signatory: "", signingUrl: "" };
const VIEWER = { email: "lector@inmobiliaria.cl", password: "otra clave larga 456" };

async function shots(name) {
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(200);
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

const merchant = (base, apiKey) =>
  merchantApi(base, { commerce: COMMERCE.code, password: COMMERCE.password, apiKey });

/** A one-page A4 PDF with a line of text, its cross-reference table computed here. */
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
  return Buffer.from(pdf, "latin1").toString("base64");
}

let failed = false;
function step(name, fn) {
  test(name, async (t) => {
    if (failed) return t.skip("an earlier step failed");
    try {
      await fn(t);
    } catch (e) {
      failed = true;
      await page?.screenshot({ path: join(SHOTS, "signatures-failure.png"), fullPage: true }).catch(() => {});
      throw e;
    }
  });
}

describe("the Signatures screen", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL" });
    // The commerce's callback, where the signing page sends the customer at the end.
    await context.route(`${CALLBACK}**`, (route) =>
      route.fulfill({ status: 200, contentType: "text/html", body: "<h1>Listo</h1>" }),
    );
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  step("the merchant API creates a process", async () => {
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE.code, "--name", COMMERCE.name, "--password-stdin"], COMMERCE.password);
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create"]));
    const call = await merchant(server.base, key.apiKey);
    await call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: RUT },
        personalInformation: { firstName: "José", lastName: "Muñoz", secondLastName: "Ñúñez" },
        contacts: { email: "jose.munoz@example.cl" },
      },
    });
    const created = await call("POST", "/signature", {
      process: { processName: "Contrato de arriendo", externalProcessId: "ARR-7", requestUser: "ventas@inmobiliaria.cl" },
      signatories: [{ userId: "cust-001", order: 1, type: "FES" }],
      documents: [
        {
          documentName: "contrato.pdf",
          contentBase64: onePagePdf("Contrato de arriendo"),
          signatureData: [{ signatory: { userId: "cust-001" }, mode: "LAST_PAGE" }],
        },
      ],
      urls: { callback: CALLBACK, webhook: "https://merchant.example/hooks/signature" },
    });
    ids.process = created.process.internalId;
    ids.signatory = created.signatories[0].internalId;
    ids.signingUrl = created.signatories[0].signingUrl;
    assert.match(ids.process, /^sig_/);
  });

  step("staff find it by part of the name, without accents", async () => {
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();

    await page.getByRole("link", { name: "Firmas" }).click();
    await page.getByRole("heading", { name: "Firmas" }).waitFor();
    await page.getByTestId("signature-search").fill("munoz");
    await page.waitForURL(/[?&]q=munoz/);
    const table = page.getByTestId("signatures-table");
    const row = table.getByRole("row").filter({ hasText: ids.process });
    await row.waitFor();
    await page.getByTestId("signature-count").getByText("1 proceso").waitFor();
    assert.match(await row.innerText(), /contrato\.pdf/);
    assert.match(await row.innerText(), /0\/1/);
    await row.getByText("Pendiente").waitFor();
    // Another state filters it out.
    await page.getByTestId("signature-state").click();
    await page.getByRole("option", { name: "Completado" }).click();
    await page.waitForURL(/state=COMPLETED/);
    await page.getByText("0 procesos").waitFor();
    await page.goBack();
    await page.waitForURL((url) => !url.search.includes("state="));
    await row.waitFor();
    await shots("signatures");
  });

  step("the detail shows the code the customer asked for; the customer signs", async () => {
    await page.getByRole("link", { name: ids.process }).click();
    await page.getByRole("heading", { name: "Contrato de arriendo" }).waitFor();
    assert.equal(await page.getByTestId("process-id").innerText(), ids.process);
    const signatory = page.getByTestId(`signatory-${ids.signatory}`);
    await signatory.getByText("José Muñoz Ñúñez").waitFor();
    await signatory.getByText("jose.munoz@example.cl").waitFor();
    await signatory.getByText("Aún no solicitado").waitFor();

    // The customer, on the real signing page, in a tab of their own.
    const customer = await page.context().newPage();
    await customer.goto(ids.signingUrl);
    await customer.getByLabel("RUT", { exact: true }).fill(RUT);
    await customer.getByRole("button", { name: "Enviar código" }).click();
    await customer.getByLabel("Código", { exact: true }).waitFor();

    // Staff read the code as it arrives (the detail refreshes while the process is open).
    const code = page.getByTestId(`code-${ids.signatory}`);
    await code.waitFor({ timeout: 15_000 });
    const digits = (await code.innerText()).trim();
    assert.match(digits, /^\d{6}$/);
    await shots("signature-detail");

    await customer.getByLabel("Código", { exact: true }).fill(digits);
    await customer.getByRole("button", { name: "Verificar código" }).click();
    await customer.getByLabel(/Leí los documentos/).check();
    await customer.getByRole("button", { name: "Firmar documentos" }).click();
    await customer.waitForURL(`${CALLBACK}**`);
    await customer.close();
  });

  step("the process is COMPLETED with its sealed PDF and an intact chain", async () => {
    await page.reload();
    await page.getByRole("heading", { name: "Contrato de arriendo" }).waitFor();
    await page.getByText("Completado", { exact: true }).first().waitFor();
    const signatory = page.getByTestId(`signatory-${ids.signatory}`);
    await signatory.getByText("Firmado", { exact: true }).waitFor();
    await signatory.getByText(/^Firmó \d/).waitFor();
    const sha = (await page.getByTestId("sealed-sha256").innerText()).trim();
    assert.match(sha, /^[0-9a-f]{64}$/);
    const pages = await page.getByTestId("sealed-pages").innerText();
    const href = await page.getByTestId("download-sealed").getAttribute("href");
    const pdf = await page.request.get(`${server.base}${href}`);
    assert.equal(pdf.status(), 200);
    assert.equal(pdf.headers()["content-type"], "application/pdf");
    const bytes = await pdf.body();
    assert.equal(bytes.subarray(0, 5).toString(), "%PDF-");
    const { createHash } = await import("node:crypto");
    assert.equal(createHash("sha256").update(bytes).digest("hex"), sha);
    // One page uploaded; the signature page and the certificate follow it.
    const count = Number(/Páginas: (\d+)/.exec(pages)?.[1]);
    assert.ok(count >= 2, pages);
    // Its size in the Spanish form, with a decimal comma, to the tenth of a KiB of the file.
    const kib = (bytes.length / 1024).toFixed(1).replace(".", ",");
    assert.match(pages, new RegExp(`Tamaño: ${kib} KiB`), pages);

    await page.getByTestId("verify-signature-chain").click();
    const result = page.getByTestId("signature-chain-result");
    await result.getByText(/^Cadena íntegra \(\d+ registros\), verificada /).waitFor();
    const audit = page.getByTestId("audit-table");
    await audit.getByText("Proceso creado").waitFor();
    await audit.getByText("Comercio · ventas@inmobiliaria.cl").waitFor();
    await audit.getByText("Completado y sellado").waitFor();
    await shots("signature-detail-completed");
  });

  step("Back returns to the list as it was filtered", async () => {
    await page.getByTestId("back-to-list").click();
    await page.waitForURL(/\/signatures\?q=munoz$/);
    assert.equal(await page.getByTestId("signature-search").inputValue(), "munoz");
    await page.getByTestId("signatures-table").getByRole("row").filter({ hasText: ids.process }).getByText("Completado").waitFor();
    assert.match(await page.getByTestId("signatures-table").innerText(), /1\/1/);
  });

  step("the screen reads in English", async () => {
    await page.getByText("EN", { exact: true }).click();
    await page.getByRole("heading", { name: "Signatures" }).waitFor();
    await page.getByText("1 process", { exact: true }).waitFor();
    await page.getByRole("link", { name: ids.process }).click();
    await page.getByText("Activates the mandate").waitFor({ timeout: 500 }).then(
      () => assert.fail("a plain process activates no mandate"),
      () => {},
    );
    await page.getByRole("heading", { name: "Signatories" }).waitFor();
    await page.getByTestId("verify-signature-chain").click();
    await page.getByTestId("signature-chain-result").getByText(/^Chain intact \(\d+ records\), checked /).waitFor();
    await page.getByText("Process created").waitFor();
    await page.getByText("ES", { exact: true }).click();
  });
  step("a viewer reads the process but not the codes", async () => {
    await mandato(server.dataDir, ["staff", "add", "--email", VIEWER.email, "--role", "viewer", "--password-stdin"], VIEWER.password);
    // A second process, its code already asked for on the signing page.
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create"]));
    const call = await merchant(server.base, key.apiKey);
    const created = await call("POST", "/signature", {
      process: { processName: "Anexo de contrato" },
      signatories: [{ userId: "cust-001", order: 1, type: "FES" }],
      documents: [
        {
          documentName: "anexo.pdf",
          contentBase64: onePagePdf("Anexo"),
          signatureData: [{ signatory: { userId: "cust-001" }, mode: "LAST_PAGE" }],
        },
      ],
      urls: { callback: CALLBACK, webhook: "https://merchant.example/hooks/signature" },
    });
    const url = created.signatories[0].signingUrl;
    await fetch(url);
    const sent = await fetch(`${url}/codigo`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ rut: RUT }).toString(),
      redirect: "manual",
    });
    assert.equal(sent.status, 303);

    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL" });
    const viewer = await context.newPage();
    viewer.setDefaultTimeout(10_000);
    await viewer.goto(`${server.base}/signatures/${created.process.internalId}`);
    await viewer.getByLabel(/^Correo electrónico/).fill(VIEWER.email);
    await viewer.getByLabel(/^Contraseña/).fill(VIEWER.password);
    await viewer.getByRole("button", { name: "Entrar" }).click();
    await viewer.getByRole("heading", { name: "Anexo de contrato" }).waitFor();
    await viewer.getByTestId("codes-hidden").getByText("Su rol (Lector) no permite ver los códigos de verificación.").waitFor();
    assert.equal(await viewer.getByTestId(`code-${created.signatories[0].internalId}`).count(), 0);
    await viewer.getByTestId("verify-signature-chain").click();
    await viewer.getByTestId("signature-chain-result").getByText(/^Cadena íntegra/).waitFor();
    await context.close();
  });
});
