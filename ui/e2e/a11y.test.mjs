// Accessibility and layout of every Mandato Desk screen and of the customer's pages (Magic
// Link, signing), against a real `mandato serve` in Debian's Chromium: each page at 1440 and
// 390 px wide, in Spanish, checked by axe-core (a violation of any impact fails), never wider
// than the window, with one `h1` the header never covers and a tab title of its own; the
// sign-in page, and the mark-paid and add-installments dialogs and the notification drawer
// open; the dashboard and a list also in the dark color scheme. Also: `<html lang>` follows the
// language switch, and focus goes back to the button that opened a dialog. Screenshots go to
// target/ui-screenshots/<screen>-<width>.png.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { chromium } from "playwright-core";
import { mandato, startServer } from "../scripts/server.mjs";
import { CHROMIUM, FLAGS, SHOTS, businessDate, merchantApi } from "./harness.mjs";

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
const OWNER = { email: "duena@gimnasio.cl", password: "una clave larga 123" };
const COMMERCE = { code: "76123456-0", name: "Gimnasio Accesible", password: "clave-secreta-1" };
const RUT = "12.345.678-5";
const WIDTHS = [1440, 390];
/** The header's height (Layout.tsx): nothing of a page may start under it. */
const HEADER = 56;

let server;
let browser;
let context;
let page;
const ids = { mandate: "", dynamic: "", link: "", sign: "" };

const merchant = (base, apiKey) =>
  merchantApi(base, { commerce: COMMERCE.code, password: COMMERCE.password, apiKey });

function mandateBody(id, name) {
  return {
    customer: { userId: "cust-001" },
    mandate: {
      id,
      type: "SUBSCRIPTION",
      name,
      charges: { currencyId: "CLP", amount: 29990, periodicity: "MONTHLY", startDate: businessDate(7), count: 3 },
    },
    paymentMethods: [3],
  };
}

/** Lets queries settle, then asks axe; answers every violation, whatever its impact, as text. */
async function violations() {
  await page.waitForLoadState("networkidle").catch(() => {});
  await page.waitForTimeout(250);
  await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const result = await axe.run(document, { resultTypes: ["violations"] });
    return result.violations
      .map((v) => {
        const nodes = v.nodes.slice(0, 6).map((n) => {
          const data = n.any[0]?.data;
          const colors = data?.fgColor ? ` ${data.fgColor} on ${data.bgColor} (${data.contrastRatio}:1)` : "";
          return `${n.target.join(" ")}${colors} «${(n.html ?? "").slice(0, 90)}»`;
        });
        return `${v.impact} ${v.id} (${v.nodes.length}): ${v.help}\n    ${nodes.join("\n    ")}`;
      });
  });
  return found;
}

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

/**
 * Checks the page as it stands at each width (and scheme): axe, one h1 below the header, a
 * title; writes the screenshots. `open` brings the page to the state to check.
 */
