import { Anchor, Card, Group, Paper, Progress, SimpleGrid, Stack, Table, Text } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, payload } from "../api/client";
import { BarChart } from "../components/BarChart";
import { QueryState } from "../components/QueryState";
import { StateBadge } from "../components/StateBadge";
import { PageTitle } from "../components/Layout";
import { useI18n } from "../lib/context";

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

export function Dashboard() {
  const { t, money, date, dateTime, label } = useI18n();
  const query = useQuery({
    queryKey: ["dashboard"],
    queryFn: () => payload(api.GET("/dashboard")),
    refetchInterval: 15_000,
  });
  const d = query.data;
  return (
    <Stack>
      <Group justify="space-between">
        <PageTitle title={t("dashboard.title")} />
        {d && <Text c="dimmed">{t("dashboard.today", { date: date(d.today) })}</Text>}
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {d && (
          <>
            <SimpleGrid cols={{ base: 1, lg: 2 }}>
              <Counts title={t("dashboard.mandates")} counts={d.mandates} testId="mandate-counts" />
              <Counts title={t("dashboard.installments")} counts={d.installments} testId="installment-counts" />
            </SimpleGrid>
            <Card withBorder>
              <Text fw={600} mb="xs">
                {t("dashboard.chart")}
              </Text>
              <BarChart days={d.days} />
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
                  <Table striped>
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
                  <Table striped>
                    <Table.Tbody>
                      {d.failingWebhooks.recent.map((e) => (
                        <Table.Tr key={e.eventId}>
                          <Table.Td>
                            <Anchor component={Link} to={`/notifications?event=${e.eventId}`} size="sm">
                              {label(e.kind)}
                            </Anchor>
                          </Table.Td>
                          <Table.Td>
                            <StateBadge state={e.deliveryState} />
                          </Table.Td>
                          <Table.Td>
                            <Text size="xs" lineClamp={1} maw={260}>
                              {e.lastStatus ? `HTTP ${e.lastStatus} ` : ""}
                              {e.lastError ?? ""}
                            </Text>
                          </Table.Td>
                          <Table.Td>{dateTime(e.createdAt)}</Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
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
