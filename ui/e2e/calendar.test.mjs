// Browser test of Settings › Calendar and the commerces' charging rule, against a real
// `mandato serve` (target/debug/mandato, or MANDATO_BIN) in Debian's Chromium: the year's
// holidays as the engine computes them, a decreed day added and removed by the admin, and a
// commerce switched to charging the previous business day (checked through the CLI); UF values
// imported as a Chilean spreadsheet writes them, and a refused file naming each bad line.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS } from "./harness.mjs";

const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = "76123456-0";
const YEAR = new Date().getFullYear();

let server;
let browser;
let page;

describe("Settings › Calendar in a browser", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE, "--name", "Gimnasio Los Andes"]);
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

  test("holidays of the year, a decreed day added and removed, a commerce's rule", async () => {
    await page.goto(server.base);
    await page.getByRole("heading", { name: "Primer inicio" }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel" }).waitFor();

    await page.goto(`${server.base}/settings?tab=calendar`);
    await page.getByRole("heading", { name: `Feriados de ${YEAR}` }).waitFor();
    await page.locator(`[data-holiday="${YEAR}-12-25"]`).getByText("Navidad").waitFor();
    await page.locator(`[data-holiday="${YEAR}-12-31"]`).getByText("Feriado bancario").waitFor();

    // A decreed day: added, shown as added, then removed after confirming.
    const day = `${YEAR}-12-28`;
    // Typed as Spanish writes dates; the server receives it as ISO (checked below).
    await page.getByLabel("Fecha").fill(`28-12-${YEAR}`);
    await page.getByLabel("Nombre").fill("Feriado decretado de prueba");
    await page.getByTestId("add-holiday").click();
    const row = page.locator(`[data-holiday="${day}"]`);
    await row.getByText("Feriado decretado de prueba").waitFor();
    await row.getByText("agregado").waitFor();
    await page.waitForTimeout(150);
    await page.screenshot({ path: join(SHOTS, "calendar.png"), fullPage: true });
    const listed = JSON.parse(await mandato(server.dataDir, ["--json", "holidays", "list", "--year", String(YEAR)]));
    assert.ok(listed.holidays.some((h) => h.date === day && h.name === "Feriado decretado de prueba"));
    await row.getByRole("button", { name: "Quitar" }).click();
    await page.getByTestId("confirm").click();
    await row.waitFor({ state: "detached" });

    // The commerce's rule, changed in place.
    await page.getByRole("tab", { name: "Comercios" }).click();
    await page.getByTestId(`charging-rule-${COMMERCE}`).click();
    await page.getByRole("option", { name: "Día hábil anterior" }).click();
    await page.getByText("Guardado").first().waitFor();
    const shown = JSON.parse(await mandato(server.dataDir, ["--json", "commerce", "show", COMMERCE]));
    assert.equal(shown.chargingRule, "PREVIOUS");
  });

  test("UF values in the Chilean form, and a refused file names each bad line and column", async () => {
    await page.goto(`${server.base}/charging`);
    const csv = page.getByLabel(/^CSV fecha;valor/);
    await csv.fill("fecha;valor\n32-12-2026;39.740,55\n24-12-2026;cero");
    await page.getByRole("button", { name: "Importar UF" }).click();
    await page.getByText("Línea 2, fecha: La fecha no es válida; Línea 3, valor: El monto no es válido").waitFor();
    await csv.fill("fecha;valor\n21-12-2026;39.740,55\n22-12-2026;39.741,2");
    await page.getByRole("button", { name: "Importar UF" }).click();
    await page.getByText("2 valores UF importados").first().waitFor();
    const stored = await page.evaluate(async () => (await (await fetch("/admin/api/uf")).json()).payload);
    const text = JSON.stringify(stored);
    assert.ok(text.includes("2026-12-21") && text.includes("39740.55"), text);
    assert.ok(text.includes("39741.2"), text);
  });
});
