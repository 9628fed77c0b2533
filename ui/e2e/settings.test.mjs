// Browser test of Settings and staff safety, against a real `mandato serve` (target/debug/mandato,
// or MANDATO_BIN) in Debian's Chromium: a mistyped RUT as a commerce code is named as it is typed,
// a role change asks first naming the member and both roles, an admin resets a member's password
// (shown once) and that member must choose their own at sign-in, API keys carry a name and their
// last use, the UF table is listed, a rotation takes its overlap, a commerce's webhook URL is
// shown and edited (a wrong one named), and the owner changes their own password. Screenshots at 1440 and 390 px go to target/ui-screenshots/.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const MEMBER = { email: "cajero@gimnasio.cl", password: "clave del cajero 1" };
const COMMERCE = "76123456-0";

let server;
let browser;
let page;

let failed = false;
function step(name, fn) {
  test(name, async (t) => {
    if (failed) return t.skip("an earlier step failed");
    try {
      await fn(t);
    } catch (e) {
      failed = true;
      await page?.screenshot({ path: join(SHOTS, "settings-failure.png"), fullPage: true }).catch(() => {});
      throw e;
    }
  });
}

/** The page at 1440 and 390 px wide, as `settings-<name>-1440.png` and `-390.png`. */
async function shots(name) {
  for (const width of [1440, 390]) {
    await page.setViewportSize({ width, height: 900 });
    await page.waitForTimeout(200);
    await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}

describe("Settings and staff safety in a browser", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE, "--name", "Gimnasio Los Andes"]);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL" });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  step("a commerce code written as a RUT needs its check digit, as it is typed", async () => {
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();
    await page.goto(`${server.base}/settings?tab=commerces`);
    await page.getByLabel(/^Código/).fill("76.543.210-1");
    await page.getByText("para 76543210 es 3").waitFor();
    await shots("settings");
    await page.getByLabel(/^Código/).fill("76.543.210-3");
    await page.getByText("para 76543210 es 3").waitFor({ state: "detached" });
    // Each column of the commerces table under its own header, the methods in words.
    const table = page.getByTestId("commerces-table");
    const headers = await table.locator("thead th").allInnerTexts();
    const row = page.locator(`[data-commerce="${COMMERCE}"]`);
    const cells = row.locator("td");
    assert.equal(await cells.count(), headers.length, `one cell per header: ${headers.join(" | ")}`);
    const column = (name) => cells.nth(headers.findIndex((h) => h.trim() === name));
    assert.equal(await column("Medios de pago").innerText(), "Crédito, Débito, Prepago, PAC, EPAC, EPAC directo");
    // A commerce code that is a RUT is written with its dots.
    assert.equal(await column("Id").innerText(), "76.123.456-0");
    assert.equal(await column("Activación").getByTestId(`activation-mode-${COMMERCE}`).count(), 1);
    assert.equal(await column("Activación").getByTestId(`charging-rule-${COMMERCE}`).count(), 0);
    assert.equal(await column("Cargos en día inhábil").getByTestId(`charging-rule-${COMMERCE}`).count(), 1);
    // The commerce's webhook URL: shown, and edited by an admin; a wrong one is named.
    assert.equal(await column("URL de webhook").innerText(), "Sin URL");
    await row.getByTestId("edit-webhook-url").click();
    const url = page.getByTestId("webhook-url-input");
    await url.fill("http://hooks.gimnasio.cl");
    await page.getByRole("dialog").getByRole("button", { name: "Guardar" }).click();
    await page.getByText("La URL no es válida").waitFor();
    await url.fill("https://hooks.gimnasio.cl/mandato");
    await page.getByRole("dialog").getByRole("button", { name: "Guardar" }).click();
    await page.getByRole("dialog").waitFor({ state: "detached" });
    await column("URL de webhook").getByText("https://hooks.gimnasio.cl/mandato").waitFor();
    const listed = JSON.parse(await mandato(server.dataDir, ["--json", "commerce", "list"]));
    const stored = (listed.commerces ?? listed).find((c) => c.code === COMMERCE);
    assert.equal(stored.webhookUrl, "https://hooks.gimnasio.cl/mandato");
    // On a phone the new commerce's fields stack in one column.
    await page.setViewportSize({ width: 390, height: 900 });
    const fields = page.getByTestId("new-commerce-fields").locator(":scope > *");
    const boxes = await fields.evaluateAll((all) => all.map((f) => f.getBoundingClientRect()).map((r) => [Math.round(r.left), r.top]));
    assert.equal(boxes.length, 3);
    assert.equal(new Set(boxes.map(([left]) => left)).size, 1, `the fields start at ${boxes.map(([left]) => left).join(", ")}`);
    assert.ok(boxes[0][1] < boxes[1][1] && boxes[1][1] < boxes[2][1], "one under the other");
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  step("a role change asks first, naming the member and both roles", async () => {
    await page.goto(`${server.base}/settings?tab=staff`);
    await page.getByLabel("Correo", { exact: true }).fill(MEMBER.email);
    await page.locator("input[name=staff-password]").fill(MEMBER.password);
    await page.getByTestId("create-staff").click();
    const role = page.getByTestId(`role-${MEMBER.email}`);
    await role.waitFor();
    await role.click();
    await page.getByRole("option", { name: "Operador" }).click();
    await page.getByText(`${MEMBER.email} pasará de Lector a Operador.`).waitFor();
    await page.getByRole("button", { name: "Cancelar" }).click();
    assert.equal(await role.inputValue(), "Lector", "nothing changed on cancel");
    await role.click();
    await page.getByRole("option", { name: "Operador" }).click();
    await page.getByTestId("confirm").click();
    await page.getByText("Cuenta actualizada").first().waitFor();
    // The list is read again after the change; its select follows once it arrives.
    for (let i = 0; i < 50 && (await role.inputValue()) !== "Operador"; i++) await page.waitForTimeout(100);
    assert.equal(await role.inputValue(), "Operador");
  });

  step("an admin resets a member's password, and the member chooses their own at sign-in", async () => {
    await page.getByTestId(`reset-${MEMBER.email}`).click();
    await page.getByText("recibirá una contraseña temporal de un solo uso").waitFor();
    await page.getByTestId("confirm").click();
    const secret = page.getByTestId("secret-Contraseña temporal");
    await secret.waitFor();
    const temporary = (await secret.textContent()).trim();
    assert.ok(temporary.length >= 10, temporary);
    await shots("settings-reset");
    await page.getByTestId("shown-once-done").click();
    await page.locator(`[data-staff="${MEMBER.email}"]`).getByText("debe elegir contraseña").waitFor();

    const other = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: "es-CL" });
    const member = await other.newPage();
    member.setDefaultTimeout(10_000);
    await member.goto(server.base);
    await member.getByLabel(/^Correo electrónico/).fill(MEMBER.email);
    await member.getByLabel(/^Contraseña/).fill(temporary);
    await member.getByRole("button", { name: "Entrar" }).click();
    await member.getByRole("heading", { name: "Elija su contraseña" }).waitFor();
    await member.screenshot({ path: join(SHOTS, "sign-in-new-password-390.png"), fullPage: true });
    await member.getByLabel(/^Contraseña actual/).fill(temporary);
    await member.getByLabel(/^Nueva contraseña/).fill("mi clave propia 42");
    await member.getByLabel(/^Repita la nueva contraseña/).fill("otra cosa distinta");
    await member.getByRole("button", { name: "Guardar y continuar" }).click();
    await member.getByText("Las contraseñas no coinciden").waitFor();
    await member.getByLabel(/^Repita la nueva contraseña/).fill("mi clave propia 42");
    await member.getByRole("button", { name: "Guardar y continuar" }).click();
    await member.getByRole("heading", { name: "Panel" }).waitFor();
    await other.close();
  });

  step("API keys carry a name and their last use", async () => {
    await page.goto(`${server.base}/settings?tab=keys`);
    await page.locator("input[name=key-name]").fill("Checkout web");
    await page.getByTestId("create-key").click();
    await page.getByTestId("shown-once-done").click();
    const row = page.locator("[data-key]").filter({ hasText: "Checkout web" });
    await row.getByText("Nunca usada").waitFor();
  });

  step("the UF table the engine uses is listed with its coverage", async () => {
    const csv = join(server.dataDir, "uf.csv");
    writeFileSync(csv, "date,value\n2026-12-01,39123.45\n2026-12-02,39130.10\n");
    await mandato(server.dataDir, ["--json", "uf", "import", csv]);
    await page.goto(`${server.base}/settings?tab=uf`);
    await page.getByTestId("uf-coverage").getByText("2 valores").waitFor();
    await page.locator('[data-uf="2026-12-02"]').waitFor();
    // UF values in the Chilean form: thousands dots and a decimal comma.
    assert.equal(await page.locator('[data-uf="2026-12-01"] td').nth(1).innerText(), "39.123,45");
    await shots("settings-uf");
  });

  step("a rotation takes the overlap the admin chooses", async () => {
    await page.goto(`${server.base}/settings?tab=commerces`);
    await page.locator(`[data-commerce="${COMMERCE}"]`).getByRole("button", { name: "Rotar secreto" }).click();
    const hours = page.getByTestId("overlap-hours");
    await hours.fill("72");
    await page.getByTestId("confirm-rotate").click();
    await page.getByText("Secreto rotado").waitFor();
    await page.getByTestId("shown-once-done").click();
  });

  step("an admin sets a commerce's card acquirer, and its secret is never shown again", async () => {
    const SECRET = "579B532A7440BB0C9079DED94D31EA1615BACEB56610332264630D42D0A36B1C";
    await page.goto(`${server.base}/settings?tab=acquirers`);
    const cards = page.locator("#acq-cards-kind");
    await cards.waitFor();
    await page.getByText("Simulación (por defecto)").first().waitFor();
    // A Transbank code of letters is named at its field.
    await page.locator("#acq-cards-mallCode").fill("ABC");
    await page.locator("#acq-cards-childCode").fill("597055555542");
    await page.locator("#acq-cards-webpayCode").fill("597055555532");
    await page.locator("#acq-cards-secret").fill(SECRET);
    await page.getByRole("button", { name: "Guardar" }).first().click();
    await page.getByText("El código de comercio de Transbank tiene de 1 a 12 dígitos").waitFor();
    await page.locator("#acq-cards-mallCode").fill("597055555541");
    await page.getByRole("button", { name: "Guardar" }).first().click();
    await page.getByText("Transbank (Oneclick Mall y Webpay Plus)").first().waitFor();
    await page.getByText("Hay una llave guardada; déjelo vacío para conservarla.").waitFor();
    assert.equal(await page.locator("#acq-cards-secret").inputValue(), "", "the secret is not written back");
    assert.ok(!(await page.content()).includes(SECRET), "the secret is nowhere on the page");
    await shots("settings-acquirers");
    // Saved again without the secret: the stored one stays.
    await page.getByRole("button", { name: "Guardar" }).first().click();
    await page.getByText("Guardado").first().waitFor();
    const shown = JSON.parse(await mandato(server.dataDir, ["--json", "acquirer", "show", "--commerce", COMMERCE]));
    assert.equal(shown.acquirers[0].kind, "transbank");
    assert.equal(shown.acquirers[0].secretSet, true);
    await page.getByRole("button", { name: "Quitar adquirente" }).click();
    await page.getByTestId("confirm").click();
    await page.getByText("Adquirente quitado").first().waitFor();
  });

  step("an admin sets a method's acquirer fee, named at its field when wrong, and resets it", async () => {
    await page.goto(`${server.base}/settings?tab=acquirers`);
    const debit = page.getByTestId("fee-4");
    await debit.waitFor();
    await debit.locator("#fee-4-commission").fill("25");
    await debit.getByRole("button", { name: "Guardar" }).click();
    await debit.getByText("Un porcentaje de 0 a 20, con hasta 4 decimales").waitFor();
    await debit.locator("#fee-4-commission").fill("1,2");
    await debit.locator("#fee-4-fixed").fill("30");
    await debit.getByRole("button", { name: "Guardar" }).click();
    await page.getByTestId("fee-4").getByText("Propia").waitFor();
    // The saved percentage reads back with the Spanish decimal comma.
    assert.equal(await page.getByTestId("fee-4").locator("#fee-4-commission").inputValue(), "1,2");
    await shots("settings-fees");
    const shown = JSON.parse(await mandato(server.dataDir, ["--json", "fees", "show", "--commerce", COMMERCE]));
    const rule = shown.rules.find((r) => r.methodId === 4);
    assert.equal(rule.commissionPercent, "1.2");
    assert.equal(rule.fixed, "30");
    assert.equal(rule.own, true);
    await page.getByTestId("fee-4").getByRole("button", { name: "Volver a la regla por defecto" }).click();
    await page.getByText("Regla por defecto restablecida").first().waitFor();
    await page.getByTestId("fee-4").getByText("Por defecto").waitFor();
  });

  step("the owner changes their own password", async () => {
    await page.goto(`${server.base}/settings?tab=account`);
    await page.getByLabel(/^Contraseña actual/).fill("no es la clave 1");
    await page.getByLabel(/^Nueva contraseña/).fill("una clave nueva 456");
    await page.getByLabel(/^Repita la nueva contraseña/).fill("una clave nueva 456");
    await page.getByTestId("change-password").click();
    await page.getByText("No es su contraseña actual").waitFor();
    await shots("settings-account");
    await page.getByLabel(/^Contraseña actual/).fill(OWNER.password);
    await page.getByTestId("change-password").click();
    await page.getByText("Contraseña cambiada").first().waitFor();
  });
});
