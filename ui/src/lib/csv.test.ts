import { describe, expect, it } from "vitest";
import { collectPages, csvField, toCsv } from "./csv";

describe("csvField", () => {
  it("quotes only what needs it", () => {
    expect(csvField("Ana")).toBe("Ana");
    expect(csvField("Pérez, Ana")).toBe('"Pérez, Ana"');
    expect(csvField('dice "hola"')).toBe('"dice ""hola"""');
    expect(csvField("línea 1\nlínea 2")).toBe('"línea 1\nlínea 2"');
    expect(csvField(null)).toBe("");
    expect(csvField(29990)).toBe("29990");
    expect(csvField({ a: 1 })).toBe('"{""a"":1}"');
  });
  it("defuses spreadsheet formulas but keeps negative numbers", () => {
    expect(csvField("=HYPERLINK(1)")).toBe("'=HYPERLINK(1)");
    expect(csvField("-500")).toBe("-500");
    expect(csvField(-500)).toBe("-500");
    expect(csvField("+56 9 1234")).toBe("'+56 9 1234");
    expect(csvField("@SUM(A1)")).toBe("'@SUM(A1)");
  });
  it("defuses formulas behind a leading tab, carriage return or line feed", () => {
    expect(csvField("\t=1+1")).toBe("'\t=1+1");
    expect(csvField("\r=1+1")).toBe("\"'\r=1+1\"");
    expect(csvField("\n=1+1")).toBe("\"'\n=1+1\"");
    expect(csvField("\tAna")).toBe("'\tAna");
    // Inside a field they are text as usual.
    expect(csvField("Ana\tPérez")).toBe("Ana\tPérez");
  });
});

describe("toCsv", () => {
  it("writes a header, one line per row, CRLF and a BOM", () => {
    const csv = toCsv(
      [
        { id: "M-1", amount: 29990 },
        { id: "M,2", amount: 10 },
      ],
      [
        { header: "Mandato", value: (r) => r.id },
        { header: "Monto", value: (r) => r.amount },
      ],
    );
    expect(csv).toBe('\uFEFFMandato,Monto\r\nM-1,29990\r\n"M,2",10\r\n');
  });
});

describe("collectPages", () => {
  it("follows cursors to the end, or stops at the maximum", async () => {
    const pages: Record<string, { items: number[]; nextCursor: string | null }> = {
      start: { items: [1, 2], nextCursor: "a" },
      a: { items: [3, 4], nextCursor: "b" },
      b: { items: [5], nextCursor: null },
    };
    const fetchPage = async (cursor?: string) => pages[cursor ?? "start"];
    expect(await collectPages(fetchPage)).toEqual({ rows: [1, 2, 3, 4, 5], truncated: false });
    expect(await collectPages(fetchPage, 3)).toEqual({ rows: [1, 2, 3], truncated: true });
  });
});
