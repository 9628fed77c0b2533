import { describe, expect, it } from "vitest";
import { collectPages, csvField, localCell, toCsv } from "./csv";

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

describe("toCsv for Excel in Spanish", () => {
  const rows = [{ id: "M;1", state: "Activo", amount: 1.2345, at: "2026-11-25T12:00:05.123Z", due: "2026-12-01" }];
  const columns = [
    { header: "Mandato", value: (r: (typeof rows)[0]) => r.id },
    { header: "Estado", value: (r: (typeof rows)[0]) => r.state },
    { header: "Monto", value: (r: (typeof rows)[0]) => r.amount },
    { header: "Creado", value: (r: (typeof rows)[0]) => r.at },
    { header: "Vence", value: (r: (typeof rows)[0]) => r.due },
  ];
  it("separates with semicolons, quotes what holds one, writes local times and decimal commas", () => {
    expect(toCsv(rows, columns, ";", "es")).toBe(
      '\uFEFFMandato;Estado;Monto;Creado;Vence\r\n"M;1";Activo;1,2345;25-11-2026 09:00:05;01-12-2026\r\n',
    );
  });
  it("keeps commas and points in English", () => {
    expect(toCsv(rows, columns, ",", "en")).toBe(
      "\uFEFFMandato,Estado,Monto,Creado,Vence\r\nM;1,Activo,1.2345,2026-11-25 09:00:05,2026-12-01\r\n",
    );
  });
  it("leaves other cells as they are", () => {
    expect(localCell("cust-2026-01", "es", ";")).toBe("cust-2026-01");
    expect(localCell(null, "es", ";")).toBeNull();
    expect(csvField("-1,5", ";")).toBe("-1,5");
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
