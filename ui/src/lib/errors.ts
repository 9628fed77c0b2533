import { ApiError } from "../api/client";

/**
 * The errors of a failed request placed on a form's fields: each `errors[].field` (a path into
 * the request body, like `payment.amount`) is mapped to a form field by `fields` (path → form
 * key; a path not listed keeps its own name). What names no field (or names one the form does
 * not have) comes back as `general`, to show above the form.
 */
export function formErrors(
  error: unknown,
  fields: Record<string, string> = {},
  known?: string[],
): { fields: Record<string, string>; general: string | null } {
  if (!(error instanceof ApiError)) {
    return { fields: {}, general: error instanceof Error ? error.message : String(error) };
  }
  const placed: Record<string, string> = {};
  const loose: string[] = [];
  for (const e of error.errors) {
    const key = fields[e.field] ?? e.field;
    if (known && !known.includes(key)) {
      loose.push(`${e.field}: ${e.message}`);
    } else if (!(key in placed)) {
      placed[key] = e.message;
    }
  }
  const general =
    error.errors.length === 0 ? `${error.code}: ${error.message}` : loose.length ? loose.join("; ") : null;
  return { fields: placed, general };
}
