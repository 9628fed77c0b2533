import { Button, Group, MultiSelect, Stack, TextInput } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { useSearchParams } from "react-router";
import { api, payload } from "../api/client";
import { CommerceSelect } from "../components/CommerceSelect";
import { ExportCsv } from "../components/ExportCsv";
import { MandateTable, mandateColumns, type MandateLine } from "../components/MandateTable";
import { Pager, useKeyset } from "../components/Pager";
import { QueryState } from "../components/QueryState";
import { PageTitle } from "../components/Layout";
import { useI18n } from "../lib/context";

const STATES = ["PENDING", "ACTIVE", "CANCELLED", "FINISHED", "DELETED"];
const TYPES = ["DYNAMIC", "PERMANENT", "SUBSCRIPTION", "ONEPAY"];

export function Mandates() {
  const i18n = useI18n();
  const { t, label } = i18n;
  const [params, setParams] = useSearchParams();
  const [states, setStates] = useState<string[]>(params.get("state")?.split(",").filter(Boolean) ?? []);
  const [types, setTypes] = useState<string[]>([]);
  const [commerce, setCommerce] = useState<string | null>(null);
  const [customerText, setCustomerText] = useState(params.get("customer") ?? "");
  const [idText, setIdText] = useState("");
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [customer] = useDebouncedValue(customerText.trim(), 300);
  const [id] = useDebouncedValue(idText.trim(), 300);
  const filters = {
    state: states.join(",") || undefined,
    type: types.join(",") || undefined,
    commerce: commerce ?? undefined,
    customer: customer || undefined,
    id: id || undefined,
    createdFrom: from || undefined,
    createdTo: to || undefined,
  };
  const keyset = useKeyset();
  const { reset } = keyset;
  const filterKey = JSON.stringify(filters);
  useEffect(() => reset(), [filterKey, reset]);
  const fetchPage = (cursor: string | undefined, limit = 50) =>
    payload(api.GET("/mandates", { params: { query: { ...filters, cursor, limit } } }));
  const query = useQuery({
    queryKey: ["mandates", filters, keyset.cursor],
    queryFn: () => fetchPage(keyset.cursor),
    placeholderData: keepPreviousData,
  });
  const clear = () => {
    setStates([]);
    setTypes([]);
    setCommerce(null);
    setCustomerText("");
    setIdText("");
    setFrom("");
    setTo("");
    setParams({});
  };
  return (
    <Stack>
      <PageTitle title={t("mandates.title")} />
      <Group align="end" gap="sm">
        <MultiSelect
          label={t("common.state")}
          placeholder={t("common.all")}
          data={STATES.map((s) => ({ value: s, label: label(s) }))}
          value={states}
          onChange={setStates}
          w={220}
          data-testid="filter-state"
        />
        <MultiSelect
          label={t("common.type")}
          placeholder={t("common.all")}
          data={TYPES.map((s) => ({ value: s, label: label(s) }))}
          value={types}
          onChange={setTypes}
          w={220}
        />
        <CommerceSelect value={commerce} onChange={setCommerce} />
        <TextInput
          label={t("mandates.customerFilter")}
          value={customerText}
          onChange={(e) => setCustomerText(e.currentTarget.value)}
          w={220}
          data-testid="filter-customer"
        />
        <TextInput
          label={t("mandates.idFilter")}
          value={idText}
          onChange={(e) => setIdText(e.currentTarget.value)}
          w={180}
          data-testid="filter-id"
        />
        <TextInput type="date" label={t("mandates.createdFrom")} value={from} onChange={(e) => setFrom(e.currentTarget.value)} />
        <TextInput type="date" label={t("mandates.createdTo")} value={to} onChange={(e) => setTo(e.currentTarget.value)} />
        <Button variant="subtle" onClick={clear}>
          {t("common.clear")}
        </Button>
        <ExportCsv<MandateLine>
          filename="mandatos.csv"
          columns={mandateColumns(i18n)}
          fetchPage={(cursor) => fetchPage(cursor, 200)}
        />
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        <MandateTable items={query.data?.items ?? []} />
        <Pager keyset={keyset} nextCursor={query.data?.nextCursor} />
      </QueryState>
    </Stack>
  );
}
