import { TextInput } from "@mantine/core";
import { useEffect, useState } from "react";
import { useI18n } from "../lib/context";
import { DATE_PATTERN, formatDate, parseDate } from "../lib/format";

/**
 * The one date input of the staff UI: a date typed in the language's format (dd-mm-aaaa in
 * Spanish, yyyy-mm-dd in English) whose value is `YYYY-MM-DD` (or "" when empty), the form the
 * API takes. It is taken when the field is left or Enter is pressed; what is not a date, or is
 * past `max`, is named under the field and not taken (`onValidity` tells the form, so that it
 * does not send the previous date instead). The browser's own date picker is not used: it
 * writes dates in the browser's locale, not in the one the page speaks.
 */
export function DateField({
  label,
  value,
  onChange,
  onValidity,
  testId,
  name,
  description,
  max,
  maxError,
  required,
  error,
  width = 140,
}: {
  label: string;
  value: string;
  onChange: (iso: string) => void;
  onValidity?: (valid: boolean) => void;
  testId?: string;
  name?: string;
  description?: string;
  /** The last date accepted, `YYYY-MM-DD`. */
  max?: string;
  /** What is said of a date past `max`. */
  maxError?: string;
  required?: boolean;
  /** An error the form or the server found. */
  error?: string | null;
  width?: number | string;
}) {
  const { t, lang } = useI18n();
  const shown = value ? formatDate(value, lang) : "";
  const [text, setText] = useState(shown);
  const [ownError, setOwnError] = useState<string | null>(null);
  useEffect(() => {
    setText(shown);
    setOwnError(null);
  }, [shown]);
  const judge = (message: string | null) => {
    setOwnError(message);
    onValidity?.(message === null);
  };
  const take = () => {
    if (text.trim() === "") {
      judge(null);
      if (value !== "") onChange("");
      return;
    }
    const iso = parseDate(text, lang);
    if (!iso) {
      judge(t("common.invalidDate"));
      return;
    }
    if (max && iso > max) {
      judge(maxError ?? t("common.invalidDate"));
      return;
    }
    judge(null);
    if (iso !== value) onChange(iso);
    else setText(shown);
  };
  return (
    <TextInput
      label={label}
      description={description}
      placeholder={DATE_PATTERN[lang]}
      name={name}
      required={required}
      value={text}
      onChange={(e) => setText(e.currentTarget.value)}
      onBlur={take}
      onKeyDown={(e) => {
        if (e.key === "Enter") take();
      }}
      error={ownError ?? error}
      w={width}
      inputMode="numeric"
      autoComplete="off"
      data-testid={testId}
      data-max={max}
    />
  );
}
