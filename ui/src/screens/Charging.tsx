import { Alert, Button, Card, Group, NumberInput, Progress, SimpleGrid, Stack, Table, Text, Textarea, Title } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, payload, type Schemas } from "../api/client";
import { confirmAction } from "../components/confirm";
import { ExportCsv } from "../components/ExportCsv";
import { QueryState } from "../components/QueryState";
import { StateBadge } from "../components/StateBadge";
import { PageTitle } from "../components/Layout";
import { useI18n, useSession } from "../lib/context";
import { errorText, formErrors } from "../lib/errors";
import { ScrollTable } from "../components/ScrollTable";

type Run = Schemas["RunDto"];

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
                      <Table.Tr key={`${r.businessDate}-${r.startedAt}-${i}`}>
                        <Table.Td>{date(r.businessDate)}</Table.Td>
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
