import { describe, expect, it } from "vitest";
import { checkDigit, formatRut, looksLikeRut, wrongCheckDigit } from "./rut";

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

describe("RUTs as shown", () => {
  it("always carry thousands dots and an upper-case check digit", () => {
    expect(formatRut("12345678-5")).toBe("12.345.678-5");
    expect(formatRut("12.345.678-5")).toBe("12.345.678-5");
    expect(formatRut("123456785")).toBe("12.345.678-5");
    expect(formatRut("9876543-k")).toBe("9.876.543-K");
    expect(formatRut("P1234567")).toBe("P1234567");
    expect(formatRut(null)).toBe("—");
  });
});
