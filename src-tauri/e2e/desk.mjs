// Mandato Desk end to end in its real window: the built `mandato-desk` binary, launched by
// tauri-driver (which runs Debian's WebKitWebDriver) with a fresh data directory, driven over
// the plain WebDriver HTTP API with Node's fetch. Run under a display (xvfb-run) and a D-Bus
// session (dbus-run-session, for the single-instance check); scripts/desktop-test.sh does all
// of that. Checks: the window opens already signed in, its session works the staff API (a
// commerce and an API key, made from the page) and the merchant API then creates a mandate, a
// click reaches the mandates list showing it, a restore from a backup through the app's own
// path (`--restore FILE` handed to the running instance) refuses a file that is not a mandato
// database in a native dialog and changes nothing, then brings the backed-up data back and
// keeps the replaced database, a screenshot is not blank, a second launch hands over to the
// first and leaves, closing the window stops the app cleanly (exit status 0, the
// engine's graceful shutdown, an intact database), and a restart on the same data stops as
// cleanly on SIGTERM. Prints the start-to-window time and the resident memory at idle.
//
//   node src-tauri/e2e/desk.mjs /abs/path/to/mandato-desk
//
// The `mandato` command line beside the binary takes the backup. The restore is confirmed by
// the test-only MANDATO_DESK_TEST_CONFIRM, which debug builds alone honour; DESK_RESTORE=skip
// leaves that step out for a release build (scripts/package-test.sh, the installed package).
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { businessDate, merchantApi } from "../../ui/e2e/harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const repoRoot = resolve(here, "..", "..");
const SHOTS = join(repoRoot, "target", "desk-screenshots");
const BIN = realpathSync(process.argv[2] ?? join(repoRoot, "target", "debug", "mandato-desk"));
const TAURI_DRIVER = process.env.TAURI_DRIVER ?? "tauri-driver";
const IDLE_SECONDS = Number(process.env.DESK_IDLE_SECONDS ?? 5);
const MANDATO = join(dirname(BIN), "mandato");
const WITH_RESTORE = process.env.DESK_RESTORE !== "skip";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(check, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

function freePort() {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

/** One WebDriver command; throws with the driver's own message on an error answer. */
async function wd(base, method, path, body) {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json.value ?? json)}`);
  return json.value;
}

// ---- test data through the engine's own APIs ----

const COMMERCE = { code: "76.123.456-0", normalized: "76123456-0", password: "clave-secreta-1" };

const FIRST = { userId: "cust-001", rut: "12.345.678-5", firstName: "Ana", mandateId: "GYM-2026-001" };
const SECOND = { userId: "cust-002", rut: "11.111.111-1", firstName: "Berta", mandateId: "GYM-2026-002" };

/** A customer and a monthly mandate through the merchant API, as a merchant's backend would. */
async function createMandate(engine, apiKey, who = FIRST) {
  const call = await merchantApi(engine, { commerce: COMMERCE.normalized, password: COMMERCE.password, apiKey });
  await call("POST", "/user", {
    customer: {
      userId: who.userId,
      identificationDocument: { type: "RUT", number: who.rut },
      personalInformation: { firstName: who.firstName, lastName: "Pérez" },
      contacts: { email: `${who.userId}@example.cl` },
    },
  });
  const created = await call("POST", "/mandate", {
    customer: { userId: who.userId },
    mandate: {
      id: who.mandateId,
      type: "SUBSCRIPTION",
      name: "Plan mensual",
      charges: { currencyId: "CLP", amount: 29990, periodicity: "MONTHLY", startDate: businessDate(7), count: 12 },
    },
    urls: { paymentWebhook: "https://merchant.example/hooks/payment", activationWebhook: "https://merchant.example/hooks/activation" },
  });
  return created.mandate.internalId;
}

// ---- processes, from /proc ----

function processes() {
  const all = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      let exe = "";
      try {
        exe = realpathSync(`/proc/${name}/exe`);
      } catch {}
      all.push({ pid: Number(name), ppid, comm, exe });
    } catch {}
  }
  return all;
}

function descendants(pid, all = processes()) {
  const out = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift();
    for (const child of all.filter((c) => c.ppid === p)) {
      out.push(child);
      queue.push(child.pid);
    }
  }
  return out;
}

function memory(pid) {
  let status = "";
  try {
    status = readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {} // a helper process that exited since it was listed counts as nothing
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0);
  let pss = 0;
  try {
    pss = Number(/Pss:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0);
  } catch {}
  return { rss, pss };
}

// A process may be reaped between any two reads of /proc, so a missing file means it is gone.
const alive = (pid) => {
  try {
    return !/State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
};

// ---- the test ----

mkdirSync(SHOTS, { recursive: true });
const work = mkdtempSync(join(tmpdir(), "mandato-desk-e2e-"));
const dataDir = join(work, "data");
const appLog = join(work, "app.log");
const exitFile = join(work, "exit-status");
// The app runs through this wrapper so its exit status and log can be checked afterwards.
const launcher = join(work, "launch.sh");
writeFileSync(
  launcher,
  `#!/bin/sh\n"${BIN}" "$@" 2>>"${appLog}"\necho $? > "${exitFile}"\n`,
);
chmodSync(launcher, 0o755);

