/**
 * The RUT rule commerce codes follow on the server: a code written as a RUT (digits, optional
 * thousands dots, a dash and one check digit) must have the right modulo-11 check digit. The
 * form says so as it is typed; the server decides.
 */

/** Whether `code` is written as a RUT rather than as an issued code. */
export function looksLikeRut(code: string): boolean {
  return /^[0-9.]+-[0-9kK]$/.test(code.trim());
}

/** The check digit of a RUT body: weights 2..7 from the right, `K` for 10 and `0` for 11. */
export function checkDigit(body: number): string {
  let sum = 0;
  let weight = 2;
  for (let rest = body; rest > 0; rest = Math.floor(rest / 10)) {
    sum += (rest % 10) * weight;
    weight = weight === 7 ? 2 : weight + 1;
  }
  const digit = 11 - (sum % 11);
  return digit === 11 ? "0" : digit === 10 ? "K" : String(digit);
}

/** For a RUT-shaped code whose check digit is wrong: its body and the right digit. */
export function wrongCheckDigit(code: string): { body: string; digit: string } | null {
  if (!looksLikeRut(code)) return null;
  const [bodyText, given] = code.trim().split("-");
  const digits = bodyText.replace(/\./g, "");
  if (!/^[0-9]{1,9}$/.test(digits)) return null;
  const body = Number(digits);
  const digit = checkDigit(body);
  return given.toUpperCase() === digit ? null : { body: String(body), digit };
}

/**
 * A RUT as Chileans write it, with thousands dots and the check digit after a dash
 * (`12.345.678-5`), whatever way it was stored (`12345678-5`, `12.345.678-5`, `123456785`).
 * Anything that is not a RUT (a passport number) is shown as it came.
 */
export function formatRut(value: string | null | undefined): string {
  if (!value) return "—";
  const compact = value.trim().replace(/[.\s]/g, "");
  const match = /^(\d{1,9})-?([0-9kK])$/.exec(compact);
  if (!match) return value;
  const body = match[1].replace(/^0+(?=\d)/, "").replace(/\B(?=(\d{3})+(?!\d))/g, ".");
  return `${body}-${match[2].toUpperCase()}`;
}
