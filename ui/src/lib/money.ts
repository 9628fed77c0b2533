// Amounts as the API writes them: JSON numbers in the currency's major unit. CLP has no
// decimals, CLF (the UF) four, USD two; the UI never rounds them differently.

export const CURRENCY_DECIMALS: Record<string, number> = { CLP: 0, CLF: 4, USD: 2 };

export type Lang = "es" | "en";

const LOCALES: Record<Lang, string> = { es: "es-CL", en: "en-US" };

/** `$29.990` (CLP), `UF 1,2345` (CLF), `US$10,50` (USD) in Spanish; `CLP 29,990` style in English. */
export function formatMoney(amount: number | null | undefined, currency: string | null | undefined, lang: Lang = "es"): string {
  if (amount === null || amount === undefined || Number.isNaN(amount)) return "—";
  const code = (currency ?? "CLP").toUpperCase();
  const decimals = CURRENCY_DECIMALS[code] ?? 2;
  const number = new Intl.NumberFormat(LOCALES[lang], {
    minimumFractionDigits: decimals,
    maximumFractionDigits: decimals,
  }).format(amount);
  const negative = number.startsWith("-");
  const digits = negative ? number.slice(1) : number;
  const sign = negative ? "-" : "";
  switch (code) {
    case "CLP":
      return lang === "es" ? `${sign}$${digits}` : `${sign}CLP ${digits}`;
    case "CLF":
      return `${sign}UF ${digits}`;
    case "USD":
      return lang === "es" ? `${sign}US$${digits}` : `${sign}$${digits}`;
    default:
      return `${sign}${code} ${digits}`;
  }
}

/** Parses an amount typed by a person (`29.990`, `29990`, `1,2345` in Spanish) into a number. */
export function parseAmount(text: string, lang: Lang = "es"): number | null {
  const trimmed = text.trim().replace(/\s|\$|UF|US\$/g, "");
  if (trimmed === "") return null;
  const normalized =
    lang === "es" ? trimmed.replace(/\./g, "").replace(",", ".") : trimmed.replace(/,/g, "");
  if (!/^-?\d+(\.\d+)?$/.test(normalized)) return null;
  return Number(normalized);
}

/** Whether an amount has no more decimals than its currency allows. */
export function fitsCurrency(amount: number, currency: string): boolean {
  const decimals = CURRENCY_DECIMALS[currency] ?? 2;
  const text = String(amount);
  const fraction = text.includes(".") ? text.split(".")[1].length : 0;
  return fraction <= decimals;
}
