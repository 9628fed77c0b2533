import { Button, Group, Select } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useState } from "react";
import { collectPages, downloadCsv, rememberSeparator, storedSeparator, toCsv, type Column, type Separator } from "../lib/csv";
import { useI18n } from "../lib/context";
import { errorText } from "../lib/errors";

const MAX_ROWS = 10_000;

/**
 * Exports every row the current filters select (up to 10,000), following the cursors, for
 * Excel: headers and cells in the UI's language, times in Chile's, and the separator this
 * browser chose (";" for Excel in Spanish, "," otherwise), remembered for the next export.
 */
export function ExportCsv<T>({
  filename,
  columns,
  fetchPage,
}: {
  filename: string;
  columns: Column<T>[];
  fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | null }>;
}) {
  const { t, lang } = useI18n();
  const [progress, setProgress] = useState<number | null>(null);
  const [separator, setSeparator] = useState<Separator>(() => storedSeparator(lang));
  const choose = (value: string | null) => {
    if (value !== ";" && value !== ",") return;
    setSeparator(value);
    rememberSeparator(value);
  };
  const run = async () => {
    setProgress(0);
    try {
      const { rows, truncated } = await collectPages(fetchPage, MAX_ROWS, setProgress);
      downloadCsv(filename, toCsv(rows, columns, separator, lang));
      if (truncated) {
        notifications.show({ color: "yellow", message: t("common.exportTruncated", { count: MAX_ROWS }) });
      }
    } catch (e) {
      notifications.show({ color: "red", message: errorText(e) });
    } finally {
      setProgress(null);
    }
  };
  return (
    <Group gap={4} align="end" wrap="nowrap">
      <Select
        size="xs"
        w={190}
        label={t("common.csvSeparator")}
        data={[
          { value: ";", label: t("common.csvSemicolon") },
          { value: ",", label: t("common.csvComma") },
        ]}
        value={separator}
        onChange={choose}
        allowDeselect={false}
        data-testid="csv-separator"
      />
      <Button size="xs" variant="default" onClick={run} loading={progress !== null} data-testid="export-csv">
        {progress !== null ? t("common.exporting", { count: progress }) : t("common.exportCsv")}
      </Button>
    </Group>
  );
}
