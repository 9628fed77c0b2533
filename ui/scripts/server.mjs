// Starts a real `mandato serve` on a free loopback port with a fresh data directory, for the
// API generator and the browser tests. Never touches the developer's own data directory.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
export const repoRoot = resolve(here, "..", "..");
export const binary = process.env.MANDATO_BIN ?? join(repoRoot, "target", "debug", "mandato");

export function freePort() {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.unref();
    server.on("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
  });
}

/** Runs a mandato command against a data directory and answers its stdout. */
export function mandato(dataDir, args, input) {
  return new Promise((ok, fail) => {
    const child = spawn(binary, ["--data-dir", dataDir, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", fail);
    child.on("close", (code) =>
      code === 0 ? ok(out) : fail(new Error(`mandato ${args.join(" ")} exited ${code}: ${err}`)),
    );
    // A command that reads no input may exit before its stdin is written or closed; the pipe
    // it left is not an error of the test (EPIPE), its exit code is what counts.
    child.stdin.on("error", (e) => {
      if (e.code !== "EPIPE") fail(e);
    });
    if (input === undefined) child.stdin.end();
    else child.stdin.end(input);
  });
}

/**
 * Starts the server; answers { base, dataDir, stop }. `businessDays` is `serve`'s
 * `--business-days`: a test whose charges are due today passes `every-day`, so that it charges
 * on a weekend or a holiday as on any other day.
 */
export async function startServer({ keepData = false, businessDays = "chile" } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), "mandato-ui-"));
  const port = await freePort();
  const args = ["serve", "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir, "--business-days", businessDays];
  const child = spawn(binary, args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, MANDATO_LOG: process.env.MANDATO_LOG ?? "warn" },
  });
  let log = "";
  child.stderr.on("data", (d) => {
    log += d;
    if (log.length > 100_000) log = log.slice(-50_000);
  });
  const exited = new Promise((ok) => child.on("exit", ok));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`mandato serve exited early:\n${log}`);
    try {
      const r = await fetch(`${base}/admin/api/setup`);
      if (r.ok) break;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`mandato serve did not answer within 60 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    dataDir,
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(timer);
      }
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
