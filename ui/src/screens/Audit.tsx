import { Anchor, Badge, Button, Code, Group, NumberInput, Select, Stack, Table, Tabs, Text, TextInput } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { notifications } from "@mantine/notifications";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { AuditChainCheck } from "../components/AuditChainCheck";
import { ExportCsv } from "../components/ExportCsv";
import { Pager } from "../components/Pager";
import { QueryState } from "../components/QueryState";
import { PageTitle } from "../components/Layout";
import { useI18n, useSession } from "../lib/context";
import { formErrors } from "../lib/errors";
import { formatNumber } from "../lib/format";
import { dictionaries, type Key } from "../lib/i18n";
import { useUrlState } from "../lib/urlState";
import { DateField } from "../components/DateField";
import { ScrollTable } from "../components/ScrollTable";

/**
 * A tab's filters in the URL (Back, reload and a shared link keep them): what is typed shows
 * at once and reaches the URL after a pause; the page is the URL's too.
 */
function useFilters<T extends Record<string, string>>(initial: T) {
  const url = useUrlState();
  const fromUrl = Object.fromEntries(Object.keys(initial).map((k) => [k, url.get(k)])) as T;
  const urlKey = JSON.stringify(fromUrl);
  const [values, setValues] = useState<T>(fromUrl);
  const [debounced] = useDebouncedValue(values, 300);
  // A URL changed from outside (Back, Forward) shows again.
  useEffect(() => setValues(JSON.parse(urlKey) as T), [urlKey]);
  const { set: setUrl } = url;
  useEffect(() => {
    const changed = Object.entries(debounced).filter(([k, v]) => v.trim() !== (JSON.parse(urlKey) as T)[k]);
    if (changed.length > 0) setUrl(Object.fromEntries(changed.map(([k, v]) => [k, v.trim()])), { replace: true });
    // Only a pause in typing writes; the URL's own changes arrive through `urlKey`.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [debounced]);
  const clean = Object.fromEntries(Object.entries(fromUrl).filter(([, v]) => v !== "")) as Partial<T>;
  const set = (key: keyof T) => (value: string) => setValues((v) => ({ ...v, [key]: value }));
  return { values, clean, set, keyset: url.keyset };
}

/** The staff actions the UI has words for, to pick one as a filter. */
const AUDIT_ACTIONS = Object.keys(dictionaries.es)
  .filter((key) => key.startsWith("auditAction."))
  .map((key) => key.slice("auditAction.".length));

/** A staff action in words (`mandate.cancel` is "Mandato cancelado"); an action this UI does not know yet keeps its code. */
export function actionLabel(t: (key: Key) => string, action: string): string {
  const key = `auditAction.${action}` as Key;
  const words = t(key);
  return words === key ? action : words;
}

/** A staff action's target; a signature process (`sig_...`) links to its page, as do customers and mandates. */
function TargetLink({ target }: { target: string | null | undefined }) {
  if (!target) return <>—</>;
  const page = target.startsWith("sig_")
    ? `/signatures/${target}`
    : target.startsWith("man_")
      ? `/mandates/${target}`
      : target.startsWith("usr_")
        ? `/customers/${target}`
        : null;
  if (!page) return <>{target}</>;
  return (
    <Anchor component={Link} to={page} size="sm" data-testid={target.startsWith("sig_") ? "audit-signature-link" : undefined}>
      {target}
    </Anchor>
  );
}

/** A merchant request about one signature process (`/signature/internalId/sig_...`) links to it. */
function PathSignatureLink({ path }: { path: string }) {
  const { t } = useI18n();
  const id = /\/signature\/internalId\/(sig_[A-Za-z0-9_-]+)/.exec(path)?.[1];
  if (!id) return null;
  return (
    <Anchor component={Link} to={`/signatures/${id}`} size="xs" display="block" data-testid="audit-signature-link">
      {t("create.viewProcess")}
    </Anchor>
  );
}

/** The few details the server writes as English phrases ("2 values"), in the page's language. */
function detailWords(t: (key: Key, vars?: Record<string, string | number>) => string, detail: string | null | undefined): string {
  if (!detail) return "";
  const values = /^(\d+) values$/.exec(detail);
  return values ? t("audit.values", { count: Number(values[1]) }) : detail;
}

function StaffActions() {
  const { t, dateTime } = useI18n();
  const { values, clean, set, keyset } = useFilters({ email: "", action: "", target: "", from: "", to: "" });
  const fetchPage = (cursor: string | undefined, limit = 50) =>
    payload(api.GET("/audit/staff", { params: { query: { ...clean, cursor, limit } } }));
  const query = useQuery({
    queryKey: ["audit-staff", clean, keyset.cursor],
    queryFn: () => fetchPage(keyset.cursor),
    placeholderData: keepPreviousData,
  });
  return (
    <Stack>
      <Group align="end">
        <TextInput label={t("audit.who")} value={values.email} onChange={(e) => set("email")(e.currentTarget.value)} />
        <Select
          label={t("audit.action")}
          placeholder={t("common.all")}
          clearable
          searchable
          data={AUDIT_ACTIONS.map((action) => ({ value: action, label: actionLabel(t, action) }))}
          value={values.action || null}
          onChange={(v) => set("action")(v ?? "")}
          w={260}
          data-testid="audit-action"
        />
        <TextInput label={t("audit.target")} value={values.target} onChange={(e) => set("target")(e.currentTarget.value)} />
        <DateField label={t("common.from")} value={values.from} onChange={set("from")} />
        <DateField label={t("common.to")} value={values.to} onChange={set("to")} />
        <ExportCsv<Schemas["StaffActionDto"]>
          filename="auditoria-personal.csv"
          fetchPage={(cursor) => fetchPage(cursor, 500)}
          columns={[
            { header: t("audit.when"), value: (a) => a.at },
            { header: t("audit.who"), value: (a) => a.email },
            { header: t("audit.action"), value: (a) => actionLabel(t, a.action) },
            { header: t("audit.target"), value: (a) => a.target },
            { header: t("audit.detail"), value: (a) => detailWords(t, a.detail) },
          ]}
        />
      </Group>
      <QueryState loading={query.isLoading} error={query.error}>
        <ScrollTable label={t("audit.staff")} minWidth={900}>
          <Table striped data-testid="staff-audit">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("audit.when")}</Table.Th>
                <Table.Th>{t("audit.who")}</Table.Th>
                <Table.Th>{t("audit.action")}</Table.Th>
                <Table.Th>{t("audit.target")}</Table.Th>
                <Table.Th>{t("audit.detail")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {(query.data?.items ?? []).map((a, i) => (
                <Table.Tr key={`${a.at}-${i}`}>
                  <Table.Td style={{ whiteSpace: "nowrap" }}>{dateTime(a.at)}</Table.Td>
                  <Table.Td>{a.email}</Table.Td>
                  <Table.Td data-action={a.action} title={a.action}>
                    {actionLabel(t, a.action)}
                  </Table.Td>
                  <Table.Td className="nowrap">
                    <TargetLink target={a.target} />
                  </Table.Td>
                  <Table.Td>
                    <Text size="xs" lineClamp={2} maw={420}>
                      {detailWords(t, a.detail)}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollTable>
        <Pager keyset={keyset} nextCursor={query.data?.nextCursor} />
      </QueryState>
    </Stack>
  );
}

function Requests() {
  const { t, lang, dateTime } = useI18n();
  const { values, clean, set, keyset } = useFilters({ commerce: "", method: "", path: "", status: "", correlationId: "", from: "", to: "" });
  const fetchPage = (cursor: string | undefined, limit = 50) =>
    payload(api.GET("/audit/requests", { params: { query: { ...clean, cursor, limit } } }));
  const query = useQuery({
    queryKey: ["audit-requests", clean, keyset.cursor],
    queryFn: () => fetchPage(keyset.cursor),
    placeholderData: keepPreviousData,
  });
  return (
    <Stack>
      <Group align="end">
        <TextInput label={t("common.commerce")} value={values.commerce} onChange={(e) => set("commerce")(e.currentTarget.value)} w={140} />
        <Select
          label={t("audit.method")}
          clearable
          placeholder={t("common.all")}
          data={["GET", "POST", "PUT", "DELETE"]}
          value={values.method || null}
          onChange={(v) => set("method")(v ?? "")}
          w={120}
        />
        <TextInput label={t("audit.path")} placeholder="/mandate" value={values.path} onChange={(e) => set("path")(e.currentTarget.value)} />
        <TextInput label={t("audit.status")} value={values.status} onChange={(e) => set("status")(e.currentTarget.value)} w={150} />
        <TextInput label={t("audit.correlationId")} value={values.correlationId} onChange={(e) => set("correlationId")(e.currentTarget.value)} />
        <DateField label={t("common.from")} value={values.from} onChange={set("from")} />
        <DateField label={t("common.to")} value={values.to} onChange={set("to")} />
        <ExportCsv<Schemas["RequestDto"]>
          filename="auditoria-api.csv"
          fetchPage={(cursor) => fetchPage(cursor, 500)}
          columns={[
            { header: t("audit.when"), value: (r) => r.at },
            { header: t("audit.method"), value: (r) => r.method },
            { header: t("audit.path"), value: (r) => r.path },
            { header: t("csv.status"), value: (r) => r.status },
            { header: t("audit.duration"), value: (r) => r.durationMs },
            { header: t("common.commerce"), value: (r) => r.commerce },
            { header: t("audit.correlationId"), value: (r) => r.correlationId },
            { header: t("audit.apiKey"), value: (r) => r.apiKeyPrefix },
            { header: t("csv.headers"), value: (r) => r.headers },
          ]}
        />
      </Group>
      <QueryState loading={query.isLoading} error={query.error}>
        <ScrollTable label={t("audit.requests")} minWidth={900}>
          <Table striped data-testid="request-audit">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("audit.when")}</Table.Th>
                <Table.Th>{t("audit.method")}</Table.Th>
                <Table.Th>{t("audit.path")}</Table.Th>
                <Table.Th>HTTP</Table.Th>
                <Table.Th>{t("audit.duration")}</Table.Th>
                <Table.Th>{t("common.commerce")}</Table.Th>
                <Table.Th>{t("audit.correlationId")}</Table.Th>
                <Table.Th>{t("audit.apiKey")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {(query.data?.items ?? []).map((r, i) => (
                <Table.Tr key={`${r.at}-${i}`}>
                  <Table.Td style={{ whiteSpace: "nowrap" }}>{dateTime(r.at)}</Table.Td>
                  <Table.Td>{r.method}</Table.Td>
                  <Table.Td>
                    <Code>{r.path}</Code>
                    <PathSignatureLink path={r.path} />
                  </Table.Td>
                  <Table.Td>
                    <Text c={r.status >= 400 ? "red" : undefined}>{r.status}</Text>
                  </Table.Td>
                  <Table.Td className="nowrap">{formatNumber(r.durationMs, lang, 1)}</Table.Td>
                  <Table.Td>{r.commerce ?? "—"}</Table.Td>
                  <Table.Td>
                    <Text size="xs">{r.correlationId ?? "—"}</Text>
                  </Table.Td>
                  <Table.Td>{r.apiKeyPrefix ?? "—"}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollTable>
        <Pager keyset={keyset} nextCursor={query.data?.nextCursor} />
      </QueryState>
    </Stack>
  );
}

// Requests refused before their API key was accepted are only counted, per minute and reason;
// the retention applies to them and to the request audit alike.
function Refusals() {
  const { t, dateTime } = useI18n();
  const session = useSession();
  const admin = session.can("admin");
  const client = useQueryClient();
  const { values, clean, set } = useFilters({ from: "", to: "" });
  const query = useQuery({
    queryKey: ["audit-refusals", clean],
    queryFn: () => payload(api.GET("/audit/refusals", { params: { query: { ...clean, limit: 1440 } } })),
    placeholderData: keepPreviousData,
  });
  const [days, setDays] = useState<number | string>("");
  const [error, setError] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (value: number) => payload(api.PUT("/settings/audit-retention", { body: { days: value } })),
    onSuccess: () => {
      setError(null);
      setDays("");
      void client.invalidateQueries({ queryKey: ["audit-refusals"] });
      notifications.show({ color: "green", message: t("common.saved") });
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["days"]);
      setError(mapped.fields.days ?? mapped.general);
    },
  });
  const retention = query.data?.retentionDays;
  return (
    <Stack>
      <Group align="end">
        <DateField label={t("common.from")} value={values.from} onChange={set("from")} />
        <DateField label={t("common.to")} value={values.to} onChange={set("to")} />
        <NumberInput
          label={t("audit.retentionDays")}
          description={t("audit.retentionHelp")}
          min={1}
          max={3650}
          w={220}
          value={days === "" ? (retention ?? "") : days}
          onChange={setDays}
          error={error}
          disabled={!admin}
          data-testid="audit-retention"
        />
        {admin && (
          <Button onClick={() => save.mutate(Number(days === "" ? retention : days))} loading={save.isPending}>
            {t("common.save")}
          </Button>
        )}
      </Group>
      <QueryState loading={query.isLoading} error={query.error}>
        <Group data-testid="refusal-totals">
          {(query.data?.totals ?? []).map((total) => (
            <Badge key={total.reason} size="lg" variant="light" color="red">
              {refusalLabel(t, total.reason)}: {total.count}
            </Badge>
          ))}
          {(query.data?.totals ?? []).length === 0 && <Text c="dimmed">{t("audit.noRefusals")}</Text>}
        </Group>
        <ScrollTable label={t("audit.refusals")} minWidth={600}>
          <Table striped data-testid="refusals">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("audit.minute")}</Table.Th>
                <Table.Th>{t("audit.reason")}</Table.Th>
                <Table.Th>{t("audit.count")}</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {(query.data?.items ?? []).map((r) => (
                <Table.Tr key={`${r.minute}-${r.reason}`}>
                  <Table.Td>{dateTime(r.minute)}</Table.Td>
                  <Table.Td>{refusalLabel(t, r.reason)}</Table.Td>
                  <Table.Td>{r.count}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollTable>
      </QueryState>
    </Stack>
  );
}

function refusalLabel(t: ReturnType<typeof useI18n>["t"], reason: string): string {
  switch (reason) {
    case "INVALID_HEADERS":
      return t("audit.reason.headers");
    case "INVALID_API_KEY":
      return t("audit.reason.apiKey");
    case "HOST_NOT_ALLOWED":
      return t("audit.reason.host");
    default:
      return reason;
  }
}

export function Audit() {
  const { t } = useI18n();
  const [params, setParams] = useSearchParams();
  const tab = params.get("tab") ?? "staff";
  return (
    <Stack>
      <PageTitle title={t("audit.title")} />
      <Tabs value={tab} onChange={(v) => setParams(v ? { tab: v } : {})} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="staff">{t("audit.staff")}</Tabs.Tab>
          <Tabs.Tab value="requests">{t("audit.requests")}</Tabs.Tab>
          <Tabs.Tab value="refusals">{t("audit.refusals")}</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="staff" pt="md">
          <Stack>
            <AuditChainCheck />
            <StaffActions />
          </Stack>
        </Tabs.Panel>
        <Tabs.Panel value="requests" pt="md">
          <Requests />
        </Tabs.Panel>
        <Tabs.Panel value="refusals" pt="md">
          <Refusals />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
