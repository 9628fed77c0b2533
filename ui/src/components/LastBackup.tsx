import { Text } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { api, payload } from "../api/client";
import { useI18n } from "../lib/context";
import { QueryState } from "./QueryState";

/** A backup's size as people read it: bytes, KiB or MiB. */
function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** The last automatic backup: the owner sees at a glance that the data is being kept. */
export function LastBackup() {
  const { t, dateTime } = useI18n();
  const query = useQuery({
    queryKey: ["backups"],
    queryFn: () => payload(api.GET("/backups")),
    refetchInterval: 60_000,
  });
  const d = query.data;
  return (
    <QueryState loading={query.isLoading} error={query.error}>
      {d && (
        <div>
          <Text size="xs" c="dimmed">
            {t("settings.lastBackup")}
          </Text>
          <Text data-testid="last-backup">
            {d.last
              ? t("settings.lastBackupAt", { at: dateTime(d.last.takenAt), size: formatBytes(d.last.sizeBytes) })
              : d.enabled
                ? t("settings.noBackupYet")
                : t("settings.backupsOff")}
          </Text>
          <Text size="xs" c="dimmed">
            {t("settings.backupsWhere", { count: d.items.length, dir: d.directory })}
          </Text>
        </div>
      )}
    </QueryState>
  );
}
