import { Button, Group, Text } from "@mantine/core";
import { useCallback, useState } from "react";
import { useI18n } from "../lib/context";

/**
 * Keyset paging: the cursors of the pages seen so far, so "previous" goes back exactly and
 * "next" asks the server for the rows after the last one shown (never an offset).
 */
export function useKeyset() {
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const page = cursors.length;
  const cursor = cursors[cursors.length - 1];
  const next = useCallback((nextCursor: string) => setCursors((c) => [...c, nextCursor]), []);
  const previous = useCallback(() => setCursors((c) => (c.length > 1 ? c.slice(0, -1) : c)), []);
  const reset = useCallback(() => setCursors([undefined]), []);
  return { cursor, page, next, previous, reset };
}

/** What a pager needs: the page number and the moves (`useKeyset`, or the URL's). */
export interface PagerKeyset {
  page: number;
  next: (cursor: string) => void;
  previous: () => void;
}

export function Pager({
  keyset,
  nextCursor,
  count,
}: {
  keyset: PagerKeyset;
  nextCursor: string | null | undefined;
  /** The list's result count as the person reads it ("123 mandatos"). */
  count?: string;
}) {
  const { t } = useI18n();
  return (
    <Group justify="flex-end" gap="xs">
      {count && (
        <Text size="sm" mr="auto" data-testid="result-count" aria-live="polite">
          {count}
        </Text>
      )}
      <Text size="sm" c="dimmed">
        {t("common.page", { n: keyset.page })}
      </Text>
      <Button size="xs" variant="default" disabled={keyset.page <= 1} onClick={keyset.previous}>
        {t("common.previous")}
      </Button>
      <Button
        size="xs"
        variant="default"
        disabled={!nextCursor}
        onClick={() => nextCursor && keyset.next(nextCursor)}
      >
        {t("common.next")}
      </Button>
    </Group>
  );
}
