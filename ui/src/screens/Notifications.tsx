import {
  Anchor,
  Button,
  Checkbox,
  Code,
  Drawer,
  Group,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { notifications } from "@mantine/notifications";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { ExportCsv } from "../components/ExportCsv";
import { Pager, useKeyset } from "../components/Pager";
import { QueryState } from "../components/QueryState";
import { StateBadge } from "../components/StateBadge";
import { PageTitle } from "../components/Layout";
import { useI18n, useSession } from "../lib/context";
import { errorText } from "../lib/errors";

type ListedEvent = Schemas["ListedEventDto"];

const DELIVERY = ["PENDING", "DELIVERED", "FAILED", "NO_URL"];
const KINDS = ["activation", "payment", "signature"];

function useRedeliver() {
  const { t } = useI18n();
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (eventIds: string[]) => payload(api.POST("/notifications/redeliver", { body: { eventIds } })),
    onSuccess: (result) => {
      notifications.show({ color: "green", message: t("notifications.redelivered", { count: result.scheduled.length }) });
      void queryClient.invalidateQueries({ queryKey: ["events"] });
      void queryClient.invalidateQueries({ queryKey: ["event"] });
    },
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
}

function EventDrawer({ eventId, onClose }: { eventId: string; onClose: () => void }) {
  const { t, dateTime, label } = useI18n();
  const session = useSession();
  const redeliver = useRedeliver();
  const query = useQuery({
    queryKey: ["event", eventId],
    queryFn: () => payload(api.GET("/notifications/{eventId}", { params: { path: { eventId } } })),
    refetchInterval: (q) => (q.state.data?.event.deliveryState === "PENDING" ? 2_000 : false),
  });
  const d = query.data;
  return (
    <Drawer opened onClose={onClose} position="right" size="xl" title={eventId}>
      <QueryState loading={query.isLoading} error={query.error}>
        {d && (
          <Stack data-testid="event-detail">
            <SimpleGrid cols={3}>
              <div>
                <Text size="xs" c="dimmed">
                  {t("notifications.kind")}
                </Text>
                <Text>{label(d.event.kind)}</Text>
              </div>
              <div>
                <Text size="xs" c="dimmed">
                  {t("notifications.delivery")}
                </Text>
                <StateBadge state={d.event.deliveryState} />
              </div>
              <div>
                <Text size="xs" c="dimmed">
                  {t("mandates.sequence")}
                </Text>
                <Text>{d.event.sequence}</Text>
              </div>
            </SimpleGrid>
            <Text size="sm" style={{ wordBreak: "break-all" }}>
              {t("notifications.url")}: {d.event.url ?? "—"}
            </Text>
            {d.event.url && session.can("operator") && (
              <Group>
                <Button size="xs" onClick={() => redeliver.mutate([eventId])} loading={redeliver.isPending} data-testid="redeliver-one">
                  {t("notifications.redeliver")}
                </Button>
              </Group>
            )}
            <Text fw={600}>{t("notifications.attempts")}</Text>
            {d.attempts.length === 0 ? (
              <Text size="sm" c="dimmed">
                {t("notifications.noAttempts")}
              </Text>
            ) : (
              <Table data-testid="attempts">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>{t("common.date")}</Table.Th>
                    <Table.Th>{t("notifications.attemptKind")}</Table.Th>
                    <Table.Th>{t("notifications.status")}</Table.Th>
                    <Table.Th>{t("notifications.duration")}</Table.Th>
                    <Table.Th>{t("notifications.outcome")}</Table.Th>
                    <Table.Th>{t("notifications.response")}</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {d.attempts.map((a, i) => (
                    <Table.Tr key={i}>
                      <Table.Td>{dateTime(a.startedAt)}</Table.Td>
                      <Table.Td>{label(a.kind)}</Table.Td>
                      <Table.Td>{a.statusCode ?? "—"}</Table.Td>
                      <Table.Td>{a.durationMs} ms</Table.Td>
                      <Table.Td>
                        <StateBadge state={a.outcome} />
                      </Table.Td>
                      <Table.Td>
                        <Text size="xs" lineClamp={3}>
                          {a.error ?? a.responseExcerpt ?? ""}
                        </Text>
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
            <Text fw={600}>{t("notifications.body")}</Text>
            <Code block data-testid="event-body">
              {JSON.stringify(d.body, null, 2)}
            </Code>
            <Text fw={600}>{t("notifications.verify")}</Text>
            <Text size="sm">{d.verification}</Text>
          </Stack>
        )}
      </QueryState>
    </Drawer>
  );
}

export function Notifications() {
  const { t, dateTime, label } = useI18n();
  const session = useSession();
  const [params, setParams] = useSearchParams();
  const opened = params.get("event");
  const [mandateText, setMandateText] = useState(params.get("mandate") ?? "");
  const [mandate] = useDebouncedValue(mandateText.trim(), 300);
  const [state, setState] = useState<string | null>(null);
  const [kind, setKind] = useState<string | null>(null);
  const [selected, setSelected] = useState<string[]>([]);
  const filters = { mandateInternalId: mandate || undefined, state: state ?? undefined, kind: kind ?? undefined };
  const keyset = useKeyset();
  const { reset } = keyset;
  const filterKey = JSON.stringify(filters);
  useEffect(() => {
    reset();
    setSelected([]);
  }, [filterKey, reset]);
  const fetchPage = (cursor: string | undefined, limit = 50) =>
    payload(api.GET("/notifications", { params: { query: { ...filters, cursor, limit } } }));
  const query = useQuery({
    queryKey: ["events", filters, keyset.cursor],
    queryFn: () => fetchPage(keyset.cursor),
    placeholderData: keepPreviousData,
    refetchInterval: 5_000,
  });
  const redeliver = useRedeliver();
  const items = query.data?.items ?? [];
  const open = (eventId: string | null) => {
    const next = new URLSearchParams(params);
    if (eventId) next.set("event", eventId);
    else next.delete("event");
    setParams(next);
  };
  const toggle = (id: string) => setSelected((s) => (s.includes(id) ? s.filter((x) => x !== id) : [...s, id]));
  const operator = session.can("operator");
  return (
    <Stack>
      <PageTitle title={t("notifications.title")} />
      <Group align="end">
        <TextInput
          label={t("notifications.mandate")}
          value={mandateText}
          onChange={(e) => setMandateText(e.currentTarget.value)}
          w={280}
          data-testid="filter-mandate"
        />
        <Select
          label={t("notifications.delivery")}
          placeholder={t("common.all")}
          clearable
          data={DELIVERY.map((s) => ({ value: s, label: label(s) }))}
          value={state}
          onChange={setState}
        />
        <Select
          label={t("notifications.kind")}
          placeholder={t("common.all")}
          clearable
          data={KINDS.map((s) => ({ value: s, label: label(s) }))}
          value={kind}
          onChange={setKind}
        />
        {operator && (
          <Button
            disabled={selected.length === 0}
            loading={redeliver.isPending}
            onClick={() => redeliver.mutate(selected, { onSuccess: () => setSelected([]) })}
            data-testid="redeliver-selected"
          >
            {t("notifications.redeliverSelected", { count: selected.length })}
          </Button>
        )}
        <ExportCsv<ListedEvent>
          filename="notificaciones.csv"
          fetchPage={(cursor) => fetchPage(cursor, 500)}
          columns={[
            { header: "eventId", value: (e) => e.eventId },
            { header: t("notifications.kind"), value: (e) => e.kind },
            { header: t("common.commerce"), value: (e) => e.commerce },
            { header: "mandateInternalId", value: (e) => e.mandateInternalId },
            { header: "installmentInternalId", value: (e) => e.installmentInternalId },
            { header: t("notifications.delivery"), value: (e) => e.deliveryState },
            { header: t("notifications.attempts"), value: (e) => e.attempts },
            { header: t("notifications.url"), value: (e) => e.url },
            { header: t("common.createdAt"), value: (e) => e.createdAt },
            { header: t("notifications.deliveredAt"), value: (e) => e.deliveredAt },
          ]}
        />
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {items.length === 0 ? (
          <Text c="dimmed">{t("app.none")}</Text>
        ) : (
          <Table.ScrollContainer minWidth={900}>
            <Table striped highlightOnHover data-testid="events-table">
              <Table.Thead>
                <Table.Tr>
                  {operator && (
                    <Table.Th>
                      <Checkbox
                        aria-label="all"
                        checked={items.length > 0 && items.every((e) => selected.includes(e.eventId))}
                        onChange={(e) =>
                          setSelected(e.currentTarget.checked ? items.filter((x) => x.url).map((x) => x.eventId) : [])
                        }
                      />
                    </Table.Th>
                  )}
                  <Table.Th>{t("mandates.event")}</Table.Th>
                  <Table.Th>{t("notifications.kind")}</Table.Th>
                  <Table.Th>{t("common.commerce")}</Table.Th>
                  <Table.Th>{t("nav.mandates")}</Table.Th>
                  <Table.Th>{t("notifications.delivery")}</Table.Th>
                  <Table.Th>{t("notifications.attempts")}</Table.Th>
                  <Table.Th>{t("common.createdAt")}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((e) => (
                  <Table.Tr key={e.eventId} data-event={e.eventId}>
                    {operator && (
                      <Table.Td>
                        <Checkbox
                          aria-label={e.eventId}
                          disabled={!e.url}
                          checked={selected.includes(e.eventId)}
                          onChange={() => toggle(e.eventId)}
                        />
                      </Table.Td>
                    )}
                    <Table.Td>
                      <Anchor component="button" type="button" size="sm" onClick={() => open(e.eventId)}>
                        {e.eventId}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{label(e.kind)}</Table.Td>
                    <Table.Td>{e.commerce}</Table.Td>
                    <Table.Td>
                      {e.mandateInternalId ? (
                        <Anchor component={Link} to={`/mandates/${e.mandateInternalId}`} size="sm">
                          {e.mandateInternalId}
                        </Anchor>
                      ) : (
                        "—"
                      )}
                    </Table.Td>
                    <Table.Td>
                      <StateBadge state={e.deliveryState} />
                    </Table.Td>
                    <Table.Td>{e.attempts}</Table.Td>
                    <Table.Td>{dateTime(e.createdAt)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        )}
        <Pager keyset={keyset} nextCursor={query.data?.nextCursor} />
      </QueryState>
      {opened && <EventDrawer eventId={opened} onClose={() => open(null)} />}
    </Stack>
  );
}
