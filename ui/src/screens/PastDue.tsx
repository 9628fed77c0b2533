import { Anchor, Group, Stack, Table, Text } from "@mantine/core";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { CommerceSelect } from "../components/CommerceSelect";
import { ExportCsv } from "../components/ExportCsv";
import { PageTitle } from "../components/Layout";
import { Pager } from "../components/Pager";
import { QueryState } from "../components/QueryState";
import { ScrollTable } from "../components/ScrollTable";
import { StateBadge } from "../components/StateBadge";
import { useI18n } from "../lib/context";
import { formatRut } from "../lib/rut";
import { useUrlState } from "../lib/urlState";
import { useRejectionWords } from "./Notifications";

type PastDueLine = Schemas["PastDueLineDto"];

/**
 * The mandates with rejected installments: the latest rejection first, with its reason in
 * words, the next retry (or that none remains), what is owed and the customer. Commerce and
 * page in the URL.
 */
export function PastDue() {
  const { t, money, date, dateTime, number } = useI18n();
  const rejectionWords = useRejectionWords();
  const url = useUrlState();
  const commerce = url.get("commerce") || undefined;
  const fetchPage = (cursor: string | undefined, limit = 50) =>
    payload(api.GET("/past-due", { params: { query: { commerce, cursor, limit } } }));
  const query = useQuery({
    queryKey: ["past-due", url.filterKey, url.keyset.cursor],
    queryFn: () => fetchPage(url.keyset.cursor),
    placeholderData: keepPreviousData,
  });
  const owed = (l: PastDueLine) => l.amountDue.map((a) => money(a.amount, a.currencyId)).join(" + ");
  const items = query.data?.items ?? [];
  return (
    <Stack>
      <PageTitle title={t("pastDue.title")} />
      <Text size="sm" c="dimmed">
        {t("pastDue.intro")}
      </Text>
      <Group align="end" gap="sm">
        <CommerceSelect value={commerce ?? null} onChange={(v) => url.set({ commerce: v })} />
        <ExportCsv<PastDueLine>
          filename="morosidad.csv"
          fetchPage={(cursor) => fetchPage(cursor, 200)}
          columns={[
            { header: t("csv.internalId"), value: (l) => l.internalId },
            { header: t("common.id"), value: (l) => l.id },
            { header: t("common.name"), value: (l) => l.name },
            { header: t("common.customer"), value: (l) => l.customer.name },
            { header: "RUT", value: (l) => formatRut(l.customer.rut) },
            { header: t("common.commerce"), value: (l) => l.commerce },
            { header: t("pastDue.rejected"), value: (l) => l.rejected },
            { header: t("pastDue.lastReason"), value: (l) => (l.lastRejectionCode ? rejectionWords(l.lastRejectionCode) : null) },
            { header: t("pastDue.nextRetry"), value: (l) => l.nextRetryDate },
            { header: t("pastDue.amountDue"), value: (l) => owed(l) },
          ]}
        />
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {items.length === 0 ? (
          <Text c="dimmed" size="sm" p="md" data-testid="past-due-empty">
            {t("pastDue.none")}
          </Text>
        ) : (
          <ScrollTable label={t("pastDue.table")} minWidth={980}>
            <Table striped highlightOnHover data-testid="past-due-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("pastDue.mandate")}</Table.Th>
                  <Table.Th>{t("common.customer")}</Table.Th>
                  <Table.Th>{t("pastDue.lastReason")}</Table.Th>
                  <Table.Th>{t("pastDue.nextRetry")}</Table.Th>
                  <Table.Th ta="right">{t("pastDue.amountDue")}</Table.Th>
                  <Table.Th>{t("common.commerce")}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((l) => (
                  <Table.Tr key={l.internalId} data-mandate={l.internalId}>
                    <Table.Td>
                      <Anchor component={Link} to={`/mandates/${l.internalId}`} size="sm">
                        {l.id}
                      </Anchor>
                      <Text size="xs" c="dimmed">
                        {l.name}
                      </Text>
                      <StateBadge state={l.state} />
                    </Table.Td>
                    <Table.Td>
                      <Anchor component={Link} to={`/customers/${l.customer.internalUserId}`} size="sm">
                        {l.customer.name}
                      </Anchor>
                      <Text size="xs" c="dimmed" className="nowrap" data-testid="past-due-rut">
                        {formatRut(l.customer.rut)}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Text size="sm" c="red.8" data-testid="past-due-reason">
                        {l.lastRejectionCode ? rejectionWords(l.lastRejectionCode) : "—"}
                      </Text>
                      <Text size="xs" c="dimmed">
                        {dateTime(l.lastRejectedAt)}
                      </Text>
                    </Table.Td>
                    <Table.Td data-testid="past-due-retry">
                      {l.nextRetryDate ? (
                        <span className="nowrap">{date(l.nextRetryDate)}</span>
                      ) : (
                        <Text size="sm" c="red.8" fw={600}>
                          {t("pastDue.final")}
                        </Text>
                      )}
                    </Table.Td>
                    <Table.Td ta="right" className="nowrap" data-testid="past-due-amount">
                      {owed(l)}
                      <Text size="xs" c="dimmed">
                        {t("pastDue.rejected")}: {l.rejected}
                      </Text>
                    </Table.Td>
                    <Table.Td className="nowrap">{formatRut(l.commerce)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        )}
        <Pager
          keyset={url.keyset}
          nextCursor={query.data?.nextCursor}
          count={query.data ? t("pastDue.count", { count: number(query.data.total) }) : undefined}
        />
      </QueryState>
    </Stack>
  );
}
