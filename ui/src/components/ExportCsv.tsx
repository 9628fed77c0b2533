import { Button } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useState } from "react";
import { collectPages, downloadCsv, toCsv, type Column } from "../lib/csv";
import { useI18n } from "../lib/context";
import { errorText } from "../lib/errors";

const MAX_ROWS = 10_000;

/** Exports every row the current filters select (up to 10,000), following the cursors. */
export function ExportCsv<T>({
  filename,
  columns,
  fetchPage,
}: {
  filename: string;
  columns: Column<T>[];
  fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; nextCursor?: string | null }>;
}) {
  const { t } = useI18n();
  const [progress, setProgress] = useState<number | null>(null);
  const run = async () => {
    setProgress(0);
    try {
      const { rows, truncated } = await collectPages(fetchPage, MAX_ROWS, setProgress);
      downloadCsv(filename, toCsv(rows, columns));
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
    <Button size="xs" variant="default" onClick={run} loading={progress !== null} data-testid="export-csv">
      {progress !== null ? t("common.exporting", { count: progress }) : t("common.exportCsv")}
    </Button>
  );
}
