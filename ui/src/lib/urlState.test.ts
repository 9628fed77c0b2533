import { describe, expect, it } from "vitest";
import { applyChanges } from "./urlState";

describe("applyChanges", () => {
  it("sets values, joins lists and drops empty ones", () => {
    const start = new URLSearchParams("q=munoz&state=ACTIVE&after=c1");
    const next = applyChanges(start, { state: ["PENDING", "ACTIVE"], q: "", sort: "mandateId.asc", commerce: null });
    expect(next.get("state")).toBe("PENDING,ACTIVE");
    expect(next.has("q")).toBe(false);
    expect(next.has("commerce")).toBe(false);
    expect(next.get("sort")).toBe("mandateId.asc");
    // The page is the hook's to reset; the original is untouched.
    expect(next.get("after")).toBe("c1");
    expect(start.get("q")).toBe("munoz");
  });
});
