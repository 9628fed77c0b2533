import { describe, expect, it } from "vitest";
import { roleAllows } from "./context";

describe("roleAllows", () => {
  it("ranks admin over operator over viewer, as the server does", () => {
    expect(roleAllows("admin", "operator")).toBe(true);
    expect(roleAllows("operator", "operator")).toBe(true);
    expect(roleAllows("operator", "admin")).toBe(false);
    expect(roleAllows("viewer", "operator")).toBe(false);
    expect(roleAllows("viewer", "viewer")).toBe(true);
  });
  it("allows nothing to an unknown or missing role", () => {
    expect(roleAllows("boss", "viewer")).toBe(false);
    expect(roleAllows(null, "viewer")).toBe(false);
  });
});
