import { Anchor, Group, Stack, Table, Text, Title } from "@mantine/core";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { ExportCsv } from "../components/ExportCsv";
import { Pager, useKeyset } from "../components/Pager";
import { QueryState } from "../components/QueryState";
import { ScrollTable } from "../components/ScrollTable";
import { useI18n, type I18n } from "../lib/context";
import { ChargedAmount, OutcomeText } from "./Charging";

type PaymentLine = Schemas["PaymentLineDto"];

/** A payment's method in words: a payment method's name, the portal, or a payment by hand. */
function methodWords(i18n: I18n, method: string | null | undefined): string {
  if (!method) return "—";
  if (method === "WEBPAY") return i18n.t("payments.method.WEBPAY");
  return i18n.label(method);
}

/**
 * Every charge and payment of a customer's installments across their mandates, newest first
 * and paged: the automatic charges with their outcome, portal payments, payments recorded by
 * hand and refunds.
 */
export function CustomerPayments({ customerId }: { customerId: string }) {
  const i18n = useI18n();
  const { t, dateTime, date, number } = i18n;
  const keyset = useKeyset();
  const fetchPage = (cursor: string | undefined, limit = 25) =>
    payload(
      api.GET("/customers/{internalUserId}/payments", {
        params: { path: { internalUserId: customerId }, query: { cursor, limit } },
      }),
    );
  const query = useQuery({
    queryKey: ["customer-payments", customerId, keyset.cursor],
    queryFn: () => fetchPage(keyset.cursor),
    placeholderData: keepPreviousData,
  });
  const items = query.data?.items ?? [];
  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Title order={2} size="h4">
          {t("payments.title")}
        </Title>
        <ExportCsv<PaymentLine>
          filename="pagos-cliente.csv"
          fetchPage={(cursor) => fetchPage(cursor, 200)}
          columns={[
            { header: t("payments.date"), value: (p) => p.at },
            { header: t("mandates.businessDate"), value: (p) => p.businessDate },
            { header: t("pastDue.mandate"), value: (p) => p.mandateId },
            { header: t("run.installment"), value: (p) => p.installmentId },
            { header: t("common.amount"), value: (p) => p.amount },
            { header: t("common.currency"), value: (p) => p.currencyId },
            { header: "UF", value: (p) => (p.installmentCurrencyId === "CLF" ? p.installmentAmount : null) },
            { header: t("payments.method"), value: (p) => methodWords(i18n, p.method) },
            { header: t("run.outcome"), value: (p) => p.outcome },
            { header: t("mandates.rejection"), value: (p) => p.rejectionCode },
          ]}
        />
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {items.length === 0 ? (
          <Text c="dimmed" size="sm" p="md" data-testid="payments-empty">
            {t("payments.none")}
          </Text>
        ) : (
          <ScrollTable label={t("payments.title")} minWidth={900}>
            <Table striped data-testid="payments-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("payments.date")}</Table.Th>
                  <Table.Th>{t("pastDue.mandate")}</Table.Th>
                  <Table.Th>{t("run.installment")}</Table.Th>
                  <Table.Th ta="right">{t("common.amount")}</Table.Th>
                  <Table.Th>{t("payments.method")}</Table.Th>
                  <Table.Th>{t("run.outcome")}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((p) => (
                  <Table.Tr key={`${p.kind}-${p.reference}`} data-payment={p.reference}>
                    <Table.Td className="nowrap">
                      {p.businessDate ? date(p.businessDate) : dateTime(p.at)}
                      <Text size="xs" c="dimmed">
                        {t(`payments.kind.${p.kind}` as Parameters<typeof t>[0])}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <Anchor component={Link} to={`/mandates/${p.mandateInternalId}`} size="sm">
                        {p.mandateId}
                      </Anchor>
                      <Text size="xs" c="dimmed">
                        {p.mandateName}
                      </Text>
                    </Table.Td>
                    <Table.Td>{p.installmentId}</Table.Td>
                    <Table.Td ta="right">
                      <ChargedAmount {...p} />
                    </Table.Td>
                    <Table.Td>{methodWords(i18n, p.method)}</Table.Td>
                    <Table.Td>
                      <OutcomeText outcome={p.outcome} code={p.rejectionCode} />
                    </Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        )}
        <Pager
          keyset={keyset}
          nextCursor={query.data?.nextCursor}
          count={query.data ? t("payments.count", { count: number(query.data.total) }) : undefined}
        />
      </QueryState>
    </Stack>
  );
}
