// The typed client of the staff API. Types come from src/api/schema.d.ts, generated from the
// server's /openapi.json (`npm run gen:api`), so a change of the API that breaks the UI fails
// `npm run typecheck`.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];

export interface FieldError {
  field: string;
  code: string;
  message: string;
}

/** A failure answered by the API: `{statusCode, name, message, errors}`. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors: FieldError[];

  constructor(status: number, code: string, message: string, errors: FieldError[] = []) {
    super(message);
    this.status = status;
    this.code = code;
    this.errors = errors;
  }
}

let csrfToken: string | null = null;

/** The session's CSRF token, sent as `x-csrf-token` with every change. */
export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

export const api = createClient<paths>({ baseUrl: "/admin/api", credentials: "same-origin" });

api.use({
  onRequest({ request }) {
    if (request.method !== "GET" && csrfToken) {
      request.headers.set("x-csrf-token", csrfToken);
    }
    return request;
  },
});

export function toApiError(status: number, body: unknown): ApiError {
  const b = (body ?? {}) as Partial<{ name: string; message: string; errors: FieldError[] }>;
  return new ApiError(
    status,
    b.name ?? `HTTP_${status}`,
    b.message ?? `HTTP ${status}`,
    Array.isArray(b.errors) ? b.errors : [],
  );
}

/** Awaits an API call and answers its payload, or throws its `ApiError`. */
export async function payload<D extends { payload: unknown }>(
  call: Promise<{ data?: D; error?: unknown; response: Response }>,
): Promise<D["payload"]> {
  const { data, error, response } = await call;
  if (data !== undefined && response.ok) return data.payload;
  throw toApiError(response.status, error);
}
