import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { formErrors } from "./errors";

describe("formErrors", () => {
  const error = new ApiError(400, "VALIDATION_ERROR", "invalid", [
    { field: "payment.amount", code: "PAYMENT_AMOUNT_MISMATCH", message: "the installments add up to 29990" },
    { field: "payment.date", code: "DATE_IN_FUTURE", message: "a payment cannot be dated after today" },
    { field: "header.x", code: "X", message: "odd" },
  ]);

  it("puts each error next to its field", () => {
    const { fields } = formErrors(error, { "payment.amount": "amount", "payment.date": "date" });
    expect(fields.amount).toBe("the installments add up to 29990");
    expect(fields.date).toBe("a payment cannot be dated after today");
  });

  it("reports what names no field of the form above it", () => {
    const { general } = formErrors(error, { "payment.amount": "amount", "payment.date": "date" }, ["amount", "date"]);
    expect(general).toBe("header.x: odd");
  });

  it("shows refusals without fields as a general message", () => {
    const refused = new ApiError(400, "MANDATE_STATE_CONFLICT", "a CANCELLED mandate cannot be cancelled");
    expect(formErrors(refused)).toEqual({
      fields: {},
      general: "MANDATE_STATE_CONFLICT: a CANCELLED mandate cannot be cancelled",
    });
  });
});
