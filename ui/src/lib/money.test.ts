import { describe, expect, it } from "vitest";
import { fitsCurrency, formatMoney, parseAmount } from "./money";

describe("formatMoney", () => {
  it("writes pesos without decimals, with Chilean thousands", () => {
    expect(formatMoney(29990, "CLP")).toBe("$29.990");
    expect(formatMoney(1234567, "CLP", "en")).toBe("CLP 1,234,567");
  });
  it("writes UF with four decimals and dollars with two", () => {
    expect(formatMoney(1.2345, "CLF")).toBe("UF 1,2345");
    expect(formatMoney(10.5, "USD")).toBe("US$10,50");
    expect(formatMoney(10.5, "USD", "en")).toBe("$10.50");
  });
  it("handles negatives and missing amounts", () => {
    expect(formatMoney(-500, "CLP")).toBe("-$500");
    expect(formatMoney(null, "CLP")).toBe("—");
  });
});

describe("parseAmount", () => {
  it("reads Spanish and English writing", () => {
    expect(parseAmount("29.990")).toBe(29990);
    expect(parseAmount("$29.990")).toBe(29990);
    expect(parseAmount("1,2345")).toBe(1.2345);
    expect(parseAmount("29,990.5", "en")).toBe(29990.5);
  });
  it("refuses what is not an amount", () => {
    expect(parseAmount("")).toBeNull();
    expect(parseAmount("abc")).toBeNull();
  });
});

describe("fitsCurrency", () => {
  it("allows the currency's decimals only", () => {
    expect(fitsCurrency(29990, "CLP")).toBe(true);
    expect(fitsCurrency(29990.5, "CLP")).toBe(false);
    expect(fitsCurrency(1.2345, "CLF")).toBe(true);
    expect(fitsCurrency(1.23456, "CLF")).toBe(false);
  });
});
