// CSV export of long lists (RFC 4180: fields with commas, quotes or line breaks are quoted,
// quotes doubled). A byte-order mark lets spreadsheet programs read accents right.

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

export function csvField(value: unknown): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  // A leading =, +, - or @ would run as a formula in a spreadsheet, and so would one after a
  // leading tab, carriage return or line feed, which spreadsheets skip (OWASP CSV injection).
  const safe = /^[=+\-@\t\r\n]/.test(text) && !/^-?\d+(\.\d+)?$/.test(text) ? `'${text}` : text;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function toCsv<T>(rows: T[], columns: Column<T>[]): string {
  const lines = [columns.map((c) => csvField(c.header)).join(",")];
  for (const row of rows) {
    lines.push(columns.map((c) => csvField(c.value(row))).join(","));
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
