import { Alert, Anchor, Box, Card, Group, Paper, Progress, Select, SimpleGrid, Stack, Table, Text, useComputedColorScheme } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, payload } from "../api/client";
import { BarChart, chartCurrencies } from "../components/BarChart";
import { CommerceSelect } from "../components/CommerceSelect";
import { LastBackup } from "../components/LastBackup";
import { QueryState } from "../components/QueryState";
import { StateBadge } from "../components/StateBadge";
import { PageTitle } from "../components/Layout";
import { useI18n } from "../lib/context";
import { formatExactMoney } from "../lib/format";
import { useUrlState } from "../lib/urlState";
import type { Schemas } from "../api/client";
import type { Key } from "../lib/i18n";
import { ScrollTable } from "../components/ScrollTable";
import { DeliveryProblemText } from "../components/DeliveryProblemText";

function Counts({ title, counts, testId }: { title: string; counts: { state: { name: string }; count: number }[]; testId: string }) {
  const { label, number } = useI18n();
  return (
    <Card withBorder data-testid={testId}>
      <Text fw={600} mb="xs">
        {title}
      </Text>
      <SimpleGrid cols={{ base: 2, md: 4 }} spacing="xs">
        {counts.map((c) => (
          <Paper key={c.state.name} p="xs" bg="var(--mantine-color-default-hover)" data-state={c.state.name}>
            <Text size="xs" c="dimmed">
              {label(c.state.name)}
            </Text>
            <Text fw={700} size="lg">
              {number(c.count)}
            </Text>
          </Paper>
        ))}
      </SimpleGrid>
    </Card>
  );
}

/** How many mandates have rejected installments, linked to the past-due list of the commerce. */
function PastDueCount({ commerce }: { commerce: string | undefined }) {
  const { t, number } = useI18n();
  const shade = useFigureShade();
  const query = useQuery({
    queryKey: ["past-due", "count", commerce ?? ""],
    queryFn: () => payload(api.GET("/past-due", { params: { query: { commerce, limit: 1 } } })),
    refetchInterval: 15_000,
  });
  const total = query.data?.total;
  if (total === undefined) return null;
  return (
    <Card withBorder data-testid="dashboard-past-due">
      <Group justify="space-between">
        <div>
          <Text size="xs" c="dimmed">
            {t("pastDue.dashboard")}
          </Text>
          <Text fw={700} size="xl" c={total > 0 ? `red.${shade}` : undefined} data-testid="past-due-total">
            {number(total)}
          </Text>
        </div>
        <Anchor component={Link} to={commerce ? `/past-due?commerce=${encodeURIComponent(commerce)}` : "/past-due"} size="sm">
          {t("pastDue.dashboardFinal")}
        </Anchor>
      </Group>
    </Card>
  );
}

/** A colored figure's shade: dark on light backgrounds, light on dark ones, readable on both. */
function useFigureShade(): number {
  return useComputedColorScheme("light") === "dark" ? 3 : 8;
}

/** The month's money in one currency: exact decimals from the server, never rounded by a float. */
function MoneyCards({ totals, currency, monthStart }: { totals: Schemas["MoneyTotals"][]; currency: string; monthStart: string }) {
  const { t, lang, date } = useI18n();
  const shade = useFigureShade();
  const line = totals.find((m) => m.currencyId === currency);
  const cards = [
    { key: "collected", title: t("dashboard.collectedMonth"), value: line?.collectedThisMonth ?? "0", color: "teal" },
    { key: "overdue", title: t("dashboard.overdue"), value: line?.overdue ?? "0", color: "orange" },
    { key: "rejected", title: t("dashboard.rejectedMonth"), value: line?.rejectedThisMonth ?? "0", color: "red" },
  ];
  return (
    <Card withBorder data-testid="money-totals">
      <Group justify="space-between" mb="xs">
        <Text fw={600}>{t("dashboard.money")}</Text>
        <Text size="xs" c="dimmed">
          {t("dashboard.since", { date: date(monthStart) })}
        </Text>
      </Group>
      <SimpleGrid cols={{ base: 1, sm: 3 }} spacing="xs">
        {cards.map((c) => (
          <Paper key={c.key} p="xs" bg="var(--mantine-color-default-hover)" data-total={c.key}>
            <Text size="xs" c="dimmed">
              {c.title}
            </Text>
            <Text fw={700} size="xl" c={`${c.color}.${shade}`}>
              {formatExactMoney(c.value, currency, lang)}
            </Text>
          </Paper>
        ))}
      </SimpleGrid>
    </Card>
  );
}