async function check(screen, open, { staff = true, schemes = ["light"], overlay = false } = {}) {
  const problems = [];
  for (const scheme of schemes) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 900 });
      await open();
      const name = scheme === "light" ? `${screen}-${width}` : `${screen}-${scheme}-${width}`;
      const found = await violations();
      if (found.length) problems.push(`${name}:\n  ${found.join("\n  ")}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      if (overflow > 0) problems.push(`${name}: the page is ${overflow}px wider than the window`);
      const h1 = page.locator("h1");
      assert.equal(await h1.count(), 1, `${name}: one h1`);
      // Behind an open dialog or drawer the page may have scrolled to the button that opened it.
      if (staff && !overlay) {
        const box = await h1.boundingBox();
        assert.ok(box && box.y >= HEADER, `${name}: the header covers the h1 (top ${box?.y})`);
        const title = await page.title();
        assert.ok(title.endsWith("· Mandato Desk") && title.includes((await h1.innerText()).trim()), `${name}: title "${title}"`);
      }
      await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
    }
  }
  await page.emulateMedia({ colorScheme: "light" });
  assert.deepEqual(problems, [], problems.join("\n"));
}

/** Opens a staff route the way a person does, and waits for its heading. */
function route(path) {
  return async () => {
    await page.goto(`${server.base}${path}`);
    await page.locator("h1").first().waitFor();
  };
}

/** A route, then its `index`-th tab. */
function tab(path, index) {
  return async () => {
    await route(path)();
    await page.getByRole("tab").nth(index).click();
    await page.waitForTimeout(200);
  };
}

describe("Accessibility of every screen", { concurrency: false }, () => {
  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    server = await startServer();
    await mandato(server.dataDir, ["--json", "commerce", "add", "--code", COMMERCE.code, "--name", COMMERCE.name, "--password-stdin"], COMMERCE.password);
    const key = JSON.parse(await mandato(server.dataDir, ["--json", "apikey", "create"]));
    const call = await merchant(server.base, key.apiKey);
    await call("POST", "/user", {
      customer: {
        userId: "cust-001",
        identificationDocument: { type: "RUT", number: RUT },
        personalInformation: { firstName: "Ana", lastName: "Pérez" },
        contacts: { email: "ana@example.cl" },
      },
    });
    const process = await call("POST", "/signature", {
      process: { processName: "Contrato de arriendo", externalProcessId: "ARR-A11Y", requestUser: "ventas@gimnasio.cl" },
      signatories: [{ userId: "cust-001", order: 1, type: "FES" }],
      documents: [
        {
          documentName: "contrato.pdf",
          contentBase64: onePagePdf("Contrato de arriendo"),
          signatureData: [{ signatory: { userId: "cust-001" }, mode: "LAST_PAGE" }],
        },
      ],
      urls: { callback: "https://merchant.example/listo", webhook: "https://merchant.example/hooks/signature" },
    });
    ids.process = process.process.internalId;
    const direct = await call("POST", "/mandate", mandateBody("GYM-A11Y-1", "Plan mensual"));
    ids.mandate = direct.mandate.internalId;
    ids.link = direct.mandate.magicLink;
    // A DYNAMIC mandate, active, with installments to mark paid and add, whose events go to a
    // receiver that is not there (failing deliveries on the dashboard and in the drawer).
    const dynamic = await call("POST", "/mandate", {
      customer: { userId: "cust-001" },
      mandate: { id: "CTA-A11Y-3", type: "DYNAMIC", name: "Cuenta corriente", charges: { currencyId: "CLP", maxAmount: 100000 } },
      installments: [
        { id: "a", amount: 10000, currencyId: "CLP", installmentDueDate: businessDate(5) },
        { id: "b", amount: 20000, currencyId: "CLP", installmentDueDate: businessDate(10) },
      ],
      urls: { activationWebhook: "https://127.0.0.1:1/hook", paymentWebhook: "https://127.0.0.1:1/hook" },
    });
    ids.dynamic = dynamic.mandate.internalId;
    await call("POST", `/sandbox/mandates/${ids.dynamic}/activate`, {
      paymentMethodId: 3,
      card: { number: "4111111111111111", expiry: "12/35", cvv: "123" },
    });
    // A mandate activated by signature, whose enrolment leads to the signing pages.
    await mandato(server.dataDir, ["--json", "commerce", "set-activation", "--code", COMMERCE.code, "--mode", "SIGNATURE"]);
    const signed = await call("POST", "/mandate", mandateBody("GYM-A11Y-2", "Plan con firma"));
    const html = await (await fetch(signed.mandate.magicLink)).text();
    const terms = html.match(/name="termsSha256" value="([0-9a-f]{64})"/)[1];
    const r = await fetch(signed.mandate.magicLink, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ method: "3", number: "4111111111111111", expiry: "12/35", cvv: "123", accept: "1", termsSha256: terms }),
      redirect: "manual",
    });
    assert.equal(r.status, 303);
    ids.sign = `${server.base}${r.headers.get("location")}`;

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
    // axe is injected as a script, which the pages' Content-Security-Policy would refuse.
    context = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL", bypassCSP: true });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on("pageerror", (e) => console.error("page error:", e.message));
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("first start and sign-in", async () => {
    await check("setup", route("/"), { staff: false });
    await page.setViewportSize({ width: 1440, height: 900 });
    // The password rule is told before the owner submits, and a short one is named at its field.
    await page.getByText("Al menos 10 caracteres; una frase de varias palabras sirve").waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill("corta");
    await page.getByLabel(/^Repita la contraseña/).fill("corta");
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByText("Al menos 10 caracteres", { exact: true }).waitFor();
    await page.getByLabel(/^Correo electrónico/).fill(OWNER.email);
    await page.getByLabel(/^Contraseña/).fill(OWNER.password);
    await page.getByLabel(/^Repita la contraseña/).fill(OWNER.password);
    await page.getByRole("button", { name: "Crear cuenta y entrar" }).click();
    await page.getByRole("heading", { name: "Panel", level: 1 }).waitFor();
  });

  test("the sign-in page, to a visitor without a session", async () => {
    const staffPage = page;
    const visitor = await browser.newContext({ viewport: { width: 1440, height: 900 }, locale: "es-CL", bypassCSP: true });
    page = await visitor.newPage();
    page.setDefaultTimeout(10_000);
    try {
      await check("sign-in", async () => {
        await page.goto(server.base);
        await page.getByRole("heading", { name: "Iniciar sesión", level: 1 }).waitFor();
      }, { staff: false });
      // The language is chosen before signing in, and the page follows it.
      const language = page.getByRole("radiogroup", { name: "Idioma" });
      await language.getByText("English", { exact: true }).click();
      await page.getByRole("heading", { name: "Sign in", level: 1 }).waitFor();
      assert.equal(await page.evaluate(() => document.documentElement.lang), "en");
      await page.getByRole("radiogroup", { name: "Language" }).getByText("Español", { exact: true }).click();
      await page.getByRole("heading", { name: "Iniciar sesión", level: 1 }).waitFor();
    } finally {
      await visitor.close();
      page = staffPage;
    }
  });

  test("dialogs and drawers, open", async () => {
    const mandatePage = async () => {
      await page.goto(`${server.base}/mandates/${ids.dynamic}`);
      await page.getByRole("heading", { name: "Cuenta corriente", level: 1 }).waitFor();
    };
    await check("mark-paid", async () => {
      await mandatePage();
      await page.locator('[data-installment="a"]').getByTestId("mark-paid").click();
      await page.getByRole("dialog").getByTestId("pay-date").waitFor();
    }, { overlay: true });
    await check("add-installments", async () => {
      await mandatePage();
      await page.getByTestId("add-installments").click();
      await page.getByRole("dialog").getByTestId("add-submit").waitFor();
    }, { overlay: true });
    // What staff create: a customer, a mandate, a signature process.
    for (const [screen, path, button, submit] of [
      ["new-customer", "/customers", "new-customer", "customer-submit"],
      ["new-mandate", "/mandates", "new-mandate", "mandate-submit"],
      ["new-signature", "/signatures", "new-signature", "signature-submit"],
    ]) {
      await check(screen, async () => {
        await route(path)();
        await page.getByTestId(button).click();
        await page.getByRole("dialog").getByTestId(submit).waitFor();
      }, { overlay: true });
    }
    await check("installment-history", async () => {
      await mandatePage();
      const toggle = page.locator('[data-installment="a"]').getByTestId("installment-history-toggle");
      assert.equal(await toggle.getAttribute("aria-expanded"), "false");
      await toggle.click();
      assert.equal(await toggle.getAttribute("aria-expanded"), "true");
      // The schedule strip scrolls sideways when long: a named region the keyboard reaches.
      const schedule = page.getByTestId("schedule");
      assert.equal(await schedule.getAttribute("role"), "region");
      assert.equal(await schedule.getAttribute("tabindex"), "0");
    }, { overlay: true });
    // The header's search with its results open: the list under the box at 1440 px, its
    // full-screen dialog at 390 px.
    await check("global-search", async () => {
      await route("/mandates")();
      const narrow = (page.viewportSize()?.width ?? 1440) < 992;
      if (narrow) await page.getByTestId("global-search-open").click();
      const box = page.getByRole("combobox", { name: "Buscar clientes, mandatos, cuotas y notificaciones" });
      await box.fill("Ana");
      await page.getByRole("listbox", { name: "Resultados de la búsqueda" }).getByRole("option").first().waitFor();
      await box.press("ArrowDown");
    }, { overlay: true });
    // A manual payment's attached file, on its installment.
    await check("payment-evidence", async () => {
      await page.goto(`${server.base}/mandates/${ids.dynamic}`);
      await page.getByRole("heading", { name: "Cuenta corriente", level: 1 }).waitFor();
      const b = page.locator('[data-installment="b"]');
      // Paid by hand with its file once (at the first width), then read at each.
      if (await b.getByTestId("mark-paid").count()) {
        await b.getByTestId("mark-paid").click();
        const dialog = page.getByRole("dialog");
        await dialog.locator('input[type="file"]').setInputFiles({
          name: "comprobante.pdf",
          mimeType: "application/pdf",
          buffer: Buffer.from("%PDF-1.4\n%%EOF\n"),
        });
        await dialog.getByTestId("pay-submit").click();
        await dialog.waitFor({ state: "detached" });
        // Without the toast that says so (checked where it is shown).
        await page.reload();
        await page.getByRole("heading", { name: "Cuenta corriente", level: 1 }).waitFor();
      }
      await b.getByTestId("installment-history-toggle").click();
      await page.getByTestId("manual-payment-file").waitFor();
    }, { overlay: true });
    await check("notification-drawer", async () => {
      await route("/notifications")();
      await page.getByTestId("events-table").locator("tr[data-event]").first().getByRole("button", { name: /^evt_/ }).click();
      await page.getByTestId("event-detail").getByTestId("event-body").waitFor();
    }, { overlay: true });
  });

  test("dashboard, in both color schemes", async () => {
    await check("dashboard", route("/"), { schemes: ["light", "dark"] });
  });

  test("customers and a customer", async () => {
    await check("customers", route("/customers"));
    await check("customer", async () => {
      await route("/customers")();
      await page.getByRole("link", { name: /Ana/ }).first().click();
      await page.getByRole("heading", { name: /Ana/, level: 1 }).waitFor();
    });
  });

  test("mandates, in both color schemes, and a mandate", async () => {
    await check("mandates", route("/mandates"), { schemes: ["light", "dark"] });
    await check("mandate", async () => {
      await page.goto(`${server.base}/mandates/${ids.mandate}`);
      await page.getByRole("heading", { name: "Plan mensual", level: 1 }).waitFor();
    });
  });

  test("notifications, charging, ledger, signatures", async () => {
    await check("notifications", route("/notifications"));
    await check("charging", route("/charging"));
    await check("ledger", route("/ledger"));
    await check("signatures", route("/signatures"));
    await check("signature-detail", route(`/signatures/${ids.process}`));
  });

  test("past due, a charging run and a customer's payments", async () => {
    await check("past-due", route("/past-due"));
    // A run (nothing falls due today here, so it charges nothing) to open.
    await page.setViewportSize({ width: 1440, height: 900 });
    await route("/charging")();
    await page.getByTestId("run-now").click();
    await page.getByRole("dialog").getByRole("button", { name: "Cobrar ahora" }).click();
    await page.getByTestId("runs-table").getByTestId("open-run").first().waitFor();
    const run = await page.getByTestId("runs-table").locator("tr[data-run]").first().getAttribute("data-run");
    await check("charging-run", async () => {
      await route(`/charging/runs/${run}`)();
      await page.getByTestId("run-counts").waitFor();
    });
  });

  test("every settings tab", async () => {
    await route("/settings")();
    const tabs = await page.getByRole("tab").count();
    assert.ok(tabs >= 5, `settings has ${tabs} tabs`);
    for (let i = 0; i < tabs; i++) await check(`settings-${i + 1}`, tab("/settings", i));
  });

  test("every audit tab", async () => {
    await route("/audit")();
    const tabs = await page.getByRole("tab").count();
    for (let i = 0; i < tabs; i++) await check(`audit-${i + 1}`, tab("/audit", i));
    // The timestamps stay on one line and the table scrolls inside its container.
    await page.setViewportSize({ width: 1440, height: 900 });
    await tab("/audit", 0)();
    const cell = page.getByTestId("staff-audit").locator("tbody tr td").first();
    const { height, lineHeight } = await cell.evaluate((td) => ({
      height: td.getBoundingClientRect().height,
      lineHeight: parseFloat(getComputedStyle(td).lineHeight) || 20,
    }));
    assert.ok(height < lineHeight * 2 + 24, `a timestamp wraps (${height}px)`);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `the audit page overflows by ${overflow}px`);
  });

  test("the customer's Magic Link and signing pages", async () => {
    await check("magic-link", async () => {
      await page.goto(ids.link);
      await page.locator("h1").first().waitFor();
    }, { staff: false });
    await check("signing", async () => {
      await page.goto(ids.sign);
      await page.locator("h1").first().waitFor();
    }, { staff: false });
  });

  test("the page's language follows the switch", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await route("/")();
    assert.equal(await page.evaluate(() => document.documentElement.lang), "es-CL");
    const language = page.getByRole("radiogroup", { name: "Idioma" });
    await language.getByText("EN", { exact: true }).click();
    await page.getByRole("heading", { name: "Dashboard", level: 1 }).waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.lang), "en");
    assert.match(await page.title(), /^Dashboard · Mandato Desk$/);
    await page.reload();
    await page.getByRole("heading", { name: "Dashboard", level: 1 }).waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.lang), "en");
    await page.getByRole("radiogroup", { name: "Language" }).getByText("ES", { exact: true }).click();
    await page.getByRole("heading", { name: "Panel", level: 1 }).waitFor();
    assert.equal(await page.evaluate(() => document.documentElement.lang), "es-CL");
  });

  test("closing a dialog puts focus back on the button that opened it", async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${server.base}/mandates/${ids.mandate}`);
    const opener = page.getByTestId("cancel-mandate");
    await opener.click();
    await page.getByRole("dialog").waitFor();
    // Its × has a name (axe's button-name), in the page's language.
    assert.equal(await page.getByRole("dialog").locator(".mantine-Modal-close").getAttribute("aria-label"), "Cerrar");
    await page.keyboard.press("Escape");
    await page.getByRole("dialog").waitFor({ state: "detached" });
    await page.waitForTimeout(100);
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("data-testid")), "cancel-mandate");
  });

  test("on a small screen the navigation opens from the menu button", async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await route("/")();
    const menu = page.getByRole("button", { name: "Menú" });
    await menu.click();
    const nav = page.getByRole("navigation", { name: "Navegación principal" });
    await nav.getByRole("link", { name: "Mandatos" }).click();
    await page.getByRole("heading", { name: "Mandatos", level: 1 }).waitFor();
    assert.equal(await menu.getAttribute("aria-expanded"), "false");
    await menu.click();
    await nav.getByRole("button", { name: "Cerrar sesión" }).waitFor();
  });
});
