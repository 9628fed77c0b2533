// Browser test of the dashboard against a real `mandato serve` (target/debug/mandato, or
// MANDATO_BIN) in Debian's Chromium: the month's money of the chosen commerce in exact CLP, equal to
// the ledger's sum for the month (a card charge and a payment marked paid),
// the chart's title, summary and table, and a failing webhook named by its mandateId and
// customer, linking to the notification; the commerce stays in the URL through Back.
// Screenshots at 1440 and 390 px go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, assertTableScrollsInside, businessDate, merchantApi } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = "76123456-0";

let server;
let browser;
let page;

const merchant = (base, password, apiKey) => merchantApi(base, { commerce: COMMERCE, password, apiKey });


async function shots(name) {
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

let run;
let call;
let today;

describe("the dashboard's money and failing webhooks", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // The installment is due today and charged by the run below, whatever day today is.
    server = await startServer({ businessDays: "every-day" });
    const added = JSON.parse(
      await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE, "--name", "Gimnasio Los Andes"]),
    );
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create", "--commerce", COMMERCE]));
    call = await merchant(server.base, added.password, key.apiKey);
    await call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: "12.345.678-5" },
        personalInformation: { firstName: "José", lastName: "Muñoz" },
        contacts: { email: "jose@example.cl", phone: "+56912345678" },
      },
    });
    today = new Intl.DateTimeFormat("en-CA", { timeZone: "America/Santiago" }).format(new Date());
    // Nothing listens on port 1: every delivery of this mandate's events fails.
    const created = await call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: { id: "CTA-777", type: "DYNAMIC", name: "Cuenta corriente", charges: { currencyId: "CLP", maxAmount: 100000 } },
      installments: [
        { id: "a", amount: 15000, currencyId: "CLP", installmentDueDate: today },
        { id: "b", amount: 9990, currencyId: "CLP", installmentDueDate: businessDate(20) },
      ],
      urls: { activationWebhook: "https://127.0.0.1:1/hook", paymentWebhook: "https://127.0.0.1:1/hook" },
    });
    await call("POST", `/sandbox/mandates/${created.mandate.internalId}/activate`, {
      paymentMethodId: 3,
      card: { number: "4111111111111111", expiry: "12/35", cvv: "123" },
    });
    run = await call("POST", "/sandbox/charging/run");
    // A payment marked paid today enters the ledger, and the month's money, beside the charge.
    await call("PUT", "/installments/status/change", {
      product: { id: "CTA-777" },
      installments: { ids: ["b"] },
      action: "PAYMENT",
      payment: { date: today, amount: 9990, currencyId: "CLP", method: "TRANSFER" },
    });

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
    await page.getByRole("heading", { name: "Panel" }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("the month's money of the chosen commerce, exact, and a chart people and readers can follow", async () => {
    await page.goto(`${server.base}/?commerce=${COMMERCE}`);
    // The last automatic backup, at a glance (the test server takes none).
    await page.getByTestId("dashboard-backup").getByTestId("last-backup").waitFor();
    const totals = page.getByTestId("money-totals");
    await totals.waitFor();
    assert.equal(run.paid, 1, JSON.stringify(run));
    // "Recaudado este mes" is the ledger's money of this month's business dates: the card
    // charge and the payment marked paid.
    const ledger = await call("GET", `/ledger?from=${today.slice(0, 8)}01&limit=500`);
    const sum = ledger.items.filter((e) => e.kind !== "ANNULMENT" && e.currencyId === "CLP").reduce((total, e) => total + e.amount, 0);
    assert.equal(sum, 24990, JSON.stringify(ledger.items));
    const shown = `$${sum.toLocaleString("es-CL")}`;
    await totals.locator('[data-total="collected"]').getByText(shown, { exact: true }).waitFor();
    await totals.locator('[data-total="rejected"]').getByText("$0", { exact: true }).waitFor();
    const chart = page.getByTestId("amounts-chart");
    assert.equal(await chart.getAttribute("role"), "img");
    assert.match(await chart.locator("desc").textContent(), /Total del período en CLP: recaudado/);
    assert.equal(await page.getByTestId("chart-tick").count(), 3);
    await page.getByText("Ver los montos como tabla").click();
    assert.equal(await page.getByTestId("chart-table").locator("tbody tr").count(), 30);
  });

  test("a failing webhook names its mandate and customer and opens the notification", async () => {
    const row = page.getByTestId("failing-event").filter({ hasText: "CTA-777" }).first();
    // The delivery worker's first attempts fail within seconds; the dashboard refreshes.
    for (let i = 0; i < 20 && !(await row.isVisible()); i++) {
      await page.waitForTimeout(1000);
      await page.reload();
    }
    await row.getByText("José Muñoz").waitFor();
    // Why it fails, in words; the technical text only on request.
    await row.getByTestId("delivery-problem").getByText("No se pudo conectar con el receptor").waitFor();
    assert.equal(await row.getByTestId("delivery-raw").isVisible(), false);
    assert.ok(!(await row.innerText()).includes("error sending request"), "no raw error in sight");
    await shots("dashboard");
    // On a phone the table scrolls in its own box, the event's name fixed at the left.
    await page.setViewportSize({ width: 390, height: 900 });
    await assertTableScrollsInside(page, page.getByRole("region", { name: "Webhooks con fallas" }), "failing webhooks");
    // The chart's axis keeps a readable size on a phone, and its day labels do not overlap.
    const chart = page.getByTestId("amounts-chart");
    const tickHeights = await chart.locator("[data-testid=chart-tick] text").evaluateAll((texts) => texts.map((t) => t.getBoundingClientRect().height));
    assert.ok(tickHeights.every((h) => h >= 10), `axis labels ${tickHeights.join(", ")}px high`);
    const days = await chart.locator("text.chart-day").evaluateAll((texts) => texts.map((t) => t.getBoundingClientRect()).map((r) => [r.left, r.right]));
    assert.ok(days.length >= 2, `${days.length} day labels`);
    for (let i = 1; i < days.length; i++) assert.ok(days[i][0] > days[i - 1][1], `day labels ${i - 1} and ${i} overlap`);
    await page.setViewportSize({ width: 1440, height: 900 });
    await row.getByRole("link").first().click();
    await page.waitForURL(/\/notifications\?event=evt_/);
    await page.goBack();
    await page.waitForURL(new RegExp(`commerce=${COMMERCE}`));
    await page.getByTestId("money-totals").waitFor();
  });
});
