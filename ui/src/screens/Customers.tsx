import { Anchor, Card, Group, Select, SimpleGrid, Stack, Table, Text, TextInput, Title, UnstyledButton } from "@mantine/core";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link, useLocation, useParams } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { CommerceSelect } from "../components/CommerceSelect";
import { NewCustomerButton } from "../components/NewCustomerDialog";
import { NewMandateButton } from "../components/NewMandateDialog";
import { ExportCsv } from "../components/ExportCsv";
import { MandateTable } from "../components/MandateTable";
import { Pager } from "../components/Pager";
import { QueryState } from "../components/QueryState";
import { PageTitle } from "../components/Layout";
import { useI18n } from "../lib/context";
import { useUrlState, useUrlText } from "../lib/urlState";
import { formatRut } from "../lib/rut";
import { ScrollTable } from "../components/ScrollTable";
import { CustomerPayments } from "./CustomerPayments";

type CustomerLine = Schemas["CustomerLineDto"];

function fullName(c: Schemas["CustomerDto"]): string {
  const p = c.personalInformation;
  return [p.firstName, p.lastName, p.secondLastName].filter(Boolean).join(" ");
}

const SORTS = ["createdAt.desc", "createdAt.asc", "name.asc", "name.desc"] as const;
type Sort = (typeof SORTS)[number];

