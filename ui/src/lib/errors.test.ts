import { describe, expect, it } from "vitest";
import { ApiError } from "../api/client";
import { errorText, fieldLabel, formErrors } from "./errors";

describe("formErrors", () => {
  const error = new ApiError(400, "VALIDATION_ERROR", "invalid", [
    { field: "payment.amount", code: "PAYMENT_AMOUNT_MISMATCH", message: "the listed installments add up to 29990" },
    { field: "payment.date", code: "DATE_IN_FUTURE", message: "a payment cannot be dated after today" },
    { field: "header.x", code: "SOMETHING_NEW", message: "odd" },
  ]);

  it("puts each error next to its field, in the user's language", () => {
    const { fields } = formErrors(error, { "payment.amount": "amount", "payment.date": "date" }, undefined, "es");
    expect(fields.amount).toBe("El monto no coincide con la suma de las cuotas indicadas");
    expect(fields.date).toBe("La fecha no puede ser posterior a hoy");
    const english = formErrors(error, { "payment.amount": "amount", "payment.date": "date" }, undefined, "en");
    expect(english.fields.date).toBe("The date cannot be after today");
  });

  it("reports what names no field of the form above it, labelled, with a plain fallback", () => {
    const { general } = formErrors(error, { "payment.amount": "amount", "payment.date": "date" }, ["amount", "date"], "es");
    expect(general).toBe("x: Un dato no es válido");
  });

  it("never shows the server's English text", () => {
    for (const lang of ["es", "en"] as const) {
      const { fields, general } = formErrors(error, {}, ["nothing"], lang);
      expect(fields).toEqual({});
      expect(general).not.toMatch(/add up to|dated after today|odd/);
    }
  });

  it("names the refusal of a request without fields", () => {
    const refused = new ApiError(400, "MANDATE_STATE_CONFLICT", "a CANCELLED mandate cannot be cancelled");
    expect(formErrors(refused, {}, undefined, "es")).toEqual({
      fields: {},
      general: "El estado actual del mandato no permite esta acción",
    });
  });
});

describe("errorText", () => {
  it("labels the field of a deserialiser error and hides its text", () => {
    const error = new ApiError(400, "VALIDATION_ERROR", "invalid", [
      { field: "afterDays[2]", code: "INVALID_TYPE", message: "afterDays[2]: invalid type: null, expected i64" },
    ]);
    expect(errorText(error, "es")).toBe("Reintentos (días) n.º 3: El tipo de dato no es válido");
    expect(errorText(error, "en")).toBe("Retries (days) no. 3: The value has the wrong type");
  });

  it("joins every bad field", () => {
    const error = new ApiError(400, "VALIDATION_ERROR", "invalid", [
      { field: "email", code: "REQUIRED", message: "is required" },
      { field: "password", code: "TOO_SHORT", message: "must have at least 12 characters" },
    ]);
    expect(errorText(error, "es")).toBe("Correo: Es obligatorio; Contraseña: Es demasiado corto");
  });

  it("says a failed fetch is the server out of reach", () => {
    expect(errorText(new TypeError("Failed to fetch"), "es")).toBe("No se pudo contactar al servidor");
    expect(errorText(new TypeError("NetworkError when attempting to fetch resource."), "en")).toBe(
      "Could not reach the server",
    );
    expect(errorText(new Error("boom"), "es")).toBe("Ocurrió un error inesperado");
  });

  it.each([
    [404, "MANDATE_NOT_FOUND", "No se encontró el mandato"],
    [404, "WIDGET_NOT_FOUND", "No se encontró lo pedido"],
    [403, "SOMETHING_FORBIDDEN", "No tiene permiso para esta acción"],
    [403, "ROLE_NOT_ALLOWED", "Su rol no permite esta acción"],
    [500, "INTERNAL_ERROR", "Error interno del servidor; intente de nuevo"],
    [502, "HTTP_502", "Error del servidor; intente de nuevo"],
    [400, "A_NEW_RULE", "La solicitud fue rechazada"],
  ])("answers %i %s in Spanish", (status, name, text) => {
    expect(errorText(new ApiError(status, name, "english text"), "es")).toBe(text);
  });
});

describe("fieldLabel", () => {
  it("reads the last name of the path, and the position of an item", () => {
    expect(fieldLabel("payment.amount", "es")).toBe("Monto");
    expect(fieldLabel("customer.contacts.email", "en")).toBe("Email");
    expect(fieldLabel("installments[0]", "es")).toBe("Cuotas n.º 1");
    // An imported file's cell: its line as a spreadsheet numbers it, and its column.
    expect(fieldLabel("csv.line[3].date", "es")).toBe("Línea 3, fecha");
    expect(fieldLabel("csv.line[2].value", "en")).toBe("Line 2, value");
    expect(fieldLabel("csv.line[5]", "es")).toBe("Línea 5");
    expect(fieldLabel("header.correlationId", "es")).toBe("correlationId");
  });
});
