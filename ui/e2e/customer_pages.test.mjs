// Browser test of the customer's pages on a phone, against a real `mandato serve`
// (target/debug/mandato, or MANDATO_BIN) in Debian's Chromium: a charge rejected because the
// card expired is explained in plain words, the customer registers another card on the Magic
// Link, pays the rejected installment in the portal and opens its printable receipt.
// Screenshots at 390 px (and 1440 px) go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, businessDate, merchantApi } from "./harness.mjs";

const COMMERCE = { code: "76123456-0", name: "Gimnasio Los Andes", password: "clave-secreta-1" };

let server;
let browser;
let page;
let link = "";
let call;

/** The page at 390 and 1440 px wide, as `<name>-390.png` and `-1440.png`. */
async function shots(name) {
  for (const width of [390, 1440]) {
    await page.setViewportSize({ width, height: 844 });
    await page.waitForTimeout(150);
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 390, height: 844 });
}

const merchant = (base, apiKey) =>
  merchantApi(base, { commerce: COMMERCE.code, password: COMMERCE.password, apiKey });

let failed = false;
function step(name, fn) {
  test(name, async (t) => {
    if (failed) return t.skip("an earlier step failed");
    try {
      await fn(t);
    } catch (e) {
      failed = true;
      await page?.screenshot({ path: join(SHOTS, "customer-pages-failure.png"), fullPage: true }).catch(() => {});
      throw e;
    }
  });
}

describe("The customer's pages on a phone", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // The first installment is due today and charged by the sandbox's run, whatever day today is.
    server = await startServer({ businessDays: "every-day" });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: "es-CL", isMobile: true });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  step("a charge rejected for an expired card is explained in plain words", async () => {
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE.code, "--name", COMMERCE.name, "--password-stdin"], COMMERCE.password);
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create"]));
    call = await merchant(server.base, key.apiKey);
    await call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: "12.345.678-5" },
        personalInformation: { firstName: "Ana", lastName: "Pérez" },
        contacts: { email: "ana@example.cl" },
      },
    });
    const created = await call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: { id: "PLAN-1", type: "DYNAMIC", name: "Plan mensual", detail: "Gimnasio", charges: { currencyId: "CLP" } },
      paymentMethods: [3, 4],
      installments: [
        { id: "c1", amount: 29990, currencyId: "CLP", installmentDueDate: businessDate(0) },
        { id: "c2", amount: 29990, currencyId: "CLP", installmentDueDate: businessDate(30) },
      ],
    });
    link = created.mandate.magicLink;
    const id = created.mandate.internalId;
    await call("POST", `/sandbox/mandates/${id}/activate`, {
      paymentMethodId: 3,
      card: { number: "4000000000000069", expiry: "12/35", cvv: "123" },
    });
    const run = await call("POST", "/sandbox/charging/run");
    assert.equal(run.rejected, 1, JSON.stringify(run));

    await page.goto(link);
    await page.getByRole("heading", { name: "Un cobro fue rechazado" }).waitFor();
    await page.getByText("La tarjeta registrada está vencida").waitFor();
    await shots("customer-rejected");
  });

  step("the customer registers another card for the next charges", async () => {
    await page.locator("#t-number").fill("4242 4242 4242 4242");
    await page.locator("#t-expiry").fill("11/34");
    await page.locator("#t-cvv").fill("123");
    await page.locator("#t-accept").check();
    await page.getByRole("button", { name: "Guardar la nueva tarjeta" }).click();
    await page.getByRole("heading", { name: "Tarjeta actualizada" }).waitFor();
    await page.getByRole("status").getByText("se volverá a cobrar en el próximo proceso de cobro").first().waitFor();
    await shots("customer-card-updated");
    const found = await call("GET", "/mandate/id/PLAN-1");
    assert.match(found.paymentMethod.instrument, /4242$/);
  });

  step("paying the rejected installment gives a printable receipt", async () => {
    const form = page.locator("details.card").filter({ hasText: "Cuota c1" });
    await form.locator("summary").click();
    await form.getByLabel("Número de tarjeta").fill("4242 4242 4242 4242");
    await form.getByLabel("Vencimiento (MM/AA)").fill("11/34");
    await form.getByLabel("Código de seguridad (CVV)").fill("123");
    await form.getByRole("button", { name: /^Pagar ahora/ }).click();
    await page.getByRole("heading", { name: "Pago aprobado" }).waitFor();
    await page.getByRole("link", { name: "Ver e imprimir el comprobante" }).click();
    await page.getByRole("heading", { name: "Comprobante de pago" }).waitFor();
    await page.getByText("$29.990").first().waitFor();
    await page.getByText(/hora de America\/Santiago/).waitFor();
    await shots("customer-receipt");
    await page.emulateMedia({ media: "print" });
    assert.equal(await page.locator("footer").isVisible(), false, "the footer is not printed");
    await page.emulateMedia({ media: "screen" });
  });
});
