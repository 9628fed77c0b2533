import { describe, expect, it } from "vitest";
import { deliveryProblem } from "./delivery";

describe("a failed delivery in words", () => {
  it("reads the technical text of the attempt", () => {
    expect(
      deliveryProblem(
        "connect: error sending request for url (https://127.0.0.1:1/hook): client error (Connect): tcp connect error: Connection refused (os error 111)",
      ),
    ).toEqual({ key: "delivery.connect" });
    expect(deliveryProblem("timeout: no answer within the delivery timeout")).toEqual({ key: "delivery.timeout" });
    expect(deliveryProblem("connect: error sending request: invalid peer certificate: UnknownIssuer")).toEqual({ key: "delivery.tls" });
    expect(deliveryProblem("connect: error sending request: dns error: failed to lookup address information")).toEqual({ key: "delivery.dns" });
    expect(deliveryProblem("DESTINATION_NOT_ALLOWED")).toEqual({ key: "delivery.notAllowed" });
    expect(deliveryProblem("refused: webhook URLs must use https://")).toEqual({ key: "delivery.httpsOnly" });
    expect(deliveryProblem("request: something new")).toEqual({ key: "delivery.failed" });
  });
  it("else reads the receiver's HTTP status", () => {
    expect(deliveryProblem(null, 500)).toEqual({ key: "delivery.serverError", vars: { status: 500 } });
    expect(deliveryProblem(null, 404)).toEqual({ key: "delivery.refused", vars: { status: 404 } });
    expect(deliveryProblem(null, 302)).toEqual({ key: "delivery.redirect", vars: { status: 302 } });
    expect(deliveryProblem(null, 204)).toBeNull();
    expect(deliveryProblem(undefined, null)).toBeNull();
  });
});
