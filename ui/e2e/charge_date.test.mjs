// Browser test of the charge date where customers and staff look, against a real
// `mandato serve` (target/debug/mandato, or MANDATO_BIN) with its default Chilean calendar, in
// Debian's Chromium: an installment due on a Saturday is shown on the Magic Link with the
// Monday it is charged on, and the dashboard's next charges name that Monday too.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, merchantApi } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = "76123456-0";

let server;
let browser;
let page;

const merchant = (base, password, apiKey) => merchantApi(base, { commerce: COMMERCE, password, apiKey });

/** `YYYY-MM-DD` of a UTC-noon date. */
const iso = (d) => d.toISOString().slice(0, 10);
const plusDays = (d, n) => new Date(d.getTime() + n * 86_400_000);
/** `DD-MM-YYYY`, as the Spanish pages write dates. */
const spanishDate = (text) => text.split("-").reverse().join("-");

/** A Saturday at least three days ahead whose Friday and Monday are business days. */
async function saturdayAhead() {
  const today = new Intl.DateTimeFormat("en-CA", { timeZone: "America/Santiago" }).format(new Date());
  const start = new Date(`${today}T12:00:00Z`);
  const holidays = new Set();
  for (const year of [start.getUTCFullYear(), start.getUTCFullYear() + 1]) {
    const listed = JSON.parse(await mandato(server.dataDir, ["--json", "holidays", "list", "--year", String(year)]));
    for (const h of listed.holidays) holidays.add(h.date);
  }
  for (let n = 3; n < 60; n++) {
    const day = plusDays(start, n);
    if (day.getUTCDay() === 6 && !holidays.has(iso(plusDays(day, -1))) && !holidays.has(iso(plusDays(day, 2)))) {
      return day;
    }
  }
  throw new Error("no Saturday with business days around it in 60 days");
}

describe("the charge date on the Magic Link and the dashboard", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, locale: "es-CL" });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("a Saturday installment shows the Monday it is charged on", async () => {
    const added = JSON.parse(
      await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE, "--name", "Gimnasio Los Andes"]),
    );
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create", "--commerce", COMMERCE]));
    const call = await merchant(server.base, added.password, key.apiKey);
    await call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: "12.345.678-5" },
        personalInformation: { firstName: "Ana", lastName: "Pérez" },
        contacts: { email: "ana@example.cl", phone: "+56912345678" },
      },
    });
    const saturday = await saturdayAhead();
    const [due, monday] = [iso(saturday), iso(plusDays(saturday, 2))];
    const created = await call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: { id: "CTA-001", type: "DYNAMIC", name: "Cuenta corriente", charges: { currencyId: "CLP", maxAmount: 100000 } },
      installments: [{ id: "a", amount: 15000, currencyId: "CLP", installmentDueDate: due }],
    });

    // The customer's page: the due date, and the Monday it is charged on.
    await page.goto(created.mandate.magicLink);
    await page.getByText(`${spanishDate(due)} (se cobra el lunes ${spanishDate(monday)})`).waitFor();
    await page.screenshot({ path: join(SHOTS, "link-charge-date.png"), fullPage: true });

    await call("POST", `/sandbox/mandates/${created.mandate.internalId}/activate`, {
      paymentMethodId: 3,
      card: { number: "4111111111111111", expiry: "12/35", cvv: "123" },
    });

    // The staff dashboard: the next charge, due on the Saturday, charged on the Monday.
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();
    const row = page.getByRole("row").filter({ hasText: "CTA-001" }).filter({ hasText: spanishDate(due) });
    await row.waitFor();
    assert.equal((await row.getByTestId("charge-date").innerText()).trim(), `Se cobra ${spanishDate(monday)}`);
    await page.screenshot({ path: join(SHOTS, "dashboard-charge-date.png"), fullPage: true });
  });
});
