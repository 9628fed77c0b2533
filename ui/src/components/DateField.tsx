import { TextInput } from "@mantine/core";
import { useEffect, useState } from "react";
import { useI18n } from "../lib/context";
import { DATE_PATTERN, formatDate, parseDate } from "../lib/format";

/**
 * A date typed in the language's format (dd-mm-aaaa in Spanish, yyyy-mm-dd in English) whose
 * value is `YYYY-MM-DD` (or "" when empty). It is taken when the field is left or Enter is
 * pressed; what is not a date is named under the field and not taken.
 */
export function DateField({
  label,
  value,
  onChange,
  testId,
}: {
  label: string;
  value: string;
  onChange: (iso: string) => void;
  testId?: string;
}) {
  const { t, lang } = useI18n();
  const shown = value ? formatDate(value, lang) : "";
  const [text, setText] = useState(shown);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    setText(shown);
    setError(null);
  }, [shown]);
  const take = () => {
    if (text.trim() === "") {
      setError(null);
      if (value !== "") onChange("");
      return;
    }
    const iso = parseDate(text, lang);
    if (!iso) {
      setError(t("common.invalidDate"));
      return;
    }
    setError(null);
    if (iso !== value) onChange(iso);
    else setText(shown);
  };
  return (
    <TextInput
      label={label}
      placeholder={DATE_PATTERN[lang]}
      value={text}
      onChange={(e) => setText(e.currentTarget.value)}
      onBlur={take}
      onKeyDown={(e) => {
        if (e.key === "Enter") take();
      }}
      error={error}
      w={140}
      data-testid={testId}
    />
  );
}
