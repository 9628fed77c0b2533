import { describe, expect, it } from "vitest";
import { dictionaries, initialLang, label, translate } from "./i18n";

describe("i18n", () => {
  it("speaks Spanish by default and English when chosen", () => {
    expect(initialLang(null)).toBe("es");
    expect(initialLang("fr")).toBe("es");
    expect(initialLang("en")).toBe("en");
    expect(translate("es", "nav.mandates")).toBe("Mandatos");
    expect(translate("en", "nav.mandates")).toBe("Mandates");
  });

  it("fills placeholders and leaves unknown ones visible", () => {
    expect(translate("es", "charging.running", { date: "2026-12-05", done: 3, total: 10 })).toBe(
      "Cobro en curso del 2026-12-05: 3 de 10",
    );
    expect(translate("en", "common.page", {})).toBe("Page {n}");
  });

  it("has every key in both languages, none empty", () => {
    const es = Object.keys(dictionaries.es).sort();
    expect(Object.keys(dictionaries.en).sort()).toEqual(es);
    for (const lang of ["es", "en"] as const) {
      for (const [key, text] of Object.entries(dictionaries[lang])) {
        expect(text.trim(), `${lang} ${key}`).not.toBe("");
      }
    }
  });

  it("labels wire names and keeps unknown ones", () => {
    expect(label("es", "PAID")).toBe("Pagada");
    expect(label("en", "SUBSCRIPTION")).toBe("Subscription");
    expect(label("es", "SOMETHING_NEW")).toBe("SOMETHING_NEW");
    expect(label("es", null)).toBe("—");
  });
});
