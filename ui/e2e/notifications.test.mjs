// Browser test of the Notifications screen against a real `mandato serve` (target/debug/mandato,
// or MANDATO_BIN) in Debian's Chromium: each event names the merchant's mandate id, the customer
// and the state it announces, says in words how its delivery goes (retrying, with the next
// attempt's time), fits a 1280 px window, and its detail shows the headers sent and checks a
// pasted secret against both signatures.
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
let secret;

const merchant = (base, password, apiKey) => merchantApi(base, { commerce: COMMERCE, password, apiKey });

const today = () => new Intl.DateTimeFormat("en-CA", { timeZone: "America/Santiago" }).format(new Date());

describe("the Notifications screen", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // The retry of a soft decline below is due the next day, whatever day that is.
    server = await startServer({ businessDays: "every-day" });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL" });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));

    const added = JSON.parse(
      await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE, "--name", "Gimnasio Los Andes"]),
    );
    secret = added.webhookSecret;
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create", "--commerce", COMMERCE]));
    const call = await merchant(server.base, added.password, key.apiKey);
    await call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: "12.345.678-5" },
        personalInformation: { firstName: "Ana", lastName: "Pérez", secondLastName: "Soto" },
        contacts: { email: "ana@example.cl", phone: "+56912345678" },
      },
    });
    // The merchant's receiver cannot be reached from here: every delivery is retried.
    await call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: { id: "GYM-NOTIF-1", type: "DYNAMIC", name: "Cuenta corriente", charges: { currencyId: "CLP", maxAmount: 100000 } },
      installments: [{ id: "c1", amount: 15000, currencyId: "CLP", installmentDueDate: today() }],
      urls: {
        activationWebhook: "https://receptor.invalid/hooks/activation",
        paymentWebhook: "https://receptor.invalid/hooks/payment",
      },
    });
    await call("PUT", "/installments/status/change", {
      product: { id: "GYM-NOTIF-1" },
      installments: { ids: ["c1"] },
      action: "PAYMENT",
      payment: { date: today(), amount: 15000, currencyId: "CLP", method: "TRANSFER" },
    });

    // A card with no funds: rejected today (soft), retried tomorrow. The retry's IN_PROCESS event
    // still carries the previous rejection in its body.
    const declined = await call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: { id: "GYM-NOTIF-2", type: "DYNAMIC", name: "Plan sin fondos", charges: { currencyId: "CLP", maxAmount: 100000 } },
      installments: [{ id: "s1", amount: 9990, currencyId: "CLP", installmentDueDate: today() }],
    });
    await call("POST", `/sandbox/mandates/${declined.mandate.internalId}/activate`, {
      paymentMethodId: 3,
      card: { number: "4000000000000002", expiry: "12/35", cvv: "123" },
    });
    await call("POST", "/sandbox/charging/run", {});
    await call("POST", "/sandbox/clock", { advanceDays: 1 });

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

  test("a row names the mandate, the customer, the state and the retry in words", async () => {
    await page.goto(`${server.base}/notifications`);
    const row = page.locator("[data-event]").filter({ hasText: "GYM-NOTIF-1" });
    await row.waitFor();
    await row.getByText("Ana Pérez Soto").waitFor();
    await row.getByText("Pagada").waitFor();
    await row.getByText("Reintentando").waitFor();
    assert.match(await row.getByTestId("next-attempt").innerText(), /^próximo \d{2}-\d{2}-\d{4} \d{2}:\d{2}/);
    await row.getByText("Sin respuesta").waitFor();
    await page.screenshot({ path: join(SHOTS, "notifications-1440.png"), fullPage: true });

    // At 1280 px every column, the creation date last, is inside the window, on one line.
    await page.setViewportSize({ width: 1280, height: 900 });
    const created = page.getByRole("columnheader", { name: "Creado" });
    const box = await created.boundingBox();
    assert.ok(box && box.x + box.width <= 1280, `the Created column ends at ${box && box.x + box.width}`);
    const scroll = await page.getByTestId("events-table").evaluate((t) => {
      const container = t.parentElement;
      return { scroll: container.scrollWidth, client: container.clientWidth };
    });
    assert.ok(scroll.scroll <= scroll.client, `no horizontal scroll at 1280 px: ${JSON.stringify(scroll)}`);

    await page.setViewportSize({ width: 390, height: 844 });
    await row.waitFor();
    await page.screenshot({ path: join(SHOTS, "notifications-390.png"), fullPage: true });
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  test("the detail shows the headers sent and checks a pasted secret", async () => {
    await page.goto(`${server.base}/notifications`);
    const row = page.locator("[data-event]").filter({ hasText: "GYM-NOTIF-1" });
    await row.getByRole("button", { name: /^evt_/ }).click();
    const detail = page.getByTestId("event-detail");
    await detail.waitFor();
    const headers = detail.getByTestId("sent-headers");
    await headers.getByText(/webhook-signature: v1,/).first().waitFor();
    await headers.getByText(/webhook-timestamp: \d+/).first().waitFor();
    assert.ok(!(await detail.innerText()).includes(secret), "the secret is never shown");

    const tool = detail.getByTestId("verify-tool");
    await tool.getByTestId("verify-secret").fill("no es un secreto");
    await tool.getByRole("button", { name: "Verificar" }).click();
    await tool.getByText("Debe ser whsec_ seguido de base64").waitFor();

    await tool.getByTestId("verify-secret").fill(secret);
    await tool.getByRole("button", { name: "Verificar" }).click();
    const result = tool.getByTestId("verify-result");
    await result.getByText("Campo signature del cuerpo").waitFor();
    assert.equal(await result.locator("[data-valid=false]").count(), 0);
    assert.ok((await result.locator("[data-valid=true]").count()) >= 2, "the body and at least one header");
    await page.screenshot({ path: join(SHOTS, "notifications-detail-1440.png"), fullPage: true });

    await tool.getByTestId("verify-secret").fill(`whsec_${Buffer.alloc(32, 7).toString("base64")}`);
    await tool.getByRole("button", { name: "Verificar" }).click();
    await result.locator("[data-valid=false]").first().waitFor();
    assert.equal(await result.locator("[data-valid=true]").count(), 0);
    await result.getByText("No válida").first().waitFor();

    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(SHOTS, "notifications-detail-390.png"), fullPage: true });
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  test("the detail counts the attempts it lists, a redelivery included, and says in words why they failed", async () => {
    await page.goto(`${server.base}/notifications`);
    const row = page.locator("[data-event]").filter({ hasText: "GYM-NOTIF-1" });
    await row.getByRole("button", { name: /^evt_/ }).click();
    const detail = page.getByTestId("event-detail");
    const attempts = detail.getByTestId("attempts").locator("tbody tr");
    await attempts.first().waitFor();
    const before = await attempts.count();
    await detail.getByTestId("redeliver-one").click();
    for (let i = 0; i < 50 && (await attempts.count()) === before; i++) await page.waitForTimeout(200);
    const listed = await attempts.count();
    assert.ok(listed > before, "the redelivery is listed");
    assert.equal(await detail.getByText(/\d+ intento\(s\)/).innerText(), `${listed} intento(s)`);
    // The receiver's name does not resolve: said in words, the technical text one click away.
    const problem = detail.getByTestId("delivery-problem").first();
    await problem.getByText("No se encontró la dirección del receptor (DNS)").waitFor();
    await problem.getByText("Detalle técnico").click();
    assert.match(await problem.getByTestId("delivery-raw").innerText(), /receptor\.invalid/);
    // On a phone the event's facts do not run into each other.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    const facts = await detail.getByTestId("event-facts").locator(":scope > div").evaluateAll((all) =>
      // The extent of the text itself (a Range), which may run past its paragraph's box.
      all.map((div) => [...div.querySelectorAll("p")].map((p) => {
        const range = document.createRange();
        range.selectNodeContents(p);
        return range.getBoundingClientRect();
      })).map((rects) => ({
        left: Math.min(...rects.map((r) => r.left)),
        right: Math.max(...rects.map((r) => r.right)),
        top: Math.min(...rects.map((r) => r.top)),
        bottom: Math.max(...rects.map((r) => r.bottom)),
      })),
    );
    for (let i = 0; i < facts.length; i++) {
      for (let j = i + 1; j < facts.length; j++) {
        const [a, b] = [facts[i], facts[j]];
        const apart = a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
        assert.ok(apart, `facts ${i} and ${j} overlap: ${JSON.stringify([a, b])}`);
      }
    }
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.keyboard.press("Escape");
  });

  test("an event of a retry in process shows no rejection; the rejected one does", async () => {
    await page.goto(`${server.base}/notifications`);
    const rows = page.locator("[data-event]").filter({ hasText: "GYM-NOTIF-2" });
    await rows.first().waitFor();
    const inProcess = rows.filter({ hasText: "En proceso" });
    const rejected = rows.filter({ hasText: "Rechazada" });
    assert.ok((await inProcess.count()) >= 1, "the retry's IN_PROCESS event is listed");
    assert.ok((await rejected.count()) >= 1, "the REJECTED event is listed");
    for (let i = 0; i < (await inProcess.count()); i++) {
      assert.equal(await inProcess.nth(i).getByTestId("event-rejection").count(), 0, "no rejection reason while in process");
    }
    await rejected.first().getByTestId("event-rejection").getByText(/Fondos insuficientes/).waitFor();
  });

  test("the mandate filter takes the merchant's mandate id as well as ours", async () => {
    await page.goto(`${server.base}/notifications`);
    await page.locator("[data-event]").filter({ hasText: "GYM-NOTIF-1" }).first().waitFor();
    await page.getByTestId("filter-mandate").fill("GYM-NOTIF-2");
    const rows = page.locator("[data-event]");
    for (let i = 0; i < 50 && (await rows.filter({ hasText: "GYM-NOTIF-1" }).count()) > 0; i++) await page.waitForTimeout(100);
    assert.equal(await rows.filter({ hasText: "GYM-NOTIF-1" }).count(), 0, "only the mandate asked for");
    assert.ok((await rows.filter({ hasText: "GYM-NOTIF-2" }).count()) >= 2, "its events are listed");
    assert.equal(await rows.count(), await rows.filter({ hasText: "GYM-NOTIF-2" }).count());
  });
});
