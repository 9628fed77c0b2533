// Browser test of two parts of the staff's working day against a real `mandato serve`
// (target/debug/mandato, or MANDATO_BIN) in Debian's Chromium: a payment marked paid by hand
// with its evidence file (refused when its bytes are no PDF, PNG or JPEG, whatever its name;
// then shown on the installment with its name, kind and size, and read back as uploaded), and
// the header's search box finding a customer by name or RUT, a mandate, an installment and a
// notification by their ids, by keyboard alone at 1440 px and in its dialog at 390 px.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, businessDate, merchantApi } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = "76123456-0";

let server;
let browser;
let page;
let mandateId;

const row = (id) => page.locator(`[data-installment="${id}"]`);
/** A small PDF: what the server reads is its first bytes. */
const PDF = Buffer.from("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n");

/** The page's width beyond the window's, in pixels (0 when nothing scrolls sideways). */
const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

describe("the evidence file of a manual payment and the global search", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer({ businessDays: "every-day" });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL" });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));

    const added = JSON.parse(
      await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE, "--name", "Gimnasio Los Andes"]),
    );
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create", "--commerce", COMMERCE]));
    const call = await merchantApi(server.base, { commerce: COMMERCE, password: added.password, apiKey: key.apiKey });
    for (const [userId, rut, firstName, lastName] of [
      ["cli-norte", "11.111.111-1", "José", "Muñoz"],
      ["cli-sur", "12.345.678-5", "Beatriz", "Rojas"],
    ]) {
      await call("POST", "/user", {
        customer: {
          userId,
          identificationDocument: { type: "RUT", number: rut },
          personalInformation: { firstName, lastName, secondLastName: "Soto" },
          contacts: { email: `${userId}@example.cl`, phone: "+56912345678" },
        },
      });
    }
    const created = await call("POST", "/mandate", {
      customer: { userId: "cli-norte" },
      mandate: { id: "NORTE-77", type: "DYNAMIC", name: "Cuenta corriente", charges: { currencyId: "CLP", maxAmount: 100000 } },
      installments: [
        { id: "cuota-n1", amount: 10000, currencyId: "CLP", installmentDueDate: businessDate(5) },
        { id: "cuota-n2", amount: 20000, currencyId: "CLP", installmentDueDate: businessDate(35) },
      ],
    });
    mandateId = created.mandate.internalId;
    await call("POST", `/sandbox/mandates/${mandateId}/activate`, {
      paymentMethodId: 6,
      bankAccount: { bankCode: "012", accountType: "CHECKING", accountNumber: "123450000", holderRut: "11.111.111-1" },
    });

    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("a payment marked paid keeps its evidence file, refused when its bytes are no PDF, PNG or JPEG", async () => {
    await page.goto(`${server.base}/mandates/${mandateId}`);
    await page.getByRole("heading", { name: "Cuenta corriente", level: 1 }).waitFor();
    await row("cuota-n1").getByTestId("mark-paid").click();
    const dialog = page.getByRole("dialog");
    await dialog.getByTestId("pay-date").waitFor();
    const fileInput = dialog.locator('input[type="file"]');

    // A script named as a PDF: the browser believes the name, the server reads the bytes.
    await fileInput.setInputFiles({ name: "comprobante.pdf", mimeType: "application/pdf", buffer: Buffer.from("<script>alert(1)</script>") });
    await dialog.getByTestId("pay-submit").click();
    await dialog.getByText("El archivo debe ser un PDF, PNG o JPEG").waitFor();
    assert.equal(await row("cuota-n1").getByTestId("mark-paid").count(), 1, "nothing was paid");

    // Over 5 MiB: said before anything is sent.
    await fileInput.setInputFiles({ name: "grande.png", mimeType: "image/png", buffer: Buffer.alloc(5 * 1024 * 1024 + 1, 1) });
    await dialog.getByText("El archivo pesa más de 5 MiB").waitFor();

    await fileInput.setInputFiles({ name: "comprobante transferencia.pdf", mimeType: "application/pdf", buffer: PDF });
    assert.equal(await dialog.getByText("El archivo pesa más de 5 MiB").count(), 0);
    await page.screenshot({ path: join(SHOTS, "mark-paid-evidence-1440.png"), fullPage: true });
    await dialog.getByTestId("pay-submit").click();
    await dialog.waitFor({ state: "detached" });

    await row("cuota-n1").getByTestId("installment-history-toggle").click();
    const file = page.getByTestId("manual-payment-file");
    const link = file.getByTestId("manual-payment-file-link");
    assert.equal((await link.innerText()).trim(), "comprobante transferencia.pdf");
    const meta = await file.getByTestId("manual-payment-file-meta").innerText();
    assert.match(meta, new RegExp(`^PDF · ${PDF.length} B · ${OWNER.email} · `), meta);
    const href = await link.getAttribute("href");
    assert.match(href ?? "", /^\/admin\/api\/payment-evidence\/pef_/);
    assert.equal(await link.getAttribute("target"), "_blank");

    // Read back as uploaded, with the staff session.
    const response = await page.request.get(`${server.base}${href}`);
    assert.equal(response.status(), 200);
    assert.equal(response.headers()["content-type"], "application/pdf");
    assert.deepEqual(Buffer.from(await response.body()), PDF);
    await page.screenshot({ path: join(SHOTS, "payment-evidence-1440.png"), fullPage: true });
  });

  test("the header's search finds by name, RUT and ids, grouped by kind, by keyboard alone", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${server.base}/mandates`);
    await page.locator("h1").first().waitFor();
    const box = page.getByRole("combobox", { name: "Buscar clientes, mandatos, cuotas y notificaciones" });
    const list = page.getByRole("listbox", { name: "Resultados de la búsqueda" });

    // A name without its accents: the customer and the customer's mandate, each in its group.
    await box.fill("munoz");
    await list.getByRole("group", { name: "Clientes" }).getByRole("option", { name: /José Muñoz Soto/ }).waitFor();
    await list.getByRole("group", { name: "Mandatos" }).getByRole("option", { name: /NORTE-77/ }).waitFor();
    assert.equal(await box.getAttribute("aria-expanded"), "true");
    await page.screenshot({ path: join(SHOTS, "global-search-1440.png"), fullPage: false });
    await box.press("ArrowDown");
    const active = await box.getAttribute("aria-activedescendant");
    assert.ok(active, "an option is active");
    assert.equal(await page.locator(`[id="${active}"]`).getAttribute("aria-selected"), "true");
    await box.press("Enter");
    await page.getByRole("heading", { name: /José Muñoz/, level: 1 }).waitFor();
    assert.match(page.url(), /\/customers\/usr_/);

    // A RUT without dots and dash.
    await box.fill("123456785");
    await list.getByRole("option", { name: /Beatriz Rojas/ }).waitFor();
    await box.press("Escape");
    assert.equal(await box.getAttribute("aria-expanded"), "false");
    await box.press("ArrowDown");
    await box.press("Enter");
    await page.getByRole("heading", { name: /Beatriz Rojas/, level: 1 }).waitFor();

    // An installment by the merchant's id: its mandate, the installment opened.
    await box.fill("cuota-n2");
    await list.getByRole("group", { name: "Cuotas" }).getByRole("option", { name: /cuota-n2/ }).waitFor();
    await box.press("Enter");
    await page.getByRole("heading", { name: "Cuenta corriente", level: 1 }).waitFor();
    assert.match(page.url(), /\?installment=ins_/);
    assert.equal(await row("cuota-n2").getByTestId("installment-history-toggle").getAttribute("aria-expanded"), "true");

    // A notification by its id.
    const eventId = await page.evaluate(async (id) => {
      const r = await fetch(`/admin/api/mandates/${id}`);
      return (await r.json()).payload.events[0].eventId;
    }, mandateId);
    await box.fill(eventId);
    await list.getByRole("group", { name: "Notificaciones" }).getByRole("option", { name: new RegExp(eventId) }).waitFor();
    await box.press("Enter");
    await page.waitForURL(/\/notifications\?event=evt_/);
    await page.getByTestId("event-detail").waitFor();

    // Nothing found says so.
    await box.fill("zzz-nadie");
    await page.getByTestId("global-search-status").getByText("Sin resultados para «zzz-nadie»").waitFor();
    await box.press("Escape");
  });

  test("at 390 px the search opens in its own dialog and the page never scrolls sideways", async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(`${server.base}/customers`);
    await page.locator("h1").first().waitFor();
    assert.equal(await overflow(), 0, "the header fits");
    await page.getByRole("button", { name: "Buscar" }).click();
    const dialog = page.getByRole("dialog", { name: "Buscar" });
    const box = dialog.getByRole("combobox");
    await box.waitFor();
    await page.waitForFunction(() => document.activeElement?.getAttribute("role") === "combobox");
    await box.fill("NORTE-77");
    await dialog.getByRole("option", { name: /NORTE-77/ }).waitFor();
    assert.equal(await overflow(), 0, "the results fit");
    await page.screenshot({ path: join(SHOTS, "global-search-390.png"), fullPage: false });
    await dialog.getByRole("option", { name: /NORTE-77/ }).click();
    await page.getByRole("heading", { name: "Cuenta corriente", level: 1 }).waitFor();
    assert.equal(await page.getByRole("dialog").count(), 0);
  });
});
