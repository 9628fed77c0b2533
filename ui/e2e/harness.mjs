// What the browser tests share: Debian's Chromium and its flags, where screenshots go, the
// merchant API client they seed data with, and the Santiago business date.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../scripts/server.mjs";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"];
export const SHOTS = join(repoRoot, "target", "ui-screenshots");
mkdirSync(SHOTS, { recursive: true });

/**
 * The merchant API of one commerce, signed in as a client would be: the eight common headers
 * (a fresh correlationId each call), the API key, and a session token from the JWE login.
 * Answers `call(method, path, body)`, which asserts success and returns the payload.
 */
export async function merchantApi(base, { commerce, password, apiKey }) {
  let token = null;
  const call = async (method, path, body) => {
    const headers = {
      "content-type": "application/json",
      country: "CL",
      commerce,
      channel: "WEB",
      requestDateTime: new Date().toISOString(),
      correlationId: randomUUID(),
      processId: "HYBRID",
      salesExecutiveId: "SE-01",
      "x-api-key": apiKey,
    };
    if (token) headers.authorization = `Bearer ${token}`;
    const r = await fetch(`${base}/api/v1${path}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
    const json = await r.json();
    assert.ok(r.ok, `${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
    return json.payload;
  };
  const key = await (await fetch(`${base}/api/v1/.well-known/jwe-public-key`)).json();
  const { token: jwe } = await call("POST", "/jwe/encrypt", { password, publicKey: key.payload.publicKey });
  token = (await call("POST", "/login", { username: commerce, password: jwe })).token;
  return call;
}

/** The business date (America/Santiago) `daysFromToday` days from today, `YYYY-MM-DD`. */
export function businessDate(daysFromToday) {
  const today = new Intl.DateTimeFormat("en-CA", { timeZone: "America/Santiago" }).format(new Date());
  const d = new Date(`${today}T12:00:00Z`);
  d.setUTCDate(d.getUTCDate() + daysFromToday);
  return d.toISOString().slice(0, 10);
}
