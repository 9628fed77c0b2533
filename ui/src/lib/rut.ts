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