const port = await freePort();
const driverLog = [];
const driver = spawn(TAURI_DRIVER, ["--port", String(port), "--native-port", String(await freePort())], {
  // The app inherits this environment; the confirmation of the restore is answered for it.
  env: { ...process.env, MANDATO_DATA_DIR: dataDir, MANDATO_LOG: "info", MANDATO_DESK_TEST_CONFIRM: "restore" },
  stdio: ["ignore", "pipe", "pipe"],
});
driver.stdout.on("data", (d) => driverLog.push(d.toString()));
driver.stderr.on("data", (d) => driverLog.push(d.toString()));
const base = `http://127.0.0.1:${port}`;
let session = null;
let failed = false;

function report(label, value) {
  console.log(`desk: ${label}: ${value}`);
}

try {
  await waitFor(() => fetch(`${base}/status`).then((r) => r.ok, () => false), "tauri-driver", 20_000);

  // Launch: the session starts the app; the window is ready when the signed-in shell shows.
  const launched = performance.now();
  const created = await wd(base, "POST", "/session", {
    capabilities: {
      alwaysMatch: {
        browserName: "wry",
        "tauri:options": { application: launcher, args: ["--data-dir", dataDir] },
      },
    },
  });
  session = `/session/${created.sessionId}`;
  const find = async (css) => {
    try {
      const el = await wd(base, "POST", `${session}/element`, { using: "css selector", value: css });
      return Object.values(el)[0];
    } catch {
      return null;
    }
  };
  const text = (id) => wd(base, "GET", `${session}/element/${id}/text`);
  const signedIn = await waitFor(() => find('[data-testid="signed-in-as"]'), "the signed-in shell", 60_000);
  const startToWindow = performance.now() - launched;
  const who = await text(signedIn);
  // The owner account the app made on this first start, named after the machine's user.
  assert.match(who, /^\S+@mandato\.localhost\b/, `signed in as: ${who}`);
  assert.match(who, /Administra(dor|tor)/, who);
  const url = await wd(base, "GET", `${session}/url`);
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/, `the sign-in link left the address bar: ${url}`);
  assert.equal(await find("input[type=password]"), null, "no password form on screen");
  report("window opens signed in", who.trim());

  // The app's own process and the WebKit processes it started.
  const app = await waitFor(() => processes().find((p) => p.exe === BIN), "the app's process");

  // The window's session works the staff API like any other: from the page, a commerce and an
  // API key (the CSRF token comes from the session, the cookie is HttpOnly).
  const made = await wd(base, "POST", `${session}/execute/async`, {
    script: `const done = arguments[arguments.length - 1];
      (async () => {
        const session = (await (await fetch("/admin/api/session")).json()).payload;
        const headers = { "content-type": "application/json", "x-csrf-token": session.csrfToken };
        const post = (path, body) => fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
        const commerce = await post("/admin/api/commerces", ${JSON.stringify({ code: COMMERCE.code, name: "Gimnasio Los Andes", password: COMMERCE.password })});
        const key = await post("/admin/api/api-keys", { commerces: ["${COMMERCE.normalized}"] });
        done({ commerce: commerce.status, key: key.status, apiKey: (await key.json()).payload?.apiKey });
      })().catch((e) => done({ error: String(e) }));`,
    args: [],
  });
  assert.deepEqual([made.commerce, made.key], [201, 201], JSON.stringify(made));
  const engine = new URL(url).origin;
  const mandate = await createMandate(engine, made.apiKey);
  report("staff and merchant APIs", `a commerce, an API key and mandate ${mandate}`);

  // A click reaches the mandates list, which shows that mandate.
  const link = await waitFor(() => find('a[href="/mandates"]'), "the Mandates link");
  await wd(base, "POST", `${session}/element/${link}/click`, {});
  await waitFor(() => find('[data-testid="mandate-search"]'), "the mandates list");
  assert.match(await wd(base, "GET", `${session}/url`), /\/mandates$/);
  const heading = await waitFor(() => find("main h1"), "the mandates heading");
  assert.match(await text(heading), /^(Mandatos|Mandates)$/);
  const row = await waitFor(() => find(`[data-mandate="${mandate}"]`), "the mandate's row");
  assert.match(await text(row), /GYM-2026-001/);
  report("a click reaches", "the mandates list, with the new mandate");

  if (WITH_RESTORE) {
    // A backup with the first mandate, then a second mandate, then the backup restored through
    // the app: the second is gone, the first is there, and the replaced database keeps both.
    const backup = join(work, "with-one-mandate.db");
    execFileSync(MANDATO, ["backup", backup], { env: { ...process.env, MANDATO_DATA_DIR: dataDir } });
    const second = await createMandate(engine, made.apiKey, SECOND);
    // The app's own path: a launch with --restore hands the file to the running instance.
    let origin = engine;
    const restoreThroughApp = async (file, outcome) => {
      const restarts = (readFileSync(appLog, "utf8").match(/the engine runs again/g) ?? []).length;
      const handOver = spawn(BIN, ["--data-dir", dataDir, "--restore", file], { stdio: "ignore" });
      const handOverCode = await new Promise((ok) => handOver.on("exit", ok));
      assert.equal(handOverCode, 0, "the --restore launch hands over to the running instance");
      await waitFor(
        () => (readFileSync(appLog, "utf8").match(/the engine runs again/g) ?? []).length > restarts,
        "the engine back after the restore",
        60_000,
      );
      await waitFor(() => outcome.test(readFileSync(appLog, "utf8")), `the restore's outcome: ${outcome}`);
      const before = origin;
      origin = await waitFor(async () => {
        const now = new URL(await wd(base, "GET", `${session}/url`)).origin;
        return now !== before && (await find('[data-testid="signed-in-as"]')) && now;
      }, "the window signed in on the restarted engine", 60_000);
    };
    // A file that is not a mandato database is refused and changes nothing.
    const junk = join(work, "not-a-backup.db");
    writeFileSync(junk, "these bytes are not a SQLite database");
    await restoreThroughApp(junk, /restore: No se restauró not-a-backup\.db; los datos no cambiaron/);
    assert.deepEqual(readdirSync(dataDir).filter((f) => f.includes("replaced")), [], "a refused restore replaces nothing");
    // The refusal is shown in a native dialog, an X window of its own titled like the action.
    await waitFor(
      () => /"Restaurar desde una copia"/.test(execFileSync("xwininfo", ["-root", "-tree"]).toString()),
      "the native error dialog",
    );
    report("a refused restore", "a file that is not a mandato database changes nothing; the engine runs again");
    await restoreThroughApp(backup, /restore: stopping the engine[\s\S]*restored a backup; the replaced database is kept/);
    const mandates = await waitFor(() => find('a[href="/mandates"]'), "the Mandates link");
    await wd(base, "POST", `${session}/element/${mandates}/click`, {});
    await waitFor(() => find(`[data-mandate="${mandate}"]`), "the backed-up mandate's row");
    assert.equal(await find(`[data-mandate="${second}"]`), null, "the mandate made after the backup is gone");
    const replaced = readdirSync(dataDir).filter((f) => /^mandato\.db\.replaced-\d{8}T\d{6}Z$/.test(f));
    assert.equal(replaced.length, 1, `replaced databases: ${readdirSync(dataDir)}`);
    const count = (db) =>
      execFileSync("python3", [
        "-c",
        "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from mandates').fetchone()[0])",
        db,
      ])
        .toString()
        .trim();
    assert.equal(count(join(dataDir, replaced[0])), "2", "the replaced database keeps both mandates");
    assert.equal(count(join(dataDir, "mandato.db")), "1", "the restored database has the backed-up one");
    report("restore from a backup", `mandate ${second} gone, ${mandate} back; the replaced database kept as ${replaced[0]}`);
  }

  // Idle: let the page settle, then measure memory.
  await sleep(IDLE_SECONDS * 1000);
  const webkit = descendants(app.pid);
  const parts = [app, ...webkit].map((p) => ({ ...p, ...memory(p.pid) }));
  const rssMb = parts.reduce((s, p) => s + p.rss, 0) / 1024;
  const pssMb = parts.reduce((s, p) => s + p.pss, 0) / 1024;
  report(
    `idle memory after ${IDLE_SECONDS} s`,
    `RSS ${rssMb.toFixed(0)} MB, PSS ${pssMb.toFixed(0)} MB (` +
      parts.map((p) => `${p.comm} ${(p.rss / 1024).toFixed(0)} MB`).join(", ") +
      ")",
  );
  assert.ok(webkit.some((p) => /WebKitWebProces/.test(p.comm)), `WebKit processes: ${webkit.map((p) => p.comm)}`);

  // Screenshots: the page through WebDriver, the whole X screen with ImageMagick.
  const page = join(SHOTS, "mandates.png");
  writeFileSync(page, Buffer.from(await wd(base, "GET", `${session}/screenshot`), "base64"));
  const screen = join(SHOTS, "screen.png");
  execFileSync("/usr/bin/import", ["-window", "root", screen]);
  for (const file of [page, screen]) {
    const colours = Number(execFileSync("/usr/bin/identify", ["-format", "%k", file]).toString());
    assert.ok(colours > 32, `${file} looks blank: ${colours} colours`);
    report("screenshot", `${file} (${colours} colours)`);
  }

  // One instance per data directory: a second launch hands over to the first and leaves.
  const second = spawn(BIN, ["--data-dir", dataDir], { stdio: ["ignore", "ignore", "pipe"] });
  let secondErr = "";
  second.stderr.on("data", (d) => (secondErr += d));
  const secondCode = await Promise.race([
    new Promise((ok) => second.on("exit", (code) => ok(code))),
    sleep(30_000).then(() => "still running"),
  ]);
  if (secondCode === "still running") second.kill("SIGKILL");
  assert.equal(secondCode, 0, `a second instance should leave at once: ${secondErr}`);
  assert.ok(!/starting the engine/.test(secondErr), "the second instance started an engine");
  assert.ok(alive(app.pid), "the first instance still runs");
  await wd(base, "GET", `${session}/title`);
  report("second launch", "handed over to the running instance and exited 0");

  report("start-to-window", `${startToWindow.toFixed(0)} ms (launch to signed-in UI visible)`);
  const up = /Mandato Desk is up.* ms=(\d+)/.exec(readFileSync(appLog, "utf8"));
  if (up) report("in-app start to window created", `${up[1]} ms`);

  // Closing the window quits: the engine shuts down gracefully, then the process exits 0.
  const closing = performance.now();
  await wd(base, "DELETE", `${session}/window`);
  await waitFor(() => !alive(app.pid), "the app to exit", 30_000);
  report("close to exit", `${(performance.now() - closing).toFixed(0)} ms`);
  // The wrapper writes the exit status once the app is gone; the driver's session is ended only
  // afterwards, since ending it may take the wrapper down before it writes.
  // The driver sometimes takes the wrapper down with the window before it writes; the app's
  // last log line, written as it returns its code, says the same.
  const status = await waitFor(() => {
    if (existsSync(exitFile)) return readFileSync(exitFile, "utf8").trim();
    const exited = /Mandato Desk exits code=(\d+)/.exec(readFileSync(appLog, "utf8"));
    return exited && !alive(app.pid) ? exited[1] : null;
  }, "the exit status");
  await wd(base, "DELETE", session).catch(() => {});
  session = null;
  const log = readFileSync(appLog, "utf8");
  assert.equal(status, "0", `exit status; log:\n${log}`);
  assert.match(log, /shutting down: finishing in-flight requests and work/);
  assert.match(log, /engine stopped cleanly/);
  // The refused restore's error is the one expected.
  const unexpected = log.split("\n").filter((line) => /ERROR|panicked/.test(line) && !/No se restauró not-a-backup/.test(line));
  assert.deepEqual(unexpected, [], `errors in the log:\n${log}`);
  const db = join(dataDir, "mandato.db");
  const check = execFileSync("python3", [
    "-c",
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); " +
      "print(c.execute('pragma integrity_check').fetchone()[0], c.execute('select count(*) from staff').fetchone()[0])",
    db,
  ])
    .toString()
    .trim();
  assert.equal(check, "ok 1", `database check: ${check}`);
  report("stopped cleanly", "exit status 0, graceful shutdown logged, database integrity ok");

  // Started again on the same data, it signs in as the same owner (no new account), and
  // SIGTERM stops it through the same graceful shutdown.
  const again = spawn(BIN, ["--data-dir", dataDir], { stdio: ["ignore", "ignore", "pipe"] });
  let againLog = "";
  again.stderr.on("data", (d) => (againLog += d));
  const againExit = new Promise((ok) => again.on("exit", (code, signal) => ok({ code, signal })));
  await waitFor(() => /Mandato Desk is up/.test(againLog), "the second start", 60_000);
  assert.ok(!/created the owner account/.test(againLog), againLog);
  await sleep(1000);
  again.kill("SIGTERM");
  const stopped = await Promise.race([againExit, sleep(30_000).then(() => ({ code: "still running" }))]);
  assert.deepEqual(stopped, { code: 0, signal: null }, againLog);
  assert.match(againLog, /signal received: quitting[\s\S]*engine stopped cleanly/);
  report("restart and SIGTERM", "same owner, exit status 0 after the graceful shutdown");
} catch (e) {
  failed = true;
  console.error(`desk e2e FAILED: ${e.stack ?? e}`);
  if (existsSync(appLog)) console.error(`--- app log\n${readFileSync(appLog, "utf8")}`);
  console.error(`--- tauri-driver\n${driverLog.join("")}`);
  if (session) {
    await wd(base, "GET", `${session}/screenshot`)
      .then((png) => writeFileSync(join(SHOTS, "failure.png"), Buffer.from(png, "base64")))
      .catch(() => {});
    await wd(base, "DELETE", session).catch(() => {});
  }
} finally {
  driver.kill();
  // Nothing of the app may outlive the test.
  for (const p of processes().filter((p) => p.exe === BIN)) {
    try {
      process.kill(p.pid, "SIGKILL");
      failed = true;
      console.error(`desk e2e: killed a leftover app process ${p.pid}`);
    } catch {}
  }
}
// The fresh data directory and logs stay for a look after a failure only.
if (!failed) rmSync(work, { recursive: true, force: true });
else console.error(`desk e2e: data and logs kept in ${work}`);
process.exit(failed ? 1 : 0);
