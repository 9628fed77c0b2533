// Browser tests of Mandato Desk against a real `mandato serve` (target/debug/mandato, or
// MANDATO_BIN) on a free loopback port with a fresh data directory, driven in Debian's
// Chromium through playwright-core (never a downloaded browser). One staff member's day:
// first-start setup, a commerce and an API key, merchant API traffic, finding the customer
// and the mandate, marking an installment paid, its webhook in Notifications (delivered to a
// local HTTPS receiver and verified with the secret the UI showed), cancelling a mandate, the
// ledger with a payout report reconciled, and a viewer who cannot change anything. Screenshots
// of each screen go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { createHmac, randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { freePort, mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, SHOTS, assertTableScrollsInside, businessDate } from "./harness.mjs";

const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const VIEWER = { email: "lector@gimnasio.cl", password: "otra clave larga 456" };
const COMMERCE = { code: "76.123.456-0", normalized: "76123456-0", name: "Gimnasio Los Andes", password: "clave-secreta-1" };

let server;
let browser;
let page;
let receiver;
const received = [];
// What the UI showed once, kept for the merchant's side of the test.
const shown = { webhookSecret: "", apiKey: "" };
const ids = { subscription: "", dynamic: "", customer: "" };

async function shot(name) {
  await page.waitForTimeout(150);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** The merchant API, with the eight common headers and the session token once there is one. */
function merchant(base) {
  let token = null;
  const call = async (method, path, body) => {
    const headers = {
      "content-type": "application/json",
      country: "CL",
      commerce: COMMERCE.normalized,
      channel: "WEB",
      requestDateTime: new Date().toISOString(),
      correlationId: randomUUID(),
      processId: "HYBRID",
      salesExecutiveId: "SE-01",
      "x-api-key": shown.apiKey,
    };
    if (token) headers.authorization = `Bearer ${token}`;
    const r = await fetch(`${base}/api/v1${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const json = await r.json();
    assert.ok(r.ok, `${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
    return json.payload;
  };
  return {
    call,
    async login() {
      const key = await (await fetch(`${base}/api/v1/.well-known/jwe-public-key`)).json();
      const { token: jwe } = await call("POST", "/jwe/encrypt", { password: COMMERCE.password, publicKey: key.payload.publicKey });
      token = (await call("POST", "/login", { username: COMMERCE.normalized, password: jwe })).token;
    },
  };
}

async function waitFor(check, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// The steps build on each other: after a failure the rest are skipped, not left to time out.
let failed = false;
function step(name, fn) {
  test(name, async (t) => {
    if (failed) return t.skip("an earlier step failed");
    try {
      await fn(t);
    } catch (e) {
      failed = true;
      await page?.screenshot({ path: join(SHOTS, "failure.png"), fullPage: true }).catch(() => {});
      throw e;
    }
  });
}

describe("Mandato Desk in a browser", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    rmSync(join(SHOTS, "failure.png"), { force: true });
    server = await startServer();
    // A local HTTPS receiver with a certificate from the installation's development CA,
    // which the webhook worker trusts.
    const out = mkdtempSync(join(tmpdir(), "mandato-cert-"));
    const files = JSON.parse(await mandato(server.dataDir, ["--json", "dev-cert", "--out", out]));
    const port = await freePort();
    receiver = createServer({ cert: readFileSync(files.certificate), key: readFileSync(files.key) }, (req, res) => {
      let body = "";
      req.on("data", (d) => (body += d));
      req.on("end", () => {
        received.push({ url: req.url, headers: req.headers, body });
        res.writeHead(200, { "content-type": "application/json" });
        res.end("{}");
      });
    });
    await new Promise((ok) => receiver.listen(port, "127.0.0.1", ok));
    receiver.url = `https://localhost:${port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, locale: "es-CL", acceptDownloads: true });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
  });

  after(async () => {
    await browser?.close();
    receiver?.close();
    await server?.stop();
  });

  step("first start: the owner account, then the dashboard", async () => {
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill("otra cosa");
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByText("Las contraseñas no coinciden").waitFor();
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await shot("01-setup");
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();
    await page.getByTestId("environment").getByText("Sandbox").waitFor();
    assert.match(await page.getByTestId("signed-in-as").innerText(), /duena@gimnasio\.cl · Administrador/);
  });

  step("settings: a commerce and an API key, each secret shown once", async () => {
    await page.getByRole("link", { name: "Configuración" }).click();
    await page.getByRole("heading", { name: "Nuevo comercio" }).waitFor();
    // A bad code is refused next to its field.
    await page.getByLabel("Código (RUT o código emitido)").fill("no vale");
    await page.getByLabel("Nombre", { exact: true }).fill(COMMERCE.name);
    await page.getByTestId("create-commerce").click();
    await page.getByText("Debe ser un RUT, o de 1 a 64 letras").waitFor();
    await page.getByLabel("Código (RUT o código emitido)").fill(COMMERCE.code);
    await page.getByLabel("Contraseña (opcional: se genera)").fill(COMMERCE.password);
    await page.getByTestId("create-commerce").click();
    await page.getByText(`Comercio ${COMMERCE.normalized} registrado`).waitFor();
    shown.webhookSecret = (await page.getByTestId("secret-Secreto de webhooks").innerText()).trim();
    assert.match(shown.webhookSecret, /^whsec_/);
    await page.getByTestId("shown-once-done").click();
    await page.locator(`[data-commerce="${COMMERCE.normalized}"]`).waitFor();
    // An admin can see the secret again later.
    await page.locator(`[data-commerce="${COMMERCE.normalized}"]`).getByRole("button", { name: "Ver secreto" }).click();
    assert.equal((await page.getByTestId("secret-Secreto de webhooks").innerText()).trim(), shown.webhookSecret);
    await page.getByTestId("shown-once-done").click();
    await shot("02-settings-commerces");

    await page.getByRole("tab", { name: "Claves API" }).click();
    await page.getByTestId("create-key").click();
    await page.getByText("Clave API creada").waitFor();
    shown.apiKey = (await page.getByTestId("secret-x-api-key").innerText()).trim();
    assert.ok(shown.apiKey.length > 20);
    await page.getByTestId("shown-once-done").click();
    await page.locator(`[data-key="${shown.apiKey.slice(0, 8)}"]`).waitFor();
    await shot("03-settings-api-keys");

    await page.getByRole("tab", { name: "Entorno" }).click();
    assert.match(await page.getByTestId("jwe-key").innerText(), /BEGIN PUBLIC KEY/);
    // `serve` backed up at start: the last backup's time and size are shown.
    assert.match(await page.getByTestId("last-backup").innerText(), /\d.*·\s*[\d.,]+ (B|KiB|MiB)$/);
    await shot("04-settings-environment");
  });

  step("the merchant API, with that commerce and key, creates a customer and mandates", async () => {
    const api = merchant(server.base);
    await api.login();
    const customer = await api.call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: "12.345.678-5" },
        personalInformation: { firstName: "Ana", lastName: "Pérez", secondLastName: "Soto" },
        contacts: { email: "ana@example.cl", phone: "+56912345678" },
      },
    });
    ids.customer = customer.customer.internalUserId;
    const hooks = {
      activationWebhook: `${receiver.url}/hooks/activation`,
      paymentWebhook: `${receiver.url}/hooks/payment`,
    };
    const subscription = await api.call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: {
        id: "GYM-2026-001",
        type: "SUBSCRIPTION",
        name: "Plan mensual",
        charges: { currencyId: "CLP", amount: 29990, periodicity: "MONTHLY", startDate: businessDate(7), count: 3 },
      },
      metadata: { plan: "gold" },
      urls: hooks,
    });
    ids.subscription = subscription.mandate.internalId;
    const dynamic = await api.call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: { id: "CTA-001", type: "DYNAMIC", name: "Cuenta corriente", charges: { currencyId: "CLP", maxAmount: 100000 } },
      installments: [{ id: "a", amount: 15000, currencyId: "CLP", installmentDueDate: businessDate(3) }],
      urls: hooks,
    });
    ids.dynamic = dynamic.mandate.internalId;
  });

  step("customers: found by RUT, with their mandates", async () => {
    await page.getByRole("link", { name: "Clientes" }).click();
    await page.getByTestId("customer-search").fill("12.345.678-5");
    const row = page.getByTestId("customers-table").getByRole("link", { name: "Ana Pérez Soto" });
    await row.waitFor();
    await shot("05-customers");
    await row.click();
    await page.getByRole("heading", { name: "Ana Pérez Soto" }).waitFor();
    await page.getByRole("link", { name: "GYM-2026-001" }).waitFor();
    await page.getByRole("link", { name: "CTA-001" }).waitFor();
    await shot("06-customer-detail");
  });

  step("mandates: filtered list, then the detail with its schedule", async () => {
    await page.getByRole("link", { name: "Mandatos" }).click();
    await page.locator(`[data-mandate="${ids.dynamic}"]`).waitFor();
    await page.getByTestId("mandate-search").fill("GYM-2026-001");
    await page.locator(`[data-mandate="${ids.dynamic}"]`).waitFor({ state: "detached" });
    await page.locator(`[data-mandate="${ids.subscription}"]`).waitFor();
    await page.getByTestId("mandate-search").fill("");
    await page.locator(`[data-mandate="${ids.dynamic}"]`).waitFor();
    await shot("07-mandates");
    await page.getByRole("link", { name: "GYM-2026-001" }).click();
    await page.getByRole("heading", { name: "Plan mensual" }).waitFor();
    assert.match(await page.getByTestId("magic-link").innerText(), /\/link\//);
    assert.equal(await page.getByTestId("schedule").locator("[data-state]").count(), 3);
  });

  step("mark an installment paid with its evidence", async () => {
    const first = page.locator('[data-installment="1"]');
    await first.getByTestId("mark-paid").click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("Marcar pagada la cuota 1").waitFor();
    // A wrong amount is refused next to the amount.
    await dialog.getByLabel(/^Monto \(CLP\)/).fill("100");
    await dialog.getByTestId("pay-submit").click();
    await dialog.getByText("El monto no coincide con la suma de las cuotas indicadas").waitFor();
    await dialog.getByLabel(/^Monto \(CLP\)/).fill("29.990");
    await dialog.getByLabel("Código de autorización").fill("TRX-889");
    await shot("08-mark-paid");
    await dialog.getByTestId("pay-submit").click();
    await first.locator('[data-state="PAID"]').waitFor();
    await first.getByRole("button", { name: "1", exact: true }).click();
    await page.getByText("TRX-889").first().waitFor();
    await shot("09-mandate-detail");
  });

  step("notifications: the payment webhook, delivered, with its body and signature", async () => {
    await page.getByRole("link", { name: "Notificaciones" }).click();
    await page.getByTestId("filter-mandate").fill(ids.subscription);
    const row = page.getByTestId("events-table").locator("tr[data-event]");
    await row.first().waitFor();
    assert.equal(await row.count(), 1);
    await waitFor(async () => (await row.first().locator('[data-state="DELIVERED"]').count()) > 0, "the delivery");
    await row.first().getByRole("button", { name: /^evt_/ }).click();
    const detail = page.getByTestId("event-detail");
    await detail.getByTestId("attempts").waitFor();
    const body = JSON.parse(await detail.getByTestId("event-body").innerText());
    assert.equal(body.installment.state.name, "PAID");
    assert.equal(body.installment.authorizationCode, "TRX-889");
    await shot("10-notifications");
    await page.keyboard.press("Escape");

    // The receiver got it, signed with the secret the UI showed once (Standard Webhooks).
    const delivery = received.find((r) => r.url === "/hooks/payment");
    assert.ok(delivery, "the payment webhook reached the receiver");
    const key = Buffer.from(shown.webhookSecret.slice("whsec_".length), "base64");
    const expected = createHmac("sha256", key)
      .update(`${delivery.headers["webhook-id"]}.${delivery.headers["webhook-timestamp"]}.${delivery.body}`)
      .digest("base64");
    assert.ok(delivery.headers["webhook-signature"].split(" ").includes(`v1,${expected}`));
  });

  step("cancel a mandate, with a reason, after being asked", async () => {
    await page.goto(`${server.base}/mandates/${ids.subscription}`);
    await page.getByTestId("cancel-mandate").click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("Las cuotas no enviadas a cobro se anularán").waitFor();
    await dialog.getByTestId("cancel-submit").click();
    await dialog.getByText("Es obligatorio").waitFor();
    await dialog.getByLabel("Motivo (3 a 500 caracteres)").fill("El cliente se cambia de ciudad");
    await shot("11-cancel");
    await dialog.getByTestId("cancel-submit").click();
    await page.getByRole("heading", { name: "Plan mensual" }).locator("..").locator('[data-state="CANCELLED"]').waitFor();
    await page.getByText("El cliente se cambia de ciudad").waitFor();
    assert.equal(await page.getByTestId("cancel-mandate").count(), 0);
    assert.equal(await page.locator('[data-installment="3"] [data-state="ANNULLED"]').count(), 1);
  });

  step("dashboard, charging and audit", async () => {
    await page.getByRole("link", { name: "Panel" }).click();
    await page.getByTestId("mandate-counts").locator('[data-state="CANCELLED"]').getByText("1").waitFor();
    await page.getByTestId("amounts-chart").waitFor();
    await shot("12-dashboard");

    await page.getByRole("link", { name: "Cobros" }).click();
    await page.getByTestId("sandbox-clock").waitFor();
    await page.getByTestId("run-now").click();
    await page.getByTestId("confirm").click();
    await page.getByText("Cobro terminado").waitFor();
    await page.getByTestId("runs-table").locator("tbody tr").first().waitFor();
    await shot("13-charging");

    await page.getByRole("link", { name: "Auditoría" }).click();
    const audit = page.getByTestId("staff-audit");
    // Each action in words; its code stays behind (data-action, and a tooltip).
    await audit.locator('[data-action="mandate.cancel"]').getByText("Mandato cancelado").waitFor();
    await audit.locator('[data-action="mandate.pay"]').getByText("Cuotas marcadas pagadas").waitFor();
    await audit.locator('[data-action="commerce.create"]').getByText("Comercio creado").waitFor();
    assert.ok(!(await audit.innerText()).includes("mandate.cancel"), "no action code on the page");
    await shot("14-audit");
    await page.getByRole("tab", { name: "Solicitudes API" }).click();
    await page.getByTestId("request-audit").getByText("/api/v1/mandate").first().waitFor();
    await shot("15-audit-requests");
  });

  step("the ledger: entries, settlements and a payout report reconciled", async () => {
    await page.getByRole("link", { name: "Libro" }).click();
    await page.getByRole("heading", { name: "Libro de movimientos" }).waitFor();
    const entries = page.getByTestId("ledger-table");
    await entries.getByText("Pago manual").first().waitFor();
    await entries.getByText("Anulación").first().waitFor();
    await page.getByTestId("settlements-table").getByText("Manual").waitFor();
    await page.getByTestId("payout-csv").fill(`date;reference;amount\n${businessDate(0)};AUT-NADIE;1000`);
    await page.getByTestId("reconcile").click();
    const result = page.getByTestId("reconciliation-result");
    await result.getByText("Referencia desconocida").waitFor();
    await result.getByText("1 líneas sin movimiento", { exact: false }).waitFor();
    await page.getByTestId("reconciliations-table").locator("tbody tr").first().waitFor();
    await shot("14b-ledger");
    // The export's headers are all in Spanish, the ids included.
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("export-csv").click()]);
    const chunks = [];
    for await (const chunk of await download.createReadStream()) chunks.push(chunk);
    const header = Buffer.concat(chunks).toString("utf8").replace(/^\uFEFF/, "").split(/\r?\n/)[0];
    assert.match(header, /Id del movimiento/);
    assert.doesNotMatch(header, /entryId|mandateId|InternalId/, header);
    // The commerce's whole name shows in its selector; on a phone both tables scroll in their own box.
    const selector = page.getByTestId("ledger-commerce");
    const cut = await selector.evaluate((input) => input.scrollWidth - input.clientWidth);
    assert.ok(cut <= 0, `the commerce selector cuts ${cut}px of "${await selector.inputValue()}"`);
    await page.setViewportSize({ width: 390, height: 900 });
    await assertTableScrollsInside(page, page.getByRole("region", { name: "Liquidación diaria" }), "settlements");
    await assertTableScrollsInside(page, page.getByRole("region", { name: "Conciliaciones anteriores" }), "reconciliations");
    await assertTableScrollsInside(page, page.getByRole("region", { name: "Líneas sin movimiento" }), "lines without entry");
    await shot("14c-ledger-390");
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  step("a viewer sees everything and can change nothing", async () => {
    await page.goto(`${server.base}/settings?tab=staff`);
    await page.getByRole("heading", { name: "Nueva cuenta de personal" }).waitFor();
    await page.locator('input[name="staff-email"]').fill(VIEWER.email);
    await page.locator('input[name="staff-password"]').fill(VIEWER.password);
    await page.getByTestId("create-staff").click();
    await page.locator(`[data-staff="${VIEWER.email}"]`).waitFor();
    await shot("16-settings-staff");
    await page.getByRole("button", { name: "Cerrar sesión" }).click();

    await page.getByRole("heading", { name: "Iniciar sesión" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(VIEWER.email);
    await page.getByLabel(/^Contraseña/).fill("equivocada");
    await page.getByRole("button", { name: "Entrar" }).click();
    await page.getByTestId("login-error").getByText("Correo o contraseña incorrectos").waitFor();
    await page.getByLabel(/^Contraseña/).fill(VIEWER.password);
    await page.getByRole("button", { name: "Entrar" }).click();
    await page.getByTestId("signed-in-as").getByText("Lector").waitFor();

    await page.goto(`${server.base}/mandates/${ids.dynamic}`);
    await page.getByRole("heading", { name: "Cuenta corriente" }).waitFor();
    assert.ok(await page.getByTestId("cancel-mandate").isDisabled());
    assert.ok(await page.getByTestId("add-installments").isDisabled());
    assert.ok(await page.locator('[data-installment="a"]').getByTestId("mark-paid").isDisabled());
    await shot("17-viewer-mandate");

    // Nor through the API, with the viewer's own session and CSRF token.
    const answer = await page.evaluate(async (id) => {
      const session = await (await fetch("/admin/api/session")).json();
      const r = await fetch(`/admin/api/mandates/${id}/cancel`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-csrf-token": session.payload.csrfToken },
        body: JSON.stringify({ description: "no debería poder" }),
      });
      return { status: r.status, body: await r.json() };
    }, ids.dynamic);
    assert.equal(answer.status, 403);
    assert.equal(answer.body.name, "ROLE_NOT_ALLOWED");

    await page.getByRole("link", { name: "Configuración" }).click();
    await page.getByTestId("commerces-table").waitFor();
    assert.equal(await page.getByTestId("create-commerce").count(), 0);
    await page.getByRole("tab", { name: "Personal" }).click();
    await page.getByText("Solo un administrador ve y cambia las cuentas de personal.").waitFor();
    await page.getByRole("link", { name: "Notificaciones" }).click();
    await page.getByTestId("events-table").waitFor();
    assert.equal(await page.getByTestId("redeliver-selected").count(), 0);

    // And the mandate is as it was.
    const state = await page.evaluate(async (id) => {
      const r = await fetch(`/admin/api/mandates/${id}`);
      return (await r.json()).payload.mandate.state.name;
    }, ids.dynamic);
    assert.equal(state, "PENDING");
  });

  step("English is one click away", async () => {
    await page.locator("label", { hasText: /^EN$/ }).click();
    await page.getByRole("link", { name: "Mandates" }).waitFor();
    await page.getByRole("link", { name: "Mandates" }).click();
    await page.getByRole("heading", { name: "Mandates" }).waitFor();
    await shot("18-english");
  });
});
