// What a failed request means, in the staff member's language. The server names every failure
// (`name`, e.g. `MANDATE_STATE_CONFLICT`) and every bad field (`errors[].code`, e.g. `REQUIRED`);
// those codes are stable, its English `message` is not meant for people, so it is never shown:
// a code this table does not know yet gets a plain sentence in the user's language instead.
import { ApiError, type FieldError } from "../api/client";
import type { Lang } from "./money";

type Words = Record<Lang, string>;

/** Failures and field problems by their code. `{field}` is the field's label. */
const CODES: Record<string, Words> = {
  // Field problems.
  REQUIRED: { es: "Es obligatorio", en: "Is required" },
  EMPTY: { es: "No puede estar vacío", en: "Cannot be empty" },
  ONE_OF_REQUIRED: { es: "Falta uno de los datos requeridos", en: "One of the required values is missing" },
  INVALID_VALUE: { es: "El valor no es válido", en: "The value is not valid" },
  INVALID_TYPE: { es: "El tipo de dato no es válido", en: "The value has the wrong type" },
  INVALID_JSON: { es: "La solicitud no es válida", en: "The request is not valid" },
  UNREADABLE_BODY: { es: "No se pudo leer la solicitud", en: "The request could not be read" },
  INVALID_FORMAT: { es: "El formato no es válido", en: "The format is not valid" },
  INVALID_LENGTH: { es: "El largo no es válido", en: "The length is not valid" },
  INVALID_CHARACTERS: { es: "Contiene caracteres no permitidos", en: "Contains characters that are not allowed" },
  TOO_SHORT: { es: "Es demasiado corto", en: "Is too short" },
  TOO_LONG: { es: "Es demasiado largo", en: "Is too long" },
  TOO_MANY: { es: "Son demasiados elementos", en: "Has too many items" },
  TOO_LARGE: { es: "Es demasiado grande", en: "Is too large" },
  OUT_OF_RANGE: { es: "Está fuera del rango permitido", en: "Is out of the allowed range" },
  DUPLICATED: { es: "Está repetido", en: "Is repeated" },
  INVALID_DATE: { es: "La fecha no es válida", en: "The date is not valid" },
  DATE_IN_FUTURE: { es: "La fecha no puede ser posterior a hoy", en: "The date cannot be after today" },
  DATE_IN_PAST: { es: "La fecha no puede ser anterior a hoy", en: "The date cannot be before today" },
  DATE_BEFORE_START: { es: "La fecha es anterior al inicio", en: "The date is before the start" },
  DATE_OUT_OF_RANGE: { es: "La fecha está fuera del rango admitido", en: "The date is out of the supported range" },
  NOT_A_BUSINESS_DAY: { es: "No es un día hábil", en: "Is not a business day" },
  INVALID_PERIOD: { es: "El período no es válido", en: "The period is not valid" },
  INVALID_SCHEDULE: { es: "El calendario de cuotas no es válido", en: "The installment schedule is not valid" },
  INVALID_EMAIL: { es: "El correo no es válido", en: "The email address is not valid" },
  INVALID_RUT: { es: "El RUT no es válido", en: "The RUT is not valid" },
  INVALID_PHONE: { es: "El teléfono no es válido", en: "The phone number is not valid" },
  INVALID_URL: { es: "La URL no es válida", en: "The URL is not valid" },
  INVALID_ID: { es: "El identificador no es válido", en: "The identifier is not valid" },
  INVALID_CODE: {
    es: "Debe ser un RUT, o de 1 a 64 letras, dígitos, '-', '_' o '.'",
    en: "Must be a RUT, or 1 to 64 letters, digits, '-', '_' or '.'",
  },
  INVALID_NAME: { es: "El nombre no es válido", en: "The name is not valid" },
  INVALID_COMMERCE_CODE: {
    es: "El código de comercio de Transbank tiene de 1 a 12 dígitos",
    en: "Transbank's commerce code has 1 to 12 digits",
  },
  INVALID_KEY: { es: "La llave no es válida (pk_live_... o pk_test_...)", en: "The key is not valid (pk_live_... or pk_test_...)" },
  KIND_NOT_FOR_RAIL: { es: "Este adquirente no atiende este riel", en: "This acquirer does not serve this rail" },
  INVALID_COMMISSION: {
    es: "Un porcentaje de 0 a 20, con hasta 4 decimales (2,95 es 2,95 %)",
    en: "A percent from 0 to 20, with up to 4 decimals (2.95 is 2.95 %)",
  },
  INVALID_FIXED_FEE: { es: "Pesos enteros, de 0 a 100.000", en: "Whole pesos, from 0 to 100,000" },
  REFUND_REFUSED: { es: "El adquirente rechazó el reembolso", en: "The acquirer refused the refund" },
  INSTALLMENT_NOT_REFUNDABLE: {
    es: "Esta cuota no se cobró con tarjeta por el motor de cobro: devuelva el dinero donde se pagó",
    en: "This installment was not charged by card by the charging engine: give the money back where it was paid",
  },
  ACQUIRER_NOT_CONFIGURED: { es: "El comercio no tiene adquirente para este medio", en: "The commerce has no acquirer for this method" },
  ACQUIRER_UNAVAILABLE: {
    es: "El adquirente no respondió; no se reembolsó ni registró nada",
    en: "The acquirer did not answer; nothing was refunded or recorded",
  },
  ACQUIRER_NOT_ALLOWED: {
    es: "Producción nunca simula un cobro: elija Transbank o Fintoc",
    en: "Production never simulates a charge: choose Transbank or Fintoc",
  },
  INVALID_ROLE: { es: "El rol no es válido", en: "The role is not valid" },
  INVALID_CHANNEL: { es: "El canal no es válido", en: "The channel is not valid" },
  INVALID_PAYMENT_METHOD: { es: "El medio de pago no es válido", en: "The payment method is not valid" },
  INVALID_AMOUNT: { es: "El monto no es válido", en: "The amount is not valid" },
  INVALID_CURRENCY: { es: "La moneda no es válida", en: "The currency is not valid" },
  AMOUNT_ABOVE_MAXIMUM: { es: "El monto supera el máximo permitido", en: "The amount is above the maximum" },
  PAYMENT_AMOUNT_MISMATCH: {
    es: "El monto no coincide con la suma de las cuotas indicadas",
    en: "The amount does not match the sum of the listed installments",
  },
  CURRENCY_MISMATCH: { es: "La moneda no coincide con la del mandato", en: "The currency does not match the mandate's" },
  INVALID_CSV: { es: "El archivo CSV no es válido", en: "The CSV file is not valid" },
  MISSING_COLUMN: { es: "Falta una columna en el archivo", en: "A column is missing from the file" },
  TOO_MANY_LINES: { es: "El archivo tiene demasiadas líneas", en: "The file has too many lines" },
  INVALID_CERTIFICATE: { es: "El certificado no es válido", en: "The certificate is not valid" },
  INVALID_PDF: { es: "El PDF no es válido", en: "The PDF is not valid" },
  INVALID_BASE64: { es: "El archivo no está bien codificado", en: "The file is not properly encoded" },
  INVALID_CURSOR: { es: "La página pedida ya no es válida; vuelva al inicio de la lista", en: "That page is no longer valid; go back to the start of the list" },
  INVALID_POLICY: { es: "La política de reintentos no es válida", en: "The retry policy is not valid" },
  INVALID_RULE: { es: "La regla no es válida", en: "The rule is not valid" },
  INVALID_YEAR: { es: "El año no es válido", en: "The year is not valid" },
  INVALID_ACTIVATION_MODE: { es: "El modo de activación no es válido", en: "The activation mode is not valid" },

  // Refusals of the whole request.
  VALIDATION_ERROR: { es: "Hay datos que no son válidos", en: "Some values are not valid" },
  MANDATE_STATE_CONFLICT: { es: "El estado actual del mandato no permite esta acción", en: "The mandate's current state does not allow this" },
  INSTALLMENT_STATE_CONFLICT: { es: "El estado actual de la cuota no permite esta acción", en: "The installment's current state does not allow this" },
  SIGNATURE_STATE_CONFLICT: { es: "El estado del proceso de firma no permite esta acción", en: "The signature process's state does not allow this" },
  SIGNATURE_IN_PROGRESS: { es: "Hay un proceso de firma en curso", en: "A signature process is in progress" },
  SIGNATURE_ALREADY_CANCELLED: { es: "El proceso de firma ya fue cancelado", en: "The signature process was already cancelled" },
  MANDATE_TYPE_CONFLICT: { es: "El tipo de mandato no permite esta acción", en: "The mandate's type does not allow this" },
  DUPLICATED_INSTALLMENT_ID: { es: "Ya existe una cuota con ese identificador", en: "An installment with that identifier already exists" },
  DUPLICATED_MANDATE_ID: { es: "Ya existe un mandato con ese identificador", en: "A mandate with that identifier already exists" },
  DUPLICATED_RUT: { es: "Ya existe un cliente con ese RUT", en: "A customer with that RUT already exists" },
  USER_RUT_MISMATCH: { es: "El RUT no corresponde al cliente", en: "The RUT does not match the customer" },
  COMMERCE_EXISTS: { es: "Ya existe un comercio con ese código", en: "A commerce with that code already exists" },
  STAFF_EXISTS: { es: "Ya existe una cuenta con ese correo", en: "An account with that email already exists" },
  HOLIDAY_EXISTS: { es: "Ese feriado ya está registrado", en: "That holiday is already listed" },
  LAST_ADMIN: { es: "Debe quedar al menos un administrador activo", en: "At least one active administrator must remain" },
  OWN_ACCOUNT: { es: "No puede cambiar su propia cuenta de esta forma", en: "You cannot change your own account this way" },
  EVENT_HAS_NO_URL: { es: "El comercio no tiene URL de webhook para reenviar", en: "The commerce has no webhook URL to redeliver to" },
  WEBHOOK_URL_NOT_ALLOWED: { es: "Esa URL de webhook no está permitida", en: "That webhook URL is not allowed" },
  DESTINATION_NOT_ALLOWED: { es: "Ese destino no está permitido", en: "That destination is not allowed" },
  PAYMENT_METHOD_NOT_ALLOWED: { es: "El medio de pago no está habilitado", en: "The payment method is not enabled" },
  PAYMENT_METHOD_NOT_ENABLED: { es: "El medio de pago no está habilitado", en: "The payment method is not enabled" },
  MAGIC_LINK_EXPIRED: { es: "El enlace expiró", en: "The link has expired" },
  NOT_SANDBOX: { es: "Solo se permite en el ambiente sandbox", en: "Only allowed in the sandbox environment" },
  SETUP_DONE: { es: "La instalación ya fue configurada", en: "The installation is already set up" },
  SETUP_CODE_REQUIRED: { es: "Ingrese el código de instalación", en: "Enter the setup code" },
  SETUP_CODE_INVALID: { es: "El código de instalación no es válido", en: "The setup code is not valid" },
  DESK_LINK_INVALID: { es: "El enlace de ingreso ya no es válido", en: "The sign-in link is no longer valid" },
  ROOT_NOT_FOUND: { es: "No se encontró el certificado raíz", en: "The root certificate was not found" },
  CORRELATION_ID_REUSED: { es: "La solicitud ya fue enviada", en: "The request was already sent" },
  DOCUMENT_TOO_COMPLEX: { es: "El documento es demasiado complejo", en: "The document is too complex" },
  PAYLOAD_TOO_LARGE: { es: "El archivo o los datos enviados son demasiado grandes", en: "The file or data sent is too large" },
  REQUEST_TIMEOUT: { es: "El servidor tardó demasiado; intente de nuevo", en: "The server took too long; try again" },
  NOT_ACCEPTABLE: { es: "El formato pedido no está disponible", en: "The requested format is not available" },
  INVALID_CREDENTIALS: { es: "Correo o contraseña incorrectos", en: "Wrong email or password" },
  TOO_MANY_ATTEMPTS: { es: "Demasiados intentos; espere un momento", en: "Too many attempts; wait a moment" },
  SESSION_REQUIRED: { es: "Su sesión terminó; vuelva a ingresar", en: "Your session ended; sign in again" },
  CSRF_TOKEN_INVALID: { es: "La sesión cambió; recargue la página", en: "The session changed; reload the page" },
  ROLE_NOT_ALLOWED: { es: "Su rol no permite esta acción", en: "Your role does not allow this" },
  ORIGIN_NOT_ALLOWED: { es: "Solicitud rechazada por su origen", en: "Request refused for its origin" },
  HOST_NOT_ALLOWED: { es: "Solicitud rechazada por su destino", en: "Request refused for its host" },
  INTERNAL_ERROR: { es: "Error interno del servidor; intente de nuevo", en: "Internal server error; try again" },
  AUDIT_CHAIN_BROKEN: { es: "La cadena de auditoría está rota", en: "The audit chain is broken" },
};

