import { CURRENCY_DECIMALS, type Lang } from "./money";

const LOCALES: Record<Lang, string> = { es: "es-CL", en: "en-US" };

/** The business time zone: every time staff read is Chile's, wherever the browser is. */
export const BUSINESS_TIME_ZONE = "America/Santiago";

/** How a date is written in each language, for labels and placeholders. */
export const DATE_PATTERN: Record<Lang, string> = { es: "dd-mm-aaaa", en: "yyyy-mm-dd" };

function joinDate(y: string, m: string, d: string, lang: Lang): string {
  return lang === "es" ? `${d}-${m}-${y}` : `${y}-${m}-${d}`;
}

/**
 * A stored timestamp (RFC 3339 UTC) in the business time zone, one format per language:
 * `25-11-2026 16:52:05` in Spanish, `2026-11-25 16:52:05` in English.
 */
export function formatDateTime(value: string | null | undefined, lang: Lang, timeZone = BUSINESS_TIME_ZONE): string {
  if (!value) return "—";
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return value;
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      hourCycle: "h23",
    })
      .formatToParts(date)
      .map((p) => [p.type, p.value]),
  );
  return `${joinDate(parts.year, parts.month, parts.day, lang)} ${parts.hour}:${parts.minute}:${parts.second}`;
}

/** A business date (`YYYY-MM-DD`), written as a person reads it. */
export function formatDate(value: string | null | undefined, lang: Lang): string {
  if (!value) return "—";
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return value;
  const [, y, m, d] = match;
  return joinDate(y, m, d, lang);
}

/**
 * A date typed by a person in the language's format (`25-11-2026` or `25/11/2026` in Spanish,
 * `2026-11-25` in English; the ISO form is accepted in both) as `YYYY-MM-DD`; `null` when it
 * is not a real date.
 */
export function parseDate(text: string, lang: Lang): string | null {
  const trimmed = text.trim();
  let y: string, m: string, d: string;
  const iso = /^(\d{4})[-/](\d{1,2})[-/](\d{1,2})$/.exec(trimmed);
  const local = /^(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})$/.exec(trimmed);
  if (iso) [, y, m, d] = iso;
  else if (local && lang === "es") [, d, m, y] = local;
  else return null;
  const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  if (date.getUTCFullYear() !== Number(y) || date.getUTCMonth() !== Number(m) - 1 || date.getUTCDate() !== Number(d)) {
    return null;
  }
  return `${y}-${m.padStart(2, "0")}-${d.padStart(2, "0")}`;
}

export function formatNumber(value: number, lang: Lang, fractionDigits?: number): string {
  const digits = fractionDigits === undefined ? {} : { minimumFractionDigits: fractionDigits, maximumFractionDigits: fractionDigits };
  return new Intl.NumberFormat(LOCALES[lang], digits).format(value);
}

/** A size in bytes as people read it: `812 B`, `23,1 KiB` in Spanish (`23.1 KiB` in English), `4,0 MiB`. */
export function formatBytes(bytes: number, lang: Lang): string {
  if (bytes < 1024) return `${formatNumber(bytes, lang)} B`;
  if (bytes < 1024 * 1024) return `${formatNumber(bytes / 1024, lang, 1)} KiB`;
  return `${formatNumber(bytes / (1024 * 1024), lang, 1)} MiB`;
}

/** Thousands groups and the decimal mark of the language: `39.733,15` in Spanish, `39,733.15` in English. */
function groupDigits(units: string, fraction: string, lang: Lang): string {
  const group = lang === "es" ? "." : ",";
  const point = lang === "es" ? "," : ".";
  const grouped = units.replace(/\B(?=(\d{3})+(?!\d))/g, group);
  return fraction ? `${grouped}${point}${fraction}` : grouped;
}

/**
 * An exact decimal written as text by the server (a UF value, `"39733.15"`) in the language's
 * form, every decimal kept and no binary float in between: `39.733,15` / `39,733.15`.
 */
export function formatExactDecimal(value: string, lang: Lang): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(value.trim());
  if (!match) return value;
  const [, sign, whole, fraction = ""] = match;
  return `${sign}${groupDigits(whole.replace(/^0+(?=\d)/, ""), fraction, lang)}`;
}

/**
 * An exact decimal written as text by the server (`"1259580"`, `"1.2345"`) as money, without
 * passing through a binary float: CLP without decimals, the UF (CLF) with four, USD with two.
 */
export function formatExactMoney(value: string, currency: string, lang: Lang): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(value.trim());
  if (!match) return value;
  const [, sign, whole, fraction = ""] = match;
  const code = currency.toUpperCase();
  const decimals = CURRENCY_DECIMALS[code] ?? 2;
  const [units, cents] = roundDecimal(whole, fraction, decimals);
  const digits = groupDigits(units, decimals > 0 ? cents : "", lang);
  const negative = sign === "-" && /[1-9]/.test(units + cents) ? "-" : "";
  switch (code) {
    case "CLP":
      return lang === "es" ? `${negative}$${digits}` : `${negative}CLP ${digits}`;
    case "CLF":
      return `${negative}UF ${digits}`;
    case "USD":
      return lang === "es" ? `${negative}US$${digits}` : `${negative}$${digits}`;
    default:
      return `${negative}${code} ${digits}`;
  }
}

/** Rounds a decimal given as digit strings to `decimals` places, half away from zero. */
function roundDecimal(whole: string, fraction: string, decimals: number): [string, string] {
  const kept = fraction.padEnd(decimals, "0").slice(0, decimals);
  const roundUp = (fraction[decimals] ?? "0") >= "5";
  if (!roundUp) return [whole.replace(/^0+(?=\d)/, ""), kept];
  const digits = (whole + kept).split("").map(Number);
  let i = digits.length - 1;
  while (i >= 0) {
    if (digits[i] === 9) {
      digits[i] = 0;
      i -= 1;
    } else {
      digits[i] += 1;
      break;
    }
  }
  const all = (i < 0 ? "1" : "") + digits.join("");
  const units = all.slice(0, all.length - decimals) || "0";
  return [units.replace(/^0+(?=\d)/, ""), all.slice(all.length - decimals)];
}
