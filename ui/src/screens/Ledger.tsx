import { Alert, Badge, Button, Card, Group, Select, SimpleGrid, Stack, Table, Text, Textarea, Title } from "@mantine/core";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { api, payload, type Schemas } from "../api/client";
import { useCommerces } from "../components/CommerceSelect";
import { ExportCsv } from "../components/ExportCsv";
import { DateField } from "../components/DateField";
import { Pager, type PagerKeyset } from "../components/Pager";
import { QueryState } from "../components/QueryState";
import { PageTitle } from "../components/Layout";
import { useI18n, useSession } from "../lib/context";
import { errorText } from "../lib/errors";
import { useUrlState } from "../lib/urlState";
import { ScrollTable } from "../components/ScrollTable";
import { formatRut } from "../lib/rut";

type Entry = Schemas["LedgerEntry"];
type Reconciliation = Schemas["Reconciliation"];

const KINDS = ["CHARGE", "REVERSAL", "MANUAL_PAYMENT", "ANNULMENT"] as const;
type Kind = (typeof KINDS)[number];

/**
 * A commerce's ledger: entries, daily settlements, CSV export, payout report reconciliation.
 * The commerce, period, kind and page live in the URL.
 */
export function Ledger() {
  const { t } = useI18n();
  const commerces = useCommerces();
  const url = useUrlState();
  const first = commerces.data?.items[0]?.code ?? null;
  const commerce = url.get("commerce") || first;
  const from = url.get("from");
  const to = url.get("to");
  const kindText = url.get("kind");
  const kind = (KINDS as readonly string[]).includes(kindText) ? (kindText as Kind) : null;

  return (
    <Stack>
      <PageTitle title={t("ledger.title")} />
      <Group align="end" wrap="wrap">
        <Select
          label={t("ledger.commerce")}
          data={(commerces.data?.items ?? []).map((c) => ({ value: c.code, label: `${c.name} (${formatRut(c.code)})` }))}
          value={commerce}
          onChange={(v) => url.set({ commerce: v })}
          w={{ base: "100%", sm: 360 }}
          comboboxProps={{ width: "target", position: "bottom-start" }}
          data-testid="ledger-commerce"
        />
        <DateField label={t("common.from")} value={from} onChange={(v) => url.set({ from: v })} testId="ledger-from" />
        <DateField label={t("common.to")} value={to} onChange={(v) => url.set({ to: v })} testId="ledger-to" />
        <KindSelect value={kind} onChange={(v) => url.set({ kind: v })} />
      </Group>
      {commerce ? (
        <>
          <Settlements commerce={commerce} from={from} to={to} />
          <Entries commerce={commerce} from={from} to={to} kind={kind} keyset={url.keyset} />
          <Reconcile commerce={commerce} />
        </>
      ) : (
        <Alert color="gray">{t("ledger.pickCommerce")}</Alert>
      )}
    </Stack>
  );
}

function KindSelect({ value, onChange }: { value: Kind | null; onChange: (k: Kind | null) => void }) {
  const { t, label } = useI18n();
  return (
    <Select
      label={t("ledger.kind")}
      placeholder={t("common.all")}
      clearable
      data={KINDS.map((k) => ({ value: k, label: label(k) }))}
      value={value}
      onChange={(v) => onChange((KINDS as readonly string[]).includes(v ?? "") ? (v as Kind) : null)}
      w={200}
    />
  );
}

function period(from: string, to: string) {
  return { from: from || undefined, to: to || undefined };
}