/** What a `*_NOT_FOUND` names. */
const THINGS: Record<string, Words> = {
  MANDATE: { es: "el mandato", en: "the mandate" },
  CUSTOMER: { es: "el cliente", en: "the customer" },
  COMMERCE: { es: "el comercio", en: "the commerce" },
  FEE_RULE: { es: "la regla de comisión", en: "the fee rule" },
  INSTALLMENT: { es: "la cuota", en: "the installment" },
  EVENT: { es: "la notificación", en: "the notification" },
  HOLIDAY: { es: "el feriado", en: "the holiday" },
  STAFF_MEMBER: { es: "la cuenta", en: "the account" },
  USER: { es: "el cliente", en: "the customer" },
  TRUSTED_ROOT: { es: "el certificado raíz", en: "the root certificate" },
  API_KEY: { es: "la clave de API", en: "the API key" },
  SIGNATURE_PROCESS: { es: "el proceso de firma", en: "the signature process" },
  DOCUMENT: { es: "el documento", en: "the document" },
  ROUTE: { es: "la dirección", en: "the address" },
};

/** The labels of the request fields staff forms send, by the last name of their path. */
const FIELDS: Record<string, Words> = {
  amount: { es: "Monto", en: "Amount" },
  date: { es: "Fecha", en: "Date" },
  payment: { es: "Pago", en: "Payment" },
  installments: { es: "Cuotas", en: "Installments" },
  installmentIds: { es: "Cuotas", en: "Installments" },
  description: { es: "Descripción", en: "Description" },
  evidence: { es: "Respaldo", en: "Evidence" },
  reason: { es: "Motivo", en: "Reason" },
  email: { es: "Correo", en: "Email" },
  password: { es: "Contraseña", en: "Password" },
  role: { es: "Rol", en: "Role" },
  name: { es: "Nombre", en: "Name" },
  code: { es: "Código", en: "Code" },
  commerce: { es: "Comercio", en: "Commerce" },
  commerceCode: { es: "Comercio", en: "Commerce" },
  rut: { es: "RUT", en: "RUT" },
  webhookUrl: { es: "URL de webhook", en: "Webhook URL" },
  channels: { es: "Canales", en: "Channels" },
  paymentMethods: { es: "Medios de pago", en: "Payment methods" },
  afterDays: { es: "Reintentos (días)", en: "Retries (days)" },
  days: { es: "Días", en: "Days" },
  advanceDays: { es: "Días", en: "Days" },
  pem: { es: "Certificado", en: "Certificate" },
  csv: { es: "Archivo CSV", en: "CSV file" },
  report: { es: "Informe de pagos", en: "Payout report" },
  from: { es: "Desde", en: "From" },
  to: { es: "Hasta", en: "To" },
  limit: { es: "Cantidad", en: "Limit" },
  cursor: { es: "Página", en: "Page" },
  q: { es: "Búsqueda", en: "Search" },
  mode: { es: "Modo", en: "Mode" },
  rule: { es: "Regla", en: "Rule" },
  year: { es: "Año", en: "Year" },
  currency: { es: "Moneda", en: "Currency" },
  dueDate: { es: "Vencimiento", en: "Due date" },
  value: { es: "Valor", en: "Value" },
  reference: { es: "Referencia", en: "Reference" },
};

