// Browser test of the staff's working day against a real `mandato serve` (target/debug/mandato,
// or MANDATO_BIN) in Debian's Chromium: after a charging run with a paid, a soft-declined and a
// hard-declined installment, the run's own page lists what it charged and how each ended; the
// past-due list ("Morosidad", from the navigation and the dashboard) shows the declined
// mandates with the reason in words, the next retry or that none remains, the amount owed and
// the customer's RUT with dots; and the customer's page lists their payment history. Screenshots
// at 1440 and 390 px go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, assertTableScrollsInside, businessDate, merchantApi } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = { code: "76123456-0", name: "Gimnasio Los Andes", password: "clave-secreta-1" };
const CARDS = { paid: "4111111111111111", soft: "4000000000000002", hard: "4000000000000069" };

let server;
let browser;
let page;
const ids = {};

/** dd-mm-aaaa of a `YYYY-MM-DD`. */
const dmy = (iso) => iso.split("-").reverse().join("-");

async function shots(name) {
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(150);
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

let failed = false;
function step(name, fn) {
  test(name, async (t) => {
    if (failed) return t.skip("an earlier step failed");
    try {
      await fn(t);
    } catch (e) {
      failed = true;
      await page?.screenshot({ path: join(SHOTS, "past-due-failure.png"), fullPage: true }).catch(() => {});
      throw e;
    }
  });
}

describe("The staff's working day: past due, a run, a customer's payments", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // Every installment is due today and charged by the run, whatever day today is.
    server = await startServer({ businessDays: "every-day" });
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE.code, "--name", COMMERCE.name, "--password-stdin"], COMMERCE.password);
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create"]));
    const call = await merchantApi(server.base, { commerce: COMMERCE.code, password: COMMERCE.password, apiKey: key.apiKey });
    await call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: "12.345.678-5" },
        personalInformation: { firstName: "Ana", lastName: "Pérez" },
        contacts: { email: "ana@example.cl" },
      },
    });
    for (const [id, amount, card] of [
      ["PLAN-OK", 9000, CARDS.paid],
      ["PLAN-SOFT", 15000, CARDS.soft],
      ["PLAN-HARD", 3000, CARDS.hard],
    ]) {
      const created = await call("POST", "/mandate", {
        customer: { userId: "cust-001" },
        mandate: { id, type: "DYNAMIC", name: `Plan ${id}`, charges: { currencyId: "CLP" } },
        paymentMethods: [3],
        installments: [{ id: "c1", amount, currencyId: "CLP", installmentDueDate: businessDate(0) }],
      });
      ids[id] = created.mandate.internalId;
      await call("POST", `/sandbox/mandates/${ids[id]}/activate`, { paymentMethodId: 3, card: { number: card, expiry: "12/35", cvv: "123" } });
    }
    const run = await call("POST", "/sandbox/charging/run");
    assert.equal(run.paid, 1, JSON.stringify(run));
    assert.equal(run.rejected, 2, JSON.stringify(run));

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL" });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel", level: 1 }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  step("the dashboard counts the past-due mandates and leads to them", async () => {
    const card = page.getByTestId("dashboard-past-due");
    await card.getByTestId("past-due-total").getByText("2", { exact: true }).waitFor();
    await card.getByRole("link", { name: "Ver morosidad" }).click();
    await page.getByRole("heading", { name: "Morosidad", level: 1 }).waitFor();
  });

  step("the past-due list gives each mandate's reason, retry, amount and customer", async () => {
    await page.goto(server.base);
    const nav = page.getByRole("navigation", { name: "Navegación principal" });
    await nav.getByRole("link", { name: "Morosidad" }).click();
    await page.getByRole("heading", { name: "Morosidad", level: 1 }).waitFor();
    await page.getByTestId("result-count").getByText("2 mandatos con cuotas rechazadas").waitFor();
    const table = page.getByTestId("past-due-table");
    assert.equal(await table.locator("tbody tr").count(), 2);

    const soft = table.locator(`tr[data-mandate="${ids["PLAN-SOFT"]}"]`);
    assert.equal(await soft.getByTestId("past-due-reason").innerText(), "Fondos insuficientes");
    assert.equal(await soft.getByTestId("past-due-retry").innerText(), dmy(businessDate(1)));
    assert.match(await soft.getByTestId("past-due-amount").innerText(), /\$15\.000/);
    assert.equal(await soft.getByTestId("past-due-rut").innerText(), "12.345.678-5");
    await soft.getByRole("link", { name: "Ana Pérez" }).waitFor();

    const hard = table.locator(`tr[data-mandate="${ids["PLAN-HARD"]}"]`);
    assert.equal(await hard.getByTestId("past-due-reason").innerText(), "Tarjeta vencida");
    assert.equal(await hard.getByTestId("past-due-retry").innerText(), "Rechazo definitivo: sin reintentos");
    assert.match(await hard.getByTestId("past-due-amount").innerText(), /\$3\.000/);
    assert.equal(await table.locator(`tr[data-mandate="${ids["PLAN-OK"]}"]`).count(), 0, "a paid mandate is not past due");
    await shots("past-due-list");

    // On a phone the table scrolls inside its own box.
    await page.setViewportSize({ width: 390, height: 844 });
    await assertTableScrollsInside(page, page.getByRole("region", { name: "Mandatos con cuotas rechazadas" }), "past due");
    await page.setViewportSize({ width: 1440, height: 900 });

    await hard.getByRole("link", { name: "PLAN-HARD" }).click();
    await page.waitForURL(new RegExp(`/mandates/${ids["PLAN-HARD"]}$`));
    await page.goBack();
    await page.getByTestId("past-due-table").waitFor();
  });

  step("a run opens on its own page with what it charged and how each ended", async () => {
    await page.goto(`${server.base}/charging`);
    await page.getByRole("heading", { name: "Cobros", level: 1 }).waitFor();
    await page.getByTestId("runs-table").getByTestId("open-run").first().click();
    await page.waitForURL(/\/charging\/runs\/\d+$/);
    await page.getByRole("heading", { name: `Cobro del ${dmy(businessDate(0))}`, level: 1 }).waitFor();
    const attempts = page.getByTestId("run-attempts");
    await attempts.locator("tbody tr").nth(2).waitFor();
    assert.equal(await attempts.locator("tbody tr").count(), 3);
    const counts = await page.getByTestId("run-counts").innerText();
    assert.match(counts, /Pagados\s*1/);
    assert.match(counts, /Rechazados\s*2/);
    const soft = attempts.locator("tr").filter({ hasText: "PLAN-SOFT" });
    assert.equal(await soft.getByTestId("outcome").textContent(), "Rechazada · Fondos insuficientes");
    assert.match(await soft.innerText(), /\$15\.000/);
    assert.match(await soft.innerText(), new RegExp(dmy(businessDate(1))));
    const paid = attempts.locator("tr").filter({ hasText: "PLAN-OK" });
    assert.equal(await paid.getByTestId("outcome").textContent(), "Pagada");
    await shots("charging-run-detail");

    // Only the rejected ones.
    await page.getByTestId("run-outcome-filter").click();
    await page.getByRole("option", { name: "Rechazada" }).click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="run-attempts"] tbody tr').length === 2);
    await attempts.getByRole("link", { name: "PLAN-HARD" }).click();
    await page.waitForURL(new RegExp(`/mandates/${ids["PLAN-HARD"]}$`));
  });

  step("the customer's page lists every charge of their installments, newest first", async () => {
    await page.goto(`${server.base}/past-due`);
    await page.getByTestId("past-due-table").getByRole("link", { name: "Ana Pérez" }).first().click();
    await page.getByRole("heading", { name: "Ana Pérez", level: 1 }).waitFor();
    await page.getByRole("heading", { name: "Historial de pagos" }).waitFor();
    const table = page.getByTestId("payments-table");
    await table.locator("tbody tr").nth(2).waitFor();
    assert.equal(await table.locator("tbody tr").count(), 3);
    await page.getByTestId("result-count").getByText("3 movimientos").waitFor();
    const hard = table.locator("tr").filter({ hasText: "PLAN-HARD" });
    assert.equal(await hard.getByTestId("outcome").textContent(), "Rechazada · Tarjeta vencida");
    assert.match(await hard.innerText(), /Tarjeta de crédito/);
    assert.match(await hard.innerText(), /\$3\.000/);
    assert.match(await hard.innerText(), new RegExp(dmy(businessDate(0))));
    const ok = table.locator("tr").filter({ hasText: "PLAN-OK" });
    assert.equal(await ok.getByTestId("outcome").textContent(), "Pagada");
    await shots("customer-payments");
    await ok.getByRole("link", { name: "PLAN-OK" }).click();
    await page.waitForURL(new RegExp(`/mandates/${ids["PLAN-OK"]}$`));
  });
});
