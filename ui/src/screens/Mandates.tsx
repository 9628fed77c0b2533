import { Button, Group, MultiSelect, Select, Stack, TextInput } from "@mantine/core";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useEffect } from "react";
import { useNavigate } from "react-router";
import { api, payload } from "../api/client";
import { CommerceSelect } from "../components/CommerceSelect";
import { DateField } from "../components/DateField";
import { ExportCsv } from "../components/ExportCsv";
import { MandateTable, mandateColumns, type MandateLine } from "../components/MandateTable";
import { NewMandateButton } from "../components/NewMandateDialog";
import { Pager } from "../components/Pager";
import { QueryState } from "../components/QueryState";
import { PageTitle } from "../components/Layout";
import { useI18n } from "../lib/context";
import { useUrlState, useUrlText } from "../lib/urlState";

const STATES = ["PENDING", "ACTIVE", "CANCELLED", "FINISHED", "DELETED"];
const TYPES = ["DYNAMIC", "PERMANENT", "SUBSCRIPTION", "ONEPAY"];
const SORTS = ["createdAt.desc", "createdAt.asc", "mandateId.asc", "mandateId.desc"] as const;
type Sort = (typeof SORTS)[number];

/** Mandates with filters, search, order and page in the URL. */
export function Mandates() {
  const i18n = useI18n();
  const { t, label, number } = i18n;
  const navigate = useNavigate();
  const url = useUrlState();
  const [search, setSearch] = useUrlText(url, "q");
  const sortText = url.get("sort");
  const sort: Sort = (SORTS as readonly string[]).includes(sortText) ? (sortText as Sort) : "createdAt.desc";
  const filters = {
    state: url.get("state") || undefined,
    type: url.get("type") || undefined,
    commerce: url.get("commerce") || undefined,
    customer: url.get("customer") || undefined,
    id: url.get("id") || undefined,
    q: url.get("q") || undefined,
    createdFrom: url.get("createdFrom") || undefined,
    createdTo: url.get("createdTo") || undefined,
    sort,
  };
  const fetchPage = (cursor: string | undefined, limit = 50) =>
    payload(api.GET("/mandates", { params: { query: { ...filters, cursor, limit } } }));
  const query = useQuery({
    queryKey: ["mandates", url.filterKey, url.keyset.cursor],
    queryFn: () => fetchPage(url.keyset.cursor),
    placeholderData: keepPreviousData,
  });
  // `/mandates?id=GYM-001` is a link to one mandate by the merchant's mandateId (or ours): when
  // it names exactly one, its page replaces the list in the history, so Back never returns here.
  const single = filters.id && query.data?.total === 1 ? query.data.items[0] : undefined;
  useEffect(() => {
    if (single) void navigate(`/mandates/${single.internalId}`, { replace: true });
  }, [single, navigate]);
  // An id typed in full opens its mandate: the merchant's mandateId or ours.
  const open = () => {
    const text = search.trim();
    const items = query.data?.items ?? [];
    const exact = items.filter((m) => m.id === text || m.internalId === text);
    if (exact.length === 1) void navigate(`/mandates/${exact[0].internalId}`);
  };
  const sortLabels: Record<Sort, string> = {
    "createdAt.desc": t("common.newestFirst"),
    "createdAt.asc": t("common.oldestFirst"),
    "mandateId.asc": t("mandates.idAsc"),
    "mandateId.desc": t("mandates.idDesc"),
  };
  return (
    <Stack>
      <PageTitle title={t("mandates.title")} />
      <Group align="end" gap="sm">
        <TextInput
          label={t("common.search")}
          placeholder={t("mandates.search")}
          value={search}
          onChange={(e) => setSearch(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter") open();
          }}
          w={280}
          data-testid="mandate-search"
        />
        <MultiSelect
          label={t("common.state")}
          placeholder={t("common.all")}
          data={STATES.map((s) => ({ value: s, label: label(s) }))}
          value={url.getList("state")}
          onChange={(v) => url.set({ state: v })}
          w={220}
          data-testid="filter-state"
        />
        <MultiSelect
          label={t("common.type")}
          placeholder={t("common.all")}
          data={TYPES.map((s) => ({ value: s, label: label(s) }))}
          value={url.getList("type")}
          onChange={(v) => url.set({ type: v })}
          w={220}
          data-testid="filter-type"
        />
        <CommerceSelect value={url.get("commerce") || null} onChange={(v) => url.set({ commerce: v })} />
        <NewMandateButton commerce={url.get("commerce") || null} />
        {filters.customer && (
          <TextInput
            label={t("mandates.customerFilter")}
            value={filters.customer}
            onChange={(e) => url.set({ customer: e.currentTarget.value }, { replace: true })}
            w={200}
            data-testid="filter-customer"
          />
        )}
        <DateField
          label={t("mandates.createdFrom")}
          value={url.get("createdFrom")}
          onChange={(v) => url.set({ createdFrom: v })}
          testId="filter-from"
        />
        <DateField
          label={t("mandates.createdTo")}
          value={url.get("createdTo")}
          onChange={(v) => url.set({ createdTo: v })}
          testId="filter-to"
        />
        <Select
          label={t("common.sort")}
          data={SORTS.map((s) => ({ value: s, label: sortLabels[s] }))}
          value={sort}
          onChange={(v) => url.set({ sort: v === "createdAt.desc" ? null : v })}
          allowDeselect={false}
          w={200}
          data-testid="mandate-sort"
        />
        <Button variant="subtle" onClick={url.clear}>
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
        <Pager
          keyset={url.keyset}
          nextCursor={query.data?.nextCursor}
          count={query.data ? t("mandates.count", { count: number(query.data.total) }) : undefined}
        />
      </QueryState>
    </Stack>
  );
}