const PHRASES = {
  invalidField: { es: "Un dato no es válido", en: "A value is not valid" },
  refused: { es: "La solicitud fue rechazada", en: "The request was refused" },
  forbidden: { es: "No tiene permiso para esta acción", en: "You are not allowed to do this" },
  notFound: { es: "No se encontró {thing}", en: "{thing} was not found" },
  somethingNotFound: { es: "No se encontró lo pedido", en: "What was asked for was not found" },
  gone: { es: "Ya no está disponible", en: "Is no longer available" },
  server: { es: "Error del servidor; intente de nuevo", en: "Server error; try again" },
  network: { es: "No se pudo contactar al servidor", en: "Could not reach the server" },
  unexpected: { es: "Ocurrió un error inesperado", en: "An unexpected error occurred" },
  item: { es: "{label} n.º {n}", en: "{label} no. {n}" },
  line: { es: "Línea {n}", en: "Line {n}" },
} satisfies Record<string, Words>;

let current: Lang = "es";

/**
 * The language errors are described in when a caller does not say: the screens call
 * `formErrors` from event handlers, so the I18n layer keeps this in step with the switch.
 */
export function setErrorLanguage(lang: Lang): void {
  current = lang;
}

function fill(text: string, vars: Record<string, string | number>): string {
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}

