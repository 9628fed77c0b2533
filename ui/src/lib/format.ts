import type { Lang } from "./money";

const LOCALES: Record<Lang, string> = { es: "es-CL", en: "en-US" };

/** A stored timestamp (RFC 3339 UTC) in the business time zone. */
export function formatDateTime(value: string | null | undefined, lang: Lang, timeZone = "America/Santiago"): string {
  if (!value) return "—";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  return new Intl.DateTimeFormat(LOCALES[lang], {
    dateStyle: "short",
    timeStyle: "medium",
    timeZone,
  }).format(date);
}

/** A business date (`YYYY-MM-DD`), written as a person reads it. */
export function formatDate(value: string | null | undefined, lang: Lang): string {
  if (!value) return "—";
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return value;
  const [, y, m, d] = match;
  return lang === "es" ? `${d}-${m}-${y}` : `${y}-${m}-${d}`;
}

export function formatNumber(value: number, lang: Lang): string {
  return new Intl.NumberFormat(LOCALES[lang]).format(value);
}
