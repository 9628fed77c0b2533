import { Text } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { api, payload } from "../api/client";
import { useI18n } from "../lib/context";
import { formatBytes } from "../lib/format";
import { QueryState } from "./QueryState";

/**
 * The last automatic backup: the owner sees at a glance that the data is being kept, when and
 * how large. Where the files lie and how to restore one is the operator's business (README),
 * not staff's.
 */
export function LastBackup() {
  const { t, lang, dateTime } = useI18n();
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
              ? t("settings.lastBackupAt", { at: dateTime(d.last.takenAt), size: formatBytes(d.last.sizeBytes, lang) })
              : d.enabled
                ? t("settings.noBackupYet")
                : t("settings.backupsOff")}
          </Text>
          <Text size="xs" c="dimmed">
            {t("settings.backupsKept", { count: d.items.length })}
          </Text>
        </div>
      )}
    </QueryState>
  );
}