/**
 * The label of a request field: `payment.amount` is "Monto", `afterDays[2]` "Reintentos (días)
 * n.º 3". A field the table does not know keeps its last name, which is at least the form's.
 */
export function fieldLabel(path: string, lang: Lang = current): string {
  // An imported file's cell, `csv.line[3].date`: the line as a spreadsheet numbers it (from 1),
  // then the column.
  const cell = /(?:^|\.)line\[(\d+)\](?:\.(\w+))?$/.exec(path);
  if (cell) {
    const line = fill(PHRASES.line[lang], { n: Number(cell[1]) });
    return cell[2] ? `${line}, ${(FIELDS[cell[2]]?.[lang] ?? cell[2]).toLowerCase()}` : line;
  }
  const last = path.split(".").pop() ?? path;
  const indexed = /^(.*)\[(\d+)\]$/.exec(last);
  const name = indexed ? indexed[1] : last;
  const label = FIELDS[name]?.[lang] ?? name;
  return indexed ? fill(PHRASES.item[lang], { label, n: Number(indexed[2]) + 1 }) : label;
}

/** One field's problem, without its label (shown beside the field). */
export function fieldErrorText(error: FieldError, lang: Lang = current): string {
  return CODES[error.code]?.[lang] ?? PHRASES.invalidField[lang];
}

