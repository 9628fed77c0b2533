import { Anchor, Table, Text } from "@mantine/core";
import { Link } from "react-router";
import type { Schemas } from "../api/client";
import type { Column } from "../lib/csv";
import { useI18n, type I18n } from "../lib/context";
import { StateBadge } from "./StateBadge";
import { formatRut } from "../lib/rut";
import { ScrollTable } from "./ScrollTable";

export type MandateLine = Schemas["MandateLineDto"];

export function mandateColumns(i18n: I18n): Column<MandateLine>[] {
  const { t, label } = i18n;
  return [
    { header: t("csv.internalId"), value: (m) => m.internalId },
    { header: t("common.id"), value: (m) => m.id },
    { header: t("common.name"), value: (m) => m.name },
    { header: t("common.type"), value: (m) => label(m.type) },
    { header: t("common.state"), value: (m) => label(m.state.name) },
    { header: t("common.commerce"), value: (m) => m.commerce },
    { header: t("csv.userId"), value: (m) => m.customer.userId },
    { header: "RUT", value: (m) => formatRut(m.customer.rut) },
    { header: t("common.customer"), value: (m) => m.customer.name },
    { header: t("common.amount"), value: (m) => m.amount },
    { header: t("common.currency"), value: (m) => m.currencyId },
    { header: t("mandates.periodicity"), value: (m) => (m.periodicity ? label(m.periodicity) : null) },
    { header: t("common.createdAt"), value: (m) => m.createdAt },
  ];
}

export function MandateTable({ items, showCustomer = true }: { items: MandateLine[]; showCustomer?: boolean }) {
  const { t, label, money, dateTime } = useI18n();
  if (items.length === 0) {
    return (
      <Text c="dimmed" size="sm" p="md">
        {t("app.none")}
      </Text>
    );
  }
  return (
    <ScrollTable label={t("nav.mandates")} minWidth={800}>
      <Table striped highlightOnHover data-testid="mandates-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>{t("common.id")}</Table.Th>
            <Table.Th>{t("common.name")}</Table.Th>
            <Table.Th>{t("common.type")}</Table.Th>
            <Table.Th>{t("common.state")}</Table.Th>
            {showCustomer && <Table.Th>{t("common.customer")}</Table.Th>}
            <Table.Th>{t("common.commerce")}</Table.Th>
            <Table.Th ta="right">{t("common.amount")}</Table.Th>
            <Table.Th>{t("common.createdAt")}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {items.map((m) => (
            <Table.Tr key={m.internalId} data-mandate={m.internalId}>
              <Table.Td>
                <Anchor component={Link} to={`/mandates/${m.internalId}`} size="sm">
                  {m.id}
                </Anchor>
              </Table.Td>
              <Table.Td>{m.name}</Table.Td>
              <Table.Td>{label(m.type)}</Table.Td>
              <Table.Td>
                <StateBadge state={m.state} />
              </Table.Td>
              {showCustomer && (
                <Table.Td>
                  <Anchor component={Link} to={`/customers/${m.customer.internalUserId}`} size="sm">
                    {m.customer.name}
                  </Anchor>
                  <Text size="xs" c="dimmed">
                    <span className="nowrap">{formatRut(m.customer.rut)}</span> · <span className="nowrap">{m.customer.userId}</span>
                  </Text>
                </Table.Td>
              )}
              <Table.Td className="nowrap">{formatRut(m.commerce)}</Table.Td>
              <Table.Td ta="right">
                {money(m.amount, m.currencyId)}
                {m.periodicity ? (
                  <Text size="xs" c="dimmed">
                    {label(m.periodicity)}
                  </Text>
                ) : null}
              </Table.Td>
              <Table.Td>{dateTime(m.createdAt)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </ScrollTable>
  );
}
