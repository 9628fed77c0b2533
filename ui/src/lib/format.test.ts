import { describe, expect, it } from "vitest";
import { formatBytes, formatDate, formatDateTime, formatExactDecimal, formatExactMoney, parseDate } from "./format";

describe("dates", () => {
  it("show one format per language, in Chile's time", () => {
    // 12:00 UTC is 09:00 in Santiago in November (UTC-3).
    expect(formatDateTime("2026-11-25T12:00:05Z", "es")).toBe("25-11-2026 09:00:05");
    expect(formatDateTime("2026-11-25T12:00:05Z", "en")).toBe("2026-11-25 09:00:05");
    // 02:00 UTC is still the day before in Santiago.
    expect(formatDateTime("2026-11-26T02:00:00Z", "es")).toBe("25-11-2026 23:00:00");
    expect(formatDate("2026-11-05", "es")).toBe("05-11-2026");
    expect(formatDate("2026-11-05", "en")).toBe("2026-11-05");
  });
  it("read what a person types", () => {
    expect(parseDate("5-11-2026", "es")).toBe("2026-11-05");
    expect(parseDate("05/11/2026", "es")).toBe("2026-11-05");
    expect(parseDate("2026-11-05", "es")).toBe("2026-11-05");
    expect(parseDate("2026-11-05", "en")).toBe("2026-11-05");
    expect(parseDate("05-11-2026", "en")).toBeNull();
    expect(parseDate("31-02-2026", "es")).toBeNull();
    expect(parseDate("mañana", "es")).toBeNull();
  });
});

describe("formatExactMoney", () => {
  it("writes CLP without decimals and the UF with four, from exact text", () => {
    expect(formatExactMoney("1259580", "CLP", "es")).toBe("$1.259.580");
    expect(formatExactMoney("1259580", "CLP", "en")).toBe("CLP 1,259,580");
    expect(formatExactMoney("1.2345", "CLF", "es")).toBe("UF 1,2345");
    expect(formatExactMoney("12345678901234.5678", "CLF", "en")).toBe("UF 12,345,678,901,234.5678");
    expect(formatExactMoney("0.1", "CLF", "es")).toBe("UF 0,1000");
    expect(formatExactMoney("10.5", "USD", "en")).toBe("$10.50");
    expect(formatExactMoney("0", "CLP", "es")).toBe("$0");
    expect(formatExactMoney("99.995", "USD", "en")).toBe("$100.00");
  });
});

describe("numbers in the language's form", () => {
  it("writes UF values and sizes the Chilean way in Spanish", () => {
    expect(formatExactDecimal("39733.15", "es")).toBe("39.733,15");
    expect(formatExactDecimal("39733.15", "en")).toBe("39,733.15");
    expect(formatExactDecimal("1000", "es")).toBe("1.000");
    expect(formatExactDecimal("raro", "es")).toBe("raro");
    expect(formatBytes(23654, "es")).toBe("23,1 KiB");
    expect(formatBytes(23654, "en")).toBe("23.1 KiB");
    expect(formatBytes(812, "es")).toBe("812 B");
    expect(formatBytes(5 * 1024 * 1024, "es")).toBe("5,0 MiB");
  });
});
