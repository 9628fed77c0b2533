import { describe, expect, it } from "vitest";
import { checkDigit, looksLikeRut, wrongCheckDigit } from "./rut";

describe("commerce codes written as RUTs", () => {
  it("computes the modulo-11 check digit", () => {
    expect(checkDigit(76123456)).toBe("0");
    expect(checkDigit(12345678)).toBe("5");
    expect(checkDigit(76543210)).toBe("3");
  });

  it("tells RUT-shaped codes from issued codes", () => {
    expect(looksLikeRut("76.123.456-0")).toBe(true);
    expect(looksLikeRut(" 12345678-k ")).toBe(true);
    expect(looksLikeRut("GYM-SUR")).toBe(false);
    expect(looksLikeRut("76123456")).toBe(false);
    expect(looksLikeRut("76123456-10")).toBe(false);
  });

  it("names the right digit of a mistyped RUT", () => {
    expect(wrongCheckDigit("76.123.456-1")).toEqual({ body: "76123456", digit: "0" });
    expect(wrongCheckDigit("76.123.456-0")).toBeNull();
    expect(wrongCheckDigit("GYM-SUR")).toBeNull();
  });
});
