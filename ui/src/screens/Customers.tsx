import { Anchor, Card, Group, SimpleGrid, Stack, Table, Text, TextInput, Title } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link, useParams } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { CommerceSelect } from "../components/CommerceSelect";
import { ExportCsv } from "../components/ExportCsv";
import { MandateTable } from "../components/MandateTable";
import { Pager, useKeyset } from "../components/Pager";
import { QueryState } from "../components/QueryState";
import { PageTitle } from "../components/Layout";
import { useI18n } from "../lib/context";

type CustomerLine = Schemas["CustomerLineDto"];

function fullName(c: Schemas["CustomerDto"]): string {
  const p = c.personalInformation;
  return [p.firstName, p.lastName, p.secondLastName].filter(Boolean).join(" ");
}

export function Customers() {
  const { t, dateTime } = useI18n();
  const [text, setText] = useState("");
  const [q] = useDebouncedValue(text.trim(), 300);
  const [commerce, setCommerce] = useState<string | null>(null);
  const keyset = useKeyset();
  const { reset } = keyset;
  useEffect(() => reset(), [q, commerce, reset]);
  const filters = { q: q || undefined, commerce: commerce ?? undefined };
  const fetchPage = (cursor: string | undefined, limit = 50) =>
    payload(api.GET("/customers", { params: { query: { ...filters, cursor, limit } } }));
  const query = useQuery({
    queryKey: ["customers", filters, keyset.cursor],
    queryFn: () => fetchPage(keyset.cursor),
    placeholderData: keepPreviousData,
  });
  const items = query.data?.items ?? [];
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
        <CommerceSelect value={commerce} onChange={setCommerce} />
        <ExportCsv<CustomerLine>
          filename="clientes.csv"
          fetchPage={(cursor) => fetchPage(cursor, 200)}
          columns={[
            { header: "internalUserId", value: (c) => c.customer.internalUserId },
            { header: "userId", value: (c) => c.customer.userId },
            { header: "RUT", value: (c) => c.customer.identificationDocument.number },
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
          <Table.ScrollContainer minWidth={800}>
            <Table striped highlightOnHover data-testid="customers-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("common.name")}</Table.Th>
                  <Table.Th>{t("customers.rut")}</Table.Th>
                  <Table.Th>{t("customers.userId")}</Table.Th>
                  <Table.Th>{t("common.email")}</Table.Th>
                  <Table.Th>{t("common.commerce")}</Table.Th>
                  <Table.Th ta="right">{t("customers.mandates")}</Table.Th>
                  <Table.Th>{t("common.createdAt")}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((c) => (
                  <Table.Tr key={c.customer.internalUserId}>
                    <Table.Td>
                      <Anchor component={Link} to={`/customers/${c.customer.internalUserId}`} size="sm">
                        {fullName(c.customer)}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{c.customer.identificationDocument.number}</Table.Td>
                    <Table.Td>{c.customer.userId}</Table.Td>
                    <Table.Td>{c.customer.contacts.email}</Table.Td>
                    <Table.Td>{c.commerce}</Table.Td>
                    <Table.Td ta="right">{c.mandates}</Table.Td>
                    <Table.Td>{dateTime(c.customer.createdAt)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        <Pager keyset={keyset} nextCursor={query.data?.nextCursor} />
      </QueryState>
    </Stack>
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
  const query = useQuery({
    queryKey: ["customer", id],
    queryFn: () => payload(api.GET("/customers/{internalUserId}", { params: { path: { internalUserId: id } } })),
  });
  const d = query.data;
  const address = d?.customer.address as Record<string, string> | null | undefined;
  return (
    <Stack>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {d && (
          <>
            <PageTitle title={fullName(d.customer)} />
            <Card withBorder>
              <SimpleGrid cols={{ base: 2, md: 4 }}>
                <Field name={t("customers.rut")} value={d.customer.identificationDocument.number} />
                <Field name={t("customers.userId")} value={d.customer.userId} />
                <Field name={t("customers.internalId")} value={d.customer.internalUserId} />
                <Field name={t("common.commerce")} value={d.commerce} />
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
            <Title order={4}>{t("customers.mandates")}</Title>
            <MandateTable items={d.mandates} showCustomer={false} />
          </>
        )}
      </QueryState>
    </Stack>
  );
}
