// CSV export of long lists (RFC 4180: fields with the separator, quotes or line breaks are
// quoted, quotes doubled). A byte-order mark lets spreadsheet programs read accents right.
// Excel in Spanish splits columns on ";" and reads "1,5" as a number; in English on ",".

import { formatDate, formatDateTime } from "./format";
import type { Lang } from "./money";

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

export type Separator = ";" | ",";

export const SEPARATOR_STORAGE_KEY = "mandato.csvSeparator";

/** The separator this browser chose last, or the one its language's Excel expects. */
export function storedSeparator(lang: Lang): Separator {
  try {
    const stored = localStorage.getItem(SEPARATOR_STORAGE_KEY);
    if (stored === ";" || stored === ",") return stored;
  } catch {
    // Storage unavailable: the language decides.
  }
  return lang === "es" ? ";" : ",";
}

export function rememberSeparator(separator: Separator): void {
  try {
    localStorage.setItem(SEPARATOR_STORAGE_KEY, separator);
  } catch {
    // Private mode: the choice lasts for this page only.
  }
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/**
 * A cell as a person of that language reads it: timestamps in Chile's time (never UTC), dates
 * in the language's format, and with ";" (Spanish Excel) decimals with a comma.
 */
export function localCell(value: unknown, lang: Lang, separator: Separator): unknown {
  if (typeof value === "string" && TIMESTAMP.test(value)) return formatDateTime(value, lang);
  if (typeof value === "string" && DATE.test(value)) return formatDate(value, lang);
  if (typeof value === "number" && separator === ";") return String(value).replace(".", ",");
  return value;
}

export function csvField(value: unknown, separator: Separator = ","): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  // A leading =, +, - or @ would run as a formula in a spreadsheet, and so would one after a
  // leading tab, carriage return or line feed, which spreadsheets skip (OWASP CSV injection).
  const safe = /^[=+\-@\t\r\n]/.test(text) && !/^-?\d+([.,]\d+)?$/.test(text) ? `'${text}` : text;
  const special = safe.includes(separator) || /["\r\n]/.test(safe);
  return special ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/**
 * The rows as CSV for Excel: a byte-order mark, the headers, one line per row with CRLF.
 * With `lang`, cells are written for a person of that language (see `localCell`).
 */
export function toCsv<T>(rows: T[], columns: Column<T>[], separator: Separator = ",", lang?: Lang): string {
  const cell = (value: unknown) => csvField(lang ? localCell(value, lang, separator) : value, separator);
  const lines = [columns.map((c) => csvField(c.header, separator)).join(separator)];
  for (const row of rows) {
    lines.push(columns.map((c) => cell(c.value(row))).join(separator));
  }
  return "\uFEFF" + lines.join("\r\n") + "\r\n";
}

export function downloadCsv(filename: string, csv: string): void {
  const blob = new Blob([csv], { type: "text/csv;charset=utf-8" });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/**
 * Follows a keyset-paged list to its end (or `max` rows), for an export of everything the
 * filters select rather than just the page on screen.
 */
export async function collectPages<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | null }>,
  max = 10_000,
  onProgress?: (count: number) => void,
): Promise<{ rows: T[]; truncated: boolean }> {
  const rows: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await fetchPage(cursor);
    rows.push(...page.items);
    onProgress?.(rows.length);
    if (rows.length >= max) return { rows: rows.slice(0, max), truncated: true };
    if (!page.nextCursor) return { rows, truncated: false };
    cursor = page.nextCursor;
  }
}