export function Dashboard() {
  const { t, money, date, dateTime, label } = useI18n();
  const url = useUrlState();
  const commerce = url.get("commerce") || undefined;
  const query = useQuery({
    queryKey: ["dashboard", commerce ?? ""],
    queryFn: () => payload(api.GET("/dashboard", { params: { query: { commerce } } })),
    refetchInterval: 15_000,
  });
  const d = query.data;
  const currencies = d
    ? [...new Set([...d.totals.map((m) => m.currencyId), ...chartCurrencies(d.days)])].sort((a, b) =>
        a === "CLP" ? -1 : b === "CLP" ? 1 : a.localeCompare(b),
      )
    : [];
  const wanted = url.get("currency");
  const currency = currencies.includes(wanted) ? wanted : (currencies[0] ?? "CLP");
  const chooseCurrency = (c: string | null) => url.set({ currency: c }, { replace: true });
  return (
    <Stack>
      <Group justify="space-between" align="end">
        <PageTitle title={t("dashboard.title")} />
        <Group align="end">
          <CommerceSelect value={commerce ?? null} onChange={(v) => url.set({ commerce: v })} />
          {currencies.length > 1 && (
            <Select
              label={t("common.currency")}
              data={currencies}
              value={currency}
              onChange={chooseCurrency}
              allowDeselect={false}
              w={110}
              data-testid="dashboard-currency"
            />
          )}
          {d && <Text c="dimmed">{t("dashboard.today", { date: date(d.today) })}</Text>}
        </Group>
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {d && (
          <>
            {d.unserved.map((u) => (
              <Alert key={u.commerce} color="red" role="alert" data-testid="unserved-commerce">
                {t("acquirers.unserved", {
                  commerce: u.commerce,
                  rails: u.rails.map((r) => t(`acquirers.rail.${r}` as Key)).join(", "),
                })}{" "}
                <Anchor component={Link} to="/settings?tab=acquirers">
                  {t("acquirers.title")}
                </Anchor>
              </Alert>
            ))}
            {d.totals.length === 0 ? (
              <Card withBorder data-testid="money-totals">
                <Text fw={600}>{t("dashboard.money")}</Text>
                <Text size="sm" c="dimmed">
                  {t("dashboard.noMoney")}
                </Text>
              </Card>
            ) : (
              <MoneyCards totals={d.totals} currency={currency} monthStart={d.monthStart} />
            )}
            <PastDueCount commerce={commerce} />
            <Card withBorder data-testid="dashboard-backup">
              <LastBackup />
            </Card>
            <SimpleGrid cols={{ base: 1, lg: 2 }}>
              <Counts title={t("dashboard.mandates")} counts={d.mandates} testId="mandate-counts" />
              <Counts title={t("dashboard.installments")} counts={d.installments} testId="installment-counts" />
            </SimpleGrid>
            <Card withBorder>
              <Text fw={600} mb="xs">
                {t("dashboard.chart")}
              </Text>
              <BarChart days={d.days} currency={currency} onCurrency={chooseCurrency} />
            </Card>
            <SimpleGrid cols={{ base: 1, lg: 2 }}>
              <Card withBorder>
                <Text fw={600} mb="xs">
                  {t("dashboard.nextCharges")}
                </Text>
                {d.nextCharges.length === 0 ? (
                  <Text size="sm" c="dimmed">
                    {t("app.none")}
                  </Text>
                ) : (
                  <ScrollTable label={t("dashboard.nextCharges")} minWidth={520}>
                    <Table striped data-testid="next-charges-table">
                      <Table.Thead>
                        <Table.Tr>
                          <Table.Th>{t("dashboard.due")}</Table.Th>
                          <Table.Th>{t("nav.mandates")}</Table.Th>
                          <Table.Th>{t("common.customer")}</Table.Th>
                          <Table.Th ta="right">{t("common.amount")}</Table.Th>
                        </Table.Tr>
                      </Table.Thead>
                      <Table.Tbody>
                        {d.nextCharges.map((n) => (
                          <Table.Tr key={n.installmentInternalId}>
                            <Table.Td>
                              {date(n.installmentDueDate)}
                              {n.chargeDate !== n.installmentDueDate && (
                                <Text size="xs" c="dimmed" data-testid="charge-date">
                                  {t("mandates.chargeDate")} {date(n.chargeDate)}
                                </Text>
                              )}
                            </Table.Td>
                            <Table.Td>
                              <Anchor component={Link} to={`/mandates/${n.mandateInternalId}`} size="sm">
                                {n.mandateId}
                              </Anchor>{" "}
                              · {n.installmentId}
                            </Table.Td>
                            <Table.Td>{n.customerName}</Table.Td>
                            <Table.Td ta="right">{money(n.amount, n.currencyId)}</Table.Td>
                          </Table.Tr>
                        ))}
                      </Table.Tbody>
                    </Table>
                  </ScrollTable>
                )}
              </Card>
              <Card withBorder data-testid="failing-webhooks">
                <Group justify="space-between" mb="xs">
                  <Text fw={600}>{t("dashboard.failing")}</Text>
                  <Group gap="md">
                    <Text size="sm" c="red">
                      {t("dashboard.failed")}: {d.failingWebhooks.failed}
                    </Text>
                    <Text size="sm" c="orange">
                      {t("dashboard.retrying")}: {d.failingWebhooks.retrying}
                    </Text>
                  </Group>
                </Group>
                {d.failingWebhooks.recent.length === 0 ? (
                  <Text size="sm" c="dimmed">
                    {t("app.none")}
                  </Text>
                ) : (
                  <ScrollTable label={t("dashboard.failing")} minWidth={640}>
                    <Table striped data-testid="failing-table">
                      <Table.Thead>
                        <Table.Tr>
                          <Table.Th>{t("dashboard.event")}</Table.Th>
                          <Table.Th>{t("ledger.mandate")}</Table.Th>
                          <Table.Th>{t("common.state")}</Table.Th>
                          <Table.Th>{t("common.details")}</Table.Th>
                          <Table.Th>{t("common.createdAt")}</Table.Th>
                        </Table.Tr>
                      </Table.Thead>
                      <Table.Tbody>
                        {d.failingWebhooks.recent.map((e) => (
                          <Table.Tr key={e.eventId} data-testid="failing-event">
                            <Table.Td>
                              <Anchor component={Link} to={`/notifications?event=${e.eventId}`} size="sm">
                                {label(e.kind)}
                              </Anchor>
                            </Table.Td>
                            <Table.Td>
                              {e.mandateId && e.mandateInternalId ? (
                                <Anchor component={Link} to={`/mandates/${e.mandateInternalId}`} size="sm">
                                  {e.mandateId}
                                </Anchor>
                              ) : (
                                "—"
                              )}
                              <Text size="xs" c="dimmed">
                                {e.customerName ?? ""}
                              </Text>
                            </Table.Td>
                            <Table.Td>
                              <StateBadge state={e.deliveryState} />
                            </Table.Td>
                            <Table.Td>
                              <Box maw={300}>
                                <DeliveryProblemText error={e.lastError} status={e.lastStatus} />
                              </Box>
                            </Table.Td>
                            <Table.Td>{dateTime(e.createdAt)}</Table.Td>
                          </Table.Tr>
                        ))}
                      </Table.Tbody>
                    </Table>
                  </ScrollTable>
                )}
              </Card>
            </SimpleGrid>
            <Card withBorder data-testid="last-run">
              <Text fw={600} mb="xs">
                {t("dashboard.lastRun")}
              </Text>
              {d.lastRun ? (
                <Stack gap={4}>
                  <Group gap="sm">
                    <Text>{date(d.lastRun.businessDate)}</Text>
                    <StateBadge state={d.lastRun.state} />
                    <Text size="sm" c="dimmed">
                      {label(d.lastRun.trigger)} · {dateTime(d.lastRun.startedAt)}
                    </Text>
                  </Group>
                  <Progress aria-label={t("charging.progress")} value={d.lastRun.total ? (100 * d.lastRun.done) / d.lastRun.total : 100} />
                  <Text size="sm">
                    {t("charging.attempted")}: {d.lastRun.attempted} · {t("charging.paid")}: {d.lastRun.paid} ·{" "}
                    {t("charging.rejected")}: {d.lastRun.rejected} · {t("charging.inValidation")}: {d.lastRun.inValidation}
                  </Text>
                </Stack>
              ) : (
                <Text size="sm" c="dimmed">
                  {t("dashboard.noRun")}
                </Text>
              )}
            </Card>
          </>
        )}
      </QueryState>
    </Stack>
  );
}