/** Customers with search, commerce, order and page in the URL. */
export function Customers() {
  const { t, dateTime, number } = useI18n();
  const location = useLocation();
  const url = useUrlState();
  const [text, setText] = useUrlText(url, "q");
  const sortText = url.get("sort");
  const sort: Sort = (SORTS as readonly string[]).includes(sortText) ? (sortText as Sort) : "createdAt.desc";
  const commerce = url.get("commerce") || null;
  const filters = { q: url.get("q") || undefined, commerce: commerce ?? undefined, sort };
  const fetchPage = (cursor: string | undefined, limit = 50) =>
    payload(api.GET("/customers", { params: { query: { ...filters, cursor, limit } } }));
  const query = useQuery({
    queryKey: ["customers", url.filterKey, url.keyset.cursor],
    queryFn: () => fetchPage(url.keyset.cursor),
    placeholderData: keepPreviousData,
  });
  const items = query.data?.items ?? [];
  const sortLabels: Record<Sort, string> = {
    "createdAt.desc": t("common.newestFirst"),
    "createdAt.asc": t("common.oldestFirst"),
    "name.asc": t("customers.nameAsc"),
    "name.desc": t("customers.nameDesc"),
  };
  return (
    <Stack>
      <PageTitle title={t("customers.title")} />
      <Group align="end">
        <TextInput
          label={t("common.search")}
          placeholder={t("customers.search")}
          value={text}
          onChange={(e) => setText(e.currentTarget.value)}
          w={320}
          data-testid="customer-search"
        />
        <CommerceSelect value={commerce} onChange={(v) => url.set({ commerce: v })} />
        <NewCustomerButton commerce={commerce} />
        <Select
          label={t("common.sort")}
          data={SORTS.map((s) => ({ value: s, label: sortLabels[s] }))}
          value={sort}
          onChange={(v) => url.set({ sort: v === "createdAt.desc" ? null : v })}
          allowDeselect={false}
          w={200}
          data-testid="customer-sort"
        />
        <ExportCsv<CustomerLine>
          filename="clientes.csv"
          fetchPage={(cursor) => fetchPage(cursor, 200)}
          columns={[
            { header: t("csv.internalUserId"), value: (c) => c.customer.internalUserId },
            { header: t("csv.userId"), value: (c) => c.customer.userId },
            { header: "RUT", value: (c) => formatRut(c.customer.identificationDocument.number) },
            { header: t("common.name"), value: (c) => fullName(c.customer) },
            { header: t("common.email"), value: (c) => c.customer.contacts.email },
            { header: t("customers.phone"), value: (c) => c.customer.contacts.phone },
            { header: t("common.commerce"), value: (c) => c.commerce },
            { header: t("customers.mandates"), value: (c) => c.mandates },
            { header: t("common.createdAt"), value: (c) => c.customer.createdAt },
          ]}
        />
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {items.length === 0 ? (
          <Text c="dimmed">{t("app.none")}</Text>
        ) : (
          <ScrollTable label={t("nav.customers")} minWidth={800}>
            <Table striped highlightOnHover data-testid="customers-table">
              <Table.Thead>
                <Table.Tr>
                  <SortableTh column="name" sort={sort} onSort={(v) => url.set({ sort: v })}>
                    {t("common.name")}
                  </SortableTh>
                  <Table.Th>{t("customers.rut")}</Table.Th>
                  <Table.Th>{t("customers.userId")}</Table.Th>
                  <Table.Th>{t("common.email")}</Table.Th>
                  <Table.Th>{t("common.commerce")}</Table.Th>
                  <Table.Th ta="right">{t("customers.mandates")}</Table.Th>
                  <SortableTh column="createdAt" sort={sort} onSort={(v) => url.set({ sort: v })}>
                    {t("common.createdAt")}
                  </SortableTh>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((c) => (
                  <Table.Tr key={c.customer.internalUserId}>
                    <Table.Td>
                      <Anchor component={Link} to={`/customers/${c.customer.internalUserId}`} state={{ list: location.search }} size="sm">
                        {fullName(c.customer)}
                      </Anchor>
                    </Table.Td>
                    <Table.Td className="nowrap" data-testid="customer-rut">{formatRut(c.customer.identificationDocument.number)}</Table.Td>
                    <Table.Td>{c.customer.userId}</Table.Td>
                    <Table.Td>{c.customer.contacts.email}</Table.Td>
                    <Table.Td className="nowrap">{formatRut(c.commerce)}</Table.Td>
                    <Table.Td ta="right">{c.mandates}</Table.Td>
                    <Table.Td>{dateTime(c.customer.createdAt)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        )}
        <Pager
          keyset={url.keyset}
          nextCursor={query.data?.nextCursor}
          count={query.data ? t("customers.count", { count: number(query.data.total) }) : undefined}
        />
      </QueryState>
    </Stack>
  );
}

/**
 * A column header that sorts the list by its column: a first click sorts it (names A–Z,
 * dates newest first), the next reverses it; `aria-sort` tells screen readers the order.
 */
function SortableTh({
  column,
  sort,
  onSort,
  children,
}: {
  column: "name" | "createdAt";
  sort: Sort;
  onSort: (sort: Sort | null) => void;
  children: React.ReactNode;
}) {
  const [current, direction] = sort.split(".") as [string, "asc" | "desc"];
  const active = current === column;
  const first: Sort = column === "name" ? "name.asc" : "createdAt.desc";
  const next: Sort = active ? (`${column}.${direction === "asc" ? "desc" : "asc"}` as Sort) : first;
  return (
    <Table.Th aria-sort={active ? (direction === "asc" ? "ascending" : "descending") : "none"}>
      <UnstyledButton onClick={() => onSort(next === "createdAt.desc" ? null : next)} fw={700} fz="sm">
        {children} {active ? (direction === "asc" ? "▲" : "▼") : ""}
      </UnstyledButton>
    </Table.Th>
  );
}

function Field({ name, value }: { name: string; value: React.ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {name}
      </Text>
      <Text size="sm">{value ?? "—"}</Text>
    </div>
  );
}

export function CustomerDetail() {
  const { id = "" } = useParams();
  const { t, dateTime } = useI18n();
  // Back to the list as it was left (its search, sort and page), when it was the way here.
  const from = (useLocation().state as { list?: string } | null)?.list ?? "";
  const query = useQuery({
    queryKey: ["customer", id],
    queryFn: () => payload(api.GET("/customers/{internalUserId}", { params: { path: { internalUserId: id } } })),
  });
  const d = query.data;
  const address = d?.customer.address as Record<string, string> | null | undefined;
  return (
    <Stack>
      <Anchor component={Link} to={`/customers${from}`} size="sm" data-testid="back-to-customers">
        {t("customers.backToList")}
      </Anchor>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {d && (
          <>
            <PageTitle title={fullName(d.customer)} />
            <Card withBorder>
              <SimpleGrid cols={{ base: 2, md: 4 }}>
                <Field name={t("customers.rut")} value={<span className="nowrap" data-testid="customer-rut">{formatRut(d.customer.identificationDocument.number)}</span>} />
                <Field name={t("customers.userId")} value={d.customer.userId} />
                <Field name={t("customers.internalId")} value={d.customer.internalUserId} />
                <Field name={t("common.commerce")} value={formatRut(d.commerce)} />
                <Field name={t("common.email")} value={d.customer.contacts.email} />
                <Field name={t("customers.phone")} value={d.customer.contacts.phone} />
                <Field
                  name={t("customers.address")}
                  value={
                    address
                      ? [address.street, address.number, address.apartment, address.commune, address.city]
                          .filter(Boolean)
                          .join(", ")
                      : null
                  }
                />
                <Field name={t("common.createdAt")} value={dateTime(d.customer.createdAt)} />
              </SimpleGrid>
            </Card>
            <Group justify="space-between">
              <Title order={2} size="h4">{t("customers.mandates")}</Title>
              <NewMandateButton
                customer={{
                  internalUserId: d.customer.internalUserId,
                  commerce: d.commerce,
                  label: `${fullName(d.customer)} (${formatRut(d.customer.identificationDocument.number)})`,
                }}
              />
            </Group>
            <MandateTable items={d.mandates} showCustomer={false} />
            <CustomerPayments customerId={d.customer.internalUserId} />
          </>
        )}
      </QueryState>
    </Stack>
  );
}