function labelled(error: FieldError, lang: Lang): string {
  if (!error.field) return fieldErrorText(error, lang);
  return `${fieldLabel(error.field, lang)}: ${fieldErrorText(error, lang)}`;
}

/** Whether fetch itself failed (offline, server stopped): browsers throw a `TypeError`. */
function isNetworkFailure(error: unknown): boolean {
  return error instanceof TypeError && /fetch|network|load failed/i.test(error.message);
}

/** The failure as a whole, by its name, else by its status. */
function refusalText(error: ApiError, lang: Lang): string {
  const known = CODES[error.code];
  if (known) return known[lang];
  if (error.status === 404 || error.code.endsWith("_NOT_FOUND")) {
    const thing = THINGS[error.code.replace(/_NOT_FOUND$/, "")];
    return thing ? fill(PHRASES.notFound[lang], { thing: thing[lang] }) : PHRASES.somethingNotFound[lang];
  }
  if (error.status === 401 || error.status === 403) return PHRASES.forbidden[lang];
  if (error.status === 410) return PHRASES.gone[lang];
  if (error.status >= 500) return PHRASES.server[lang];
  return PHRASES.refused[lang];
}

/** Any error of a request as one sentence in `lang`: every bad field with its label. */
export function errorText(error: unknown, lang: Lang = current): string {
  if (error instanceof ApiError) {
    if (error.errors.length === 0) return refusalText(error, lang);
    return error.errors.map((e) => labelled(e, lang)).join("; ");
  }
  if (isNetworkFailure(error)) return PHRASES.network[lang];
  return PHRASES.unexpected[lang];
}

/**
 * The errors of a failed request placed on a form's fields: each `errors[].field` (a path into
 * the request body, like `payment.amount`) is mapped to a form field by `fields` (path → form
 * key; a path not listed keeps its own name). What names no field (or names one the form does
 * not have) comes back as `general`, to show above the form, each with its field's label.
 */
export function formErrors(
  error: unknown,
  fields: Record<string, string> = {},
  known?: string[],
  lang: Lang = current,
): { fields: Record<string, string>; general: string | null } {
  if (!(error instanceof ApiError) || error.errors.length === 0) {
    return { fields: {}, general: errorText(error, lang) };
  }
  const placed: Record<string, string> = {};
  const loose: string[] = [];
  for (const e of error.errors) {
    const key = fields[e.field] ?? e.field;
    if (known && !known.includes(key)) {
      loose.push(labelled(e, lang));
    } else if (!(key in placed)) {
      placed[key] = fieldErrorText(e, lang);
    }
  }
  return { fields: placed, general: loose.length ? loose.join("; ") : null };
}
