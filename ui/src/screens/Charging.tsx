import { Alert, Anchor, Badge, Button, Card, Group, NumberInput, Progress, Select, SimpleGrid, Stack, Table, Text, Textarea, Title } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link, useParams } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { confirmAction } from "../components/confirm";
import { ExportCsv } from "../components/ExportCsv";
import { QueryState } from "../components/QueryState";
import { StateBadge } from "../components/StateBadge";
import { PageTitle } from "../components/Layout";
import { useI18n, useSession } from "../lib/context";
import { errorText, formErrors } from "../lib/errors";
import { ScrollTable } from "../components/ScrollTable";
import { Pager, useKeyset } from "../components/Pager";
import { useRejectionWords } from "./Notifications";

type Run = Schemas["RunLineDto"];
type RunAttempt = Schemas["RunAttemptDto"];

export function Charging() {
  const { t, date, dateTime, label } = useI18n();
  const session = useSession();
  const queryClient = useQueryClient();
  const query = useQuery({
    queryKey: ["charging"],
    queryFn: () => payload(api.GET("/charging")),
    // While a run is under way, its progress bar follows it closely.
    refetchInterval: (q) => (q.state.data?.running ? 1_000 : 10_000),
  });
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: ["charging"] });
    void queryClient.invalidateQueries({ queryKey: ["dashboard"] });
    void queryClient.invalidateQueries({ queryKey: ["mandates"] });
    void queryClient.invalidateQueries({ queryKey: ["mandate"] });
  };
  const runNow = useMutation({
    mutationFn: () => payload(api.POST("/charging/run")),
    onSuccess: (s) => {
      notifications.show({ color: "green", message: t("charging.runDone", { attempted: s.attempted, paid: s.paid, rejected: s.rejected }) });
      refresh();
    },
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
  const [days, setDays] = useState<number | string>(1);
  const [clockError, setClockError] = useState<string | null>(null);
  const advance = useMutation({
    mutationFn: (advanceDays: number) => payload(api.POST("/charging/clock", { body: { advanceDays } })),
    onSuccess: (c) => {
      setClockError(null);
      notifications.show({ color: "green", message: t("charging.advanced", { date: date(c.today) }) });
      refresh();
    },
    onError: (e) => setClockError(formErrors(e).fields.advanceDays ?? formErrors(e).general),
  });
  const [csv, setCsv] = useState("");
  const [ufError, setUfError] = useState<string | null>(null);
  const uf = useMutation({
    mutationFn: (text: string) => payload(api.POST("/uf", { body: { csv: text } })),
    onSuccess: (r) => {
      setUfError(null);
      setCsv("");
      notifications.show({ color: "green", message: t("charging.ufImported", { count: r.imported }) });
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["csv"]);
      setUfError(mapped.fields.csv ?? mapped.general);
    },
  });
  const d = query.data;
  const askRun = async () => {
    if (!d) return;
    const ok = await confirmAction({
      title: t("charging.runNow"),
      message: t("charging.runNowConfirm", { date: date(d.today) }),
      confirm: t("charging.runNow"),
      cancel: t("common.cancel"),
      danger: false,
    });
    if (ok) runNow.mutate();
  };
  const askAdvance = async () => {
    const n = Number(days);
    const ok = await confirmAction({
      title: t("charging.advance"),
      message: t("charging.advanceConfirm", { days: n }),
      confirm: t("charging.advance"),
      cancel: t("common.cancel"),
    });
    if (ok) advance.mutate(n);
  };
  return (
    <Stack>
      <Group justify="space-between">
        <PageTitle title={t("charging.title")} />
        {d && session.can("operator") && (
          <Button onClick={() => void askRun()} loading={runNow.isPending} data-testid="run-now">
            {t("charging.runNow")}
          </Button>
        )}
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {d && (
          <>
            {d.running && (
              <Card withBorder data-testid="run-progress">
                <Text mb="xs">{t("charging.running", { date: date(d.running.date), done: d.running.done, total: d.running.total })}</Text>
                <Progress aria-label={t("charging.progress")} value={d.running.total ? (100 * d.running.done) / d.running.total : 0} animated striped size="lg" />
              </Card>
            )}
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              {d.sandbox && (
                <Card withBorder data-testid="sandbox-clock">
                  <Text fw={600} mb="xs">
                    {t("charging.clock")}
                  </Text>
                  <Text size="sm" mb="sm">
                    {t("charging.clockToday", { date: date(d.today), offset: d.offsetDays })}
                  </Text>
                  {session.can("admin") && (
                    <Group align="end">
                      <NumberInput
                        label={t("charging.advanceDays")}
                        min={1}
                        max={400}
                        value={days}
                        onChange={setDays}
                        error={clockError}
                        w={160}
                      />
                      <Button variant="light" onClick={() => void askAdvance()} loading={advance.isPending}>
                        {t("charging.advance")}
                      </Button>
                    </Group>
                  )}
                </Card>
              )}
              {session.can("admin") && (
                <Card withBorder>
                  <Text fw={600} mb="xs">
                    {t("charging.uf")}
                  </Text>
                  <Textarea
                    label={t("charging.ufCsv")}
                    autosize
                    minRows={3}
                    value={csv}
                    onChange={(e) => setCsv(e.currentTarget.value)}
                    error={ufError}
                  />
                  <Group justify="flex-end" mt="xs">
                    <Button variant="light" disabled={!csv.trim()} loading={uf.isPending} onClick={() => uf.mutate(csv)}>
                      {t("charging.ufImport")}
                    </Button>
                  </Group>
                </Card>
              )}
            </SimpleGrid>
            <Group justify="space-between">
              <Title order={2} size="h4">{t("charging.runs")}</Title>
              <ExportCsv<Run>
                filename="cobros.csv"
                fetchPage={async () => ({ items: d.runs, nextCursor: null })}
                columns={[
                  { header: t("mandates.businessDate"), value: (r) => r.businessDate },
                  { header: t("charging.trigger"), value: (r) => r.trigger },
                  { header: t("common.state"), value: (r) => r.state },
                  { header: t("charging.started"), value: (r) => r.startedAt },
                  { header: t("charging.finished"), value: (r) => r.finishedAt },
                  { header: t("csv.total"), value: (r) => r.total },
                  { header: t("charging.attempted"), value: (r) => r.attempted },
                  { header: t("charging.paid"), value: (r) => r.paid },
                  { header: t("charging.rejected"), value: (r) => r.rejected },
                  { header: t("charging.inValidation"), value: (r) => r.inValidation },
                  { header: t("charging.settled"), value: (r) => r.settled },
                  { header: t("charging.waitingUf"), value: (r) => r.waitingUf },
                ]}
              />
            </Group>
            {d.runs.length === 0 ? (
              <Alert color="gray">{t("charging.noRuns")}</Alert>
            ) : (
              <ScrollTable label={t("charging.runs")} minWidth={900}>
                <Table striped data-testid="runs-table">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>{t("mandates.businessDate")}</Table.Th>
                      <Table.Th>{t("charging.trigger")}</Table.Th>
                      <Table.Th>{t("common.state")}</Table.Th>
                      <Table.Th>{t("charging.progress")}</Table.Th>
                      <Table.Th>{t("charging.attempted")}</Table.Th>
                      <Table.Th>{t("charging.paid")}</Table.Th>
                      <Table.Th>{t("charging.rejected")}</Table.Th>
                      <Table.Th>{t("charging.inValidation")}</Table.Th>
                      <Table.Th>{t("charging.settled")}</Table.Th>
                      <Table.Th>{t("charging.waitingUf")}</Table.Th>
                      <Table.Th>{t("charging.started")}</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {d.runs.map((r, i) => (
                      <Table.Tr key={`${r.runId}-${i}`} data-run={r.runId}>
                        <Table.Td className="nowrap">
                          <Anchor
                            component={Link}
                            to={`/charging/runs/${r.runId}`}
                            size="sm"
                            aria-label={t("run.open", { date: date(r.businessDate) })}
                            data-testid="open-run"
                          >
                            {date(r.businessDate)}
                          </Anchor>
                        </Table.Td>
                        <Table.Td>{label(r.trigger)}</Table.Td>
                        <Table.Td>
                          <StateBadge state={r.state} />
                        </Table.Td>
                        <Table.Td miw={120}>
                          <Progress aria-label={t("charging.progress")} value={r.total ? (100 * r.done) / r.total : 100} />
                          <Text size="xs" c="dimmed">
                            {r.done}/{r.total}
                          </Text>
                        </Table.Td>
                        <Table.Td>{r.attempted}</Table.Td>
                        <Table.Td>{r.paid}</Table.Td>
                        <Table.Td>{r.rejected}</Table.Td>
                        <Table.Td>{r.inValidation}</Table.Td>
                        <Table.Td>{r.settled}</Table.Td>
                        <Table.Td>{r.waitingUf}</Table.Td>
                        <Table.Td>{dateTime(r.startedAt)}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </ScrollTable>
            )}
          </>
        )}
      </QueryState>
    </Stack>
  );
}

const OUTCOMES = ["PAID", "REJECTED", "IN_PROCESS", "IN_VALIDATION"] as const;
const OUTCOME_COLORS: Record<string, string> = { PAID: "green", REJECTED: "red", IN_PROCESS: "blue", IN_VALIDATION: "yellow" };

/** An outcome of a charge in words, in the color of its kind. */
export function OutcomeText({ outcome, code }: { outcome: string; code?: string | null }) {
  const { t } = useI18n();
  const rejectionWords = useRejectionWords();
  const key = `outcome.${outcome}` as Parameters<typeof t>[0];
  const words = t(key) === key ? outcome : t(key);
  return (
    // The word in a light badge of its kind's color (readable on striped rows and in both color
    // schemes, as the state badges are); the reason in the text's own color.
    <Text size="sm" component="div" data-testid="outcome">
      <Badge color={OUTCOME_COLORS[outcome] ?? "gray"} variant="light" tt="none" styles={{ root: { maxWidth: "none", overflow: "visible" }, label: { overflow: "visible" } }}>
        {words}
      </Badge>
      {code ? ` · ${rejectionWords(code)}` : ""}
    </Text>
  );
}

/** What a charge was: its pesos, and for a UF installment its UF and the UF value used. */
export function ChargedAmount({
  amount,
  currencyId,
  installmentAmount,
  installmentCurrencyId,
  ufValue,
}: {
  amount: number;
  currencyId: string;
  installmentAmount: number;
  installmentCurrencyId: string;
  ufValue?: number | null;
}) {
  const { t, money } = useI18n();
  return (
    <>
      <span className="nowrap">{money(amount, currencyId)}</span>
      {installmentCurrencyId === "CLF" && currencyId !== "CLF" && (
        <Text size="xs" c="dimmed" className="nowrap">
          {ufValue != null
            ? t("run.ufValue", { uf: money(installmentAmount, "CLF"), value: money(ufValue, "CLP") })
            : money(installmentAmount, "CLF")}
        </Text>
      )}
    </>
  );
}

/** One charging run: its counts, and the installments it charged with how each stands now. */
export function ChargingRun() {
  const { id = "" } = useParams();
  const { t, date, dateTime, label, number } = useI18n();
  const [outcome, setOutcome] = useState<string | null>(null);
  const keyset = useKeyset();
  const query = useQuery({
    queryKey: ["charging-run", id, outcome, keyset.cursor],
    queryFn: () =>
      payload(
        api.GET("/charging/runs/{runId}", {
          params: { path: { runId: Number(id) }, query: { state: outcome ?? undefined, cursor: keyset.cursor } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const d = query.data;
  const run = d?.run;
  return (
    <Stack>
      <Anchor component={Link} to="/charging" size="sm" data-testid="back-to-charging">
        {t("run.back")}
      </Anchor>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {d && run && (
          <>
            <Group justify="space-between">
              <PageTitle title={t("run.title", { date: date(run.businessDate) })} />
              <Group gap="xs">
                <Text size="sm">{label(run.trigger)}</Text>
                <StateBadge state={run.state} />
              </Group>
            </Group>
            <Text size="sm" c="dimmed">
              {t("charging.started")}: {dateTime(run.startedAt)}
              {run.finishedAt ? ` · ${t("charging.finished")}: ${dateTime(run.finishedAt)}` : ""}
            </Text>
            <SimpleGrid cols={{ base: 2, sm: 3, md: 6 }} data-testid="run-counts">
              {[
                [t("charging.attempted"), run.attempted],
                [t("charging.paid"), d.outcomes.paid],
                [t("charging.rejected"), d.outcomes.rejected],
                [t("outcome.IN_PROCESS"), d.outcomes.inProcess],
                [t("charging.inValidation"), d.outcomes.inValidation],
                [t("charging.waitingUf"), run.waitingUf],
              ].map(([name, value]) => (
                <Card withBorder key={String(name)} p="sm">
                  <Text size="xs" c="dimmed">
                    {name}
                  </Text>
                  <Text fw={700} size="lg">
                    {number(Number(value))}
                  </Text>
                </Card>
              ))}
            </SimpleGrid>
            {(run.waitingUf > 0 || run.acquirerNotConfigured > 0) && (
              <Alert color="yellow" data-testid="run-not-charged">
                {t("run.notCharged", { waitingUf: run.waitingUf, acquirerNotConfigured: run.acquirerNotConfigured })}
              </Alert>
            )}
            <Group justify="space-between" align="end">
              <Title order={2} size="h4">
                {t("run.attempts")}
              </Title>
              <Select
                label={t("run.filterOutcome")}
                placeholder={t("common.all")}
                data={OUTCOMES.map((o) => ({ value: o, label: t(`outcome.${o}`) }))}
                value={outcome}
                onChange={(v) => {
                  setOutcome(v);
                  keyset.reset();
                }}
                clearable
                w={220}
                data-testid="run-outcome-filter"
              />
            </Group>
            {d.attempts.length === 0 ? (
              <Text c="dimmed" size="sm" p="md">
                {t("run.noAttempts")}
              </Text>
            ) : (
              <ScrollTable label={t("run.attempts")} minWidth={960}>
                <Table striped data-testid="run-attempts">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>{t("pastDue.mandate")}</Table.Th>
                      <Table.Th>{t("run.installment")}</Table.Th>
                      <Table.Th>{t("common.customer")}</Table.Th>
                      <Table.Th ta="right">{t("run.charged")}</Table.Th>
                      <Table.Th>{t("run.outcome")}</Table.Th>
                      <Table.Th>{t("pastDue.nextRetry")}</Table.Th>
                      <Table.Th>{t("run.attempt")}</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {d.attempts.map((a: RunAttempt) => (
                      <Table.Tr key={a.attemptId} data-attempt={a.attemptId}>
                        <Table.Td>
                          <Anchor component={Link} to={`/mandates/${a.mandateInternalId}`} size="sm">
                            {a.mandateId}
                          </Anchor>
                          <Text size="xs" c="dimmed">
                            {a.mandateName}
                          </Text>
                        </Table.Td>
                        <Table.Td>{a.installmentId}</Table.Td>
                        <Table.Td>
                          <Anchor component={Link} to={`/customers/${a.customerInternalId}`} size="sm">
                            {a.customerName}
                          </Anchor>
                        </Table.Td>
                        <Table.Td ta="right">
                          <ChargedAmount {...a} />
                        </Table.Td>
                        <Table.Td>
                          <OutcomeText outcome={a.outcome} code={a.rejectionCode} />
                        </Table.Td>
                        <Table.Td className="nowrap">{a.nextRetryDate ? date(a.nextRetryDate) : "—"}</Table.Td>
                        <Table.Td>{a.attempt}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </ScrollTable>
            )}
            <Pager keyset={keyset} nextCursor={d.nextCursor} />
          </>
        )}
      </QueryState>
    </Stack>
  );
}
