// What went wrong delivering a webhook, in words staff can act on. The server keeps the
// technical text of each failed attempt (`connect: error sending request for url (…): …`,
// `timeout: …`, an HTTP status); the screens say what it means and keep the text at hand.
import type { Key } from "./i18n";

export interface DeliveryProblem {
  key: Key;
  vars?: Record<string, string | number>;
}

/**
 * The problem of an attempt, or of an event's last attempt: by its error text first (the
 * attempt never got an answer), else by its HTTP status. `null` when nothing went wrong.
 */
export function deliveryProblem(error: string | null | undefined, status?: number | null): DeliveryProblem | null {
  const text = (error ?? "").trim();
  if (text) {
    if (text === "DESTINATION_NOT_ALLOWED") return { key: "delivery.notAllowed" };
    if (/^refused: .*https/i.test(text)) return { key: "delivery.httpsOnly" };
    if (/^timeout\b|timed out|deadline/i.test(text)) return { key: "delivery.timeout" };
    if (/certificate|\btls\b|\bssl\b|handshake|unknownissuer|x509/i.test(text)) return { key: "delivery.tls" };
    if (/dns error|failed to lookup|name or service not known|no such host|nodename nor servname/i.test(text)) {
      return { key: "delivery.dns" };
    }
    if (/^connect\b|connection (refused|reset|closed)|os error|unreachable/i.test(text)) return { key: "delivery.connect" };
    return { key: "delivery.failed" };
  }
  if (status && status >= 500) return { key: "delivery.serverError", vars: { status } };
  if (status && status >= 400) return { key: "delivery.refused", vars: { status } };
  if (status && status >= 300) return { key: "delivery.redirect", vars: { status } };
  return null;
}