function Settlements({ commerce, from, to }: { commerce: string; from: string; to: string }) {
  const { t, date, money, label } = useI18n();
  const query = useQuery({
    queryKey: ["ledger-settlements", commerce, from, to],
    queryFn: () => payload(api.GET("/ledger-settlements", { params: { query: { commerce, ...period(from, to) } } })),
  });
  return (
    <Card withBorder>
      <Text fw={600} mb="xs">
        {t("ledger.settlements")}
      </Text>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {query.data && query.data.items.length === 0 && <Text c="dimmed">{t("ledger.noSettlements")}</Text>}
        {query.data && query.data.items.length > 0 && (
          <ScrollTable label={t("ledger.settlements")} minWidth={640}>
            <Table striped data-testid="settlements-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("ledger.businessDate")}</Table.Th>
                  <Table.Th>{t("ledger.method")}</Table.Th>
                  <Table.Th>{t("ledger.gross")}</Table.Th>
                  <Table.Th>{t("ledger.fees")}</Table.Th>
                  <Table.Th>{t("ledger.net")}</Table.Th>
                  <Table.Th>{t("ledger.count")}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {query.data.items.map((s) => (
                  <Table.Tr key={`${s.businessDate}-${s.paymentMethod}-${s.currencyId}`}>
                    <Table.Td>{date(s.businessDate)}</Table.Td>
                    <Table.Td>{label(s.paymentMethod)}</Table.Td>
                    <Table.Td>{money(s.gross, s.currencyId)}</Table.Td>
                    <Table.Td>{money(s.fees, s.currencyId)}</Table.Td>
                    <Table.Td>{money(s.net, s.currencyId)}</Table.Td>
                    <Table.Td>{s.count}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        )}
      </QueryState>
    </Card>
  );
}

function Entries({
  commerce,
  from,
  to,
  kind,
  keyset,
}: {
  commerce: string;
  from: string;
  to: string;
  kind: Kind | null;
  keyset: PagerKeyset & { cursor: string | undefined };
}) {
  const { t, date, dateTime, money, label } = useI18n();
  const fetchPage = (cursor: string | undefined, limit: number) =>
    payload(
      api.GET("/ledger-entries", {
        params: { query: { commerce, ...period(from, to), kind: kind ?? undefined, cursor, limit } },
      }),
    );
  const query = useQuery({
    queryKey: ["ledger-entries", commerce, from, to, kind, keyset.cursor],
    queryFn: () => fetchPage(keyset.cursor, 50),
  });
  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Title order={2} size="h4">{t("ledger.entries")}</Title>
        <ExportCsv<Entry>
          filename={`libro-${commerce}.csv`}
          fetchPage={(cursor) => fetchPage(cursor, 500)}
          columns={[
            { header: t("csv.entryId"), value: (e) => e.entryId },
            { header: t("ledger.kind"), value: (e) => label(e.kind) },
            { header: t("ledger.businessDate"), value: (e) => e.businessDate },
            { header: t("common.amount"), value: (e) => e.amount },
            { header: t("common.currency"), value: (e) => e.currencyId },
            { header: t("ledger.fee"), value: (e) => e.fee },
            { header: t("ledger.net"), value: (e) => e.net },
            { header: t("ledger.method"), value: (e) => (e.paymentMethod === null ? null : label(e.paymentMethod)) },
            { header: t("csv.mandateInternalId"), value: (e) => e.mandateInternalId },
            { header: t("csv.mandateId"), value: (e) => e.mandateId },
            { header: t("csv.installmentInternalId"), value: (e) => e.installmentInternalId },
            { header: t("ledger.installment"), value: (e) => e.installmentId },
            { header: t("ledger.reference"), value: (e) => e.acquirerReference },
            { header: t("common.createdAt"), value: (e) => e.createdAt },
          ]}
        />
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {query.data && query.data.items.length === 0 && <Alert color="gray">{t("ledger.noEntries")}</Alert>}
        {query.data && query.data.items.length > 0 && (
          <ScrollTable label={t("ledger.entries")} minWidth={1000}>
            <Table striped data-testid="ledger-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("ledger.businessDate")}</Table.Th>
                  <Table.Th>{t("ledger.kind")}</Table.Th>
                  <Table.Th>{t("common.amount")}</Table.Th>
                  <Table.Th>{t("ledger.fee")}</Table.Th>
                  <Table.Th>{t("ledger.net")}</Table.Th>
                  <Table.Th>{t("ledger.method")}</Table.Th>
                  <Table.Th>{t("ledger.mandate")}</Table.Th>
                  <Table.Th>{t("ledger.installment")}</Table.Th>
                  <Table.Th>{t("ledger.reference")}</Table.Th>
                  <Table.Th>{t("common.createdAt")}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {query.data.items.map((e) => (
                  <Table.Tr key={e.entryId}>
                    <Table.Td>{date(e.businessDate)}</Table.Td>
                    <Table.Td>
                      <Badge variant="light" color={e.kind === "REVERSAL" ? "red" : e.kind === "ANNULMENT" ? "gray" : "green"}>
                        {label(e.kind)}
                      </Badge>
                    </Table.Td>
                    <Table.Td>{money(e.amount, e.currencyId)}</Table.Td>
                    <Table.Td>{e.fee === null ? "—" : money(e.fee, e.currencyId)}</Table.Td>
                    <Table.Td>{e.net === null ? "—" : money(e.net, e.currencyId)}</Table.Td>
                    <Table.Td>{label(e.paymentMethod)}</Table.Td>
                    <Table.Td>{e.mandateId}</Table.Td>
                    <Table.Td>{e.installmentId}</Table.Td>
                    <Table.Td>{e.acquirerReference ?? "—"}</Table.Td>
                    <Table.Td>{dateTime(e.createdAt)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        )}
        <Pager keyset={keyset} nextCursor={query.data?.nextCursor} />
      </QueryState>
    </Stack>
  );
}

function Reconcile({ commerce }: { commerce: string }) {
  const { t } = useI18n();
  const session = useSession();
  const queryClient = useQueryClient();
  const [csv, setCsv] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [result, setResult] = useState<Reconciliation | null>(null);
  const history = useQuery({
    queryKey: ["ledger-reconciliations", commerce],
    queryFn: () => payload(api.GET("/ledger-reconciliations", { params: { query: { commerce } } })),
  });
  const submit = useMutation({
    mutationFn: (text: string) => payload(api.POST("/ledger-reconciliations", { body: { commerce, csv: text } })),
    onSuccess: (r) => {
      setError(null);
      setResult(r);
      void queryClient.invalidateQueries({ queryKey: ["ledger-reconciliations", commerce] });
    },
    onError: (e) => {
      setError(errorText(e));
    },
  });
  useEffect(() => setResult(null), [commerce]);
  return (
    <SimpleGrid cols={{ base: 1, lg: 2 }}>
      {session.can("operator") && (
        <Card withBorder>
          <Text fw={600} mb="xs">
            {t("ledger.import")}
          </Text>
          <Textarea
            aria-label={t("ledger.import")}
            description={t("ledger.importHelp")}
            autosize
            minRows={4}
            maxRows={12}
            value={csv}
            onChange={(e) => setCsv(e.currentTarget.value)}
            error={error}
            data-testid="payout-csv"
          />
          <Group justify="flex-end" mt="xs">
            <Button variant="light" disabled={!csv.trim()} loading={submit.isPending} onClick={() => submit.mutate(csv)} data-testid="reconcile">
              {t("ledger.importSubmit")}
            </Button>
          </Group>
          {result && <ReconciliationResult result={result} />}
        </Card>
      )}
      <Card withBorder>
        <Text fw={600} mb="xs">
          {t("ledger.history")}
        </Text>
        <QueryState loading={history.isLoading} error={history.error} retry={() => void history.refetch()}>
          {history.data && history.data.items.length === 0 && <Text c="dimmed">{t("ledger.noHistory")}</Text>}
          {history.data && history.data.items.length > 0 && <History items={history.data.items} onPick={setResult} />}
        </QueryState>
      </Card>
    </SimpleGrid>
  );
}

function History({ items, onPick }: { items: Reconciliation[]; onPick: (r: Reconciliation) => void }) {
  const { t, dateTime } = useI18n();
  return (
    <ScrollTable label={t("ledger.history")} minWidth={560}>
      <Table striped data-testid="reconciliations-table">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>{t("common.createdAt")}</Table.Th>
            <Table.Th>{t("ledger.by")}</Table.Th>
            <Table.Th>{t("ledger.matched")}</Table.Th>
            <Table.Th>{t("ledger.unpaid")}</Table.Th>
            <Table.Th>{t("ledger.unknown")}</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {items.map((r) => (
            <Table.Tr key={r.reconciliationId} onClick={() => onPick(r)} style={{ cursor: "pointer" }}>
              <Table.Td>{dateTime(r.createdAt)}</Table.Td>
              <Table.Td>{r.createdBy}</Table.Td>
              <Table.Td>{r.counts.matched}</Table.Td>
              <Table.Td>{r.counts.entriesWithoutPayout}</Table.Td>
              <Table.Td>{r.counts.linesWithoutEntry}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </ScrollTable>
  );
}

function ReconciliationResult({ result }: { result: Reconciliation }) {
  const { t, date, money, label } = useI18n();
  const c = result.counts;
  const clean = c.entriesWithoutPayout === 0 && c.linesWithoutEntry === 0;
  return (
    <Stack gap="xs" mt="md" data-testid="reconciliation-result">
      <Alert color={clean ? "green" : "yellow"}>
        {t("ledger.result", { matched: c.matched, unpaid: c.entriesWithoutPayout, unknown: c.linesWithoutEntry })}
      </Alert>
      {result.entriesWithoutPayout.length > 0 && (
        <>
          <Text fw={600} size="sm">
            {t("ledger.unpaid")}
          </Text>
          <ScrollTable label={t("ledger.unpaid")} minWidth={480}>
            <Table data-testid="unpaid-table">
              <Table.Tbody>
                {result.entriesWithoutPayout.map((e) => (
                  <Table.Tr key={e.entryId}>
                    <Table.Td>{date(e.businessDate)}</Table.Td>
                    <Table.Td>{label(e.kind)}</Table.Td>
                    <Table.Td>{e.acquirerReference ?? "—"}</Table.Td>
                    <Table.Td>{money(e.net ?? e.amount, e.currencyId)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        </>
      )}
      {result.linesWithoutEntry.length > 0 && (
        <>
          <Text fw={600} size="sm">
            {t("ledger.unknown")}
          </Text>
          <ScrollTable label={t("ledger.unknown")} minWidth={480}>
            <Table data-testid="unknown-lines-table">
              <Table.Tbody>
                {result.linesWithoutEntry.map((u) => (
                  <Table.Tr key={u.line.line}>
                    <Table.Td>
                      {t("ledger.line")} {u.line.line}
                    </Table.Td>
                    <Table.Td>{date(u.line.date)}</Table.Td>
                    <Table.Td>{u.line.reference}</Table.Td>
                    <Table.Td>{u.line.amount}</Table.Td>
                    <Table.Td>{label(u.reason)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        </>
      )}
    </Stack>
  );
}
