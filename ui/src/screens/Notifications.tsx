import {
  Anchor,
  Badge,
  Button,
  Card,
  Checkbox,
  Code,
  Drawer,
  Group,
  PasswordInput,
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
import { errorText, formErrors } from "../lib/errors";
import type { Key } from "../lib/i18n";
import { ScrollTable } from "../components/ScrollTable";
import { DeliveryProblemText } from "../components/DeliveryProblemText";
import { deliveryProblem } from "../lib/delivery";
import { formatRut } from "../lib/rut";

type ListedEvent = Schemas["ListedEventDto"];
type EventSummary = Pick<ListedEvent, "deliveryState" | "attempts" | "nextAttemptAt">;
type Verification = Schemas["SignatureVerification"];

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

/** A processor's rejection code in words, or the code itself when it is not a known one. */
export function useRejectionWords(): (code: string) => string {
  const { t } = useI18n();
  return (code) => {
    const key = `rejection.${code}` as Key;
    const words = t(key);
    return words === key ? code : words;
  };
}

/** The delivery state in words: a PENDING event that has been tried is being retried. */
function DeliveryWords({ event }: { event: EventSummary }) {
  const { t, dateTime } = useI18n();
  const words: Record<string, { text: string; color: string }> = {
    DELIVERED: { text: t("notifications.deliveredWord"), color: "green" },
    FAILED: { text: t("notifications.failedFinal"), color: "red" },
    NO_URL: { text: t("notifications.noUrl"), color: "gray" },
  };
  const retrying = event.deliveryState === "PENDING" && event.attempts > 0;
  const shown =
    words[event.deliveryState] ??
    (retrying
      ? { text: t("notifications.retrying"), color: "orange" }
      : { text: t("notifications.toSend"), color: "blue" });
  return (
    <Stack gap={0} data-state={event.deliveryState}>
      <Text size="sm" c={shown.color} fw={600} style={{ whiteSpace: "nowrap" }} data-testid="delivery-words">
        {shown.text}
      </Text>
      {event.deliveryState === "PENDING" && event.nextAttemptAt && retrying && (
        <Text size="xs" c="dimmed" style={{ whiteSpace: "nowrap" }} data-testid="next-attempt">
          {t("notifications.nextAt", { time: dateTime(event.nextAttemptAt) })}
        </Text>
      )}
      <Text size="xs" c="dimmed">
        {t("notifications.attemptCount", { count: event.attempts })}
      </Text>
    </Stack>
  );
}

function Validity({ valid }: { valid: boolean }) {
  const { t } = useI18n();
  return (
    <Badge color={valid ? "green" : "red"} variant="light" data-valid={valid}>
      {valid ? t("notifications.valid") : t("notifications.invalid")}
    </Badge>
  );
}

/** Recomputes both signatures of the event with a pasted secret, on the server. */
function VerifyTool({ eventId }: { eventId: string }) {
  const { t } = useI18n();
  const [secret, setSecret] = useState("");
  const [error, setError] = useState<string | null>(null);
  const check = useMutation({
    mutationFn: (value: string) =>
      payload(api.POST("/notifications/{eventId}/verify", { params: { path: { eventId } }, body: { secret: value } })),
    onMutate: () => setError(null),
    onError: (e) => {
      const mapped = formErrors(e, {}, ["secret"]);
      setError(mapped.fields.secret ? t("notifications.secretInvalid") : mapped.general);
    },
  });
  const result: Verification | undefined = check.data;
  return (
    <Card withBorder data-testid="verify-tool">
      <Stack gap="xs">
        <Text fw={600}>{t("notifications.verifyTool")}</Text>
        <Text size="sm" c="dimmed">
          {t("notifications.verifyIntro")}
        </Text>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            check.mutate(secret.trim());
          }}
        >
          <Group align="end">
            <PasswordInput
              label={t("notifications.secret")}
              placeholder="whsec_…"
              value={secret}
              onChange={(e) => setSecret(e.currentTarget.value)}
              error={error}
              autoComplete="off"
              style={{ flex: 1 }}
              data-testid="verify-secret"
            />
            <Button type="submit" loading={check.isPending} disabled={!secret.trim()} data-testid="verify-submit">
              {t("notifications.check")}
            </Button>
          </Group>
        </form>
        {result && (
          <Table data-testid="verify-result">
            <Table.Tbody>
              <Table.Tr>
                <Table.Td>{t("notifications.bodySignature")}</Table.Td>
                <Table.Td>
                  <Validity valid={result.body.valid} />
                </Table.Td>
              </Table.Tr>
              {result.headers.map((h) => (
                <Table.Tr key={h.attempt}>
                  <Table.Td>{t("notifications.headerSignature", { n: h.attempt, ts: h.webhookTimestamp })}</Table.Td>
                  <Table.Td>
                    <Validity valid={h.valid} />
                  </Table.Td>
                </Table.Tr>
              ))}
              {result.headers.length === 0 && (
                <Table.Tr>
                  <Table.Td colSpan={2}>
                    <Text size="sm" c="dimmed">
                      {t("notifications.noHeaderChecks")}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              )}
            </Table.Tbody>
          </Table>
        )}
      </Stack>
    </Card>
  );
}

/** The signature process a signature event's body is about (`process.internalId`). */
function signatureProcessOf(body: unknown): string | null {
  const id = (body as { process?: { internalId?: unknown } } | null)?.process?.internalId;
  return typeof id === "string" && id.startsWith("sig_") ? id : null;
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
    <Drawer opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} position="right" size="xl" title={eventId}>
      <QueryState loading={query.isLoading} error={query.error}>
        {d && (
          <Stack data-testid="event-detail">
            <SimpleGrid cols={{ base: 2, sm: 3 }} data-testid="event-facts">
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
                {/* Counted from the attempts listed below (a redelivery adds one), so both agree. */}
                <DeliveryWords event={{ ...d.event, attempts: d.attempts.length }} />
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
            {d.event.kind === "signature" && signatureProcessOf(d.body) && (
              <Anchor component={Link} to={`/signatures/${signatureProcessOf(d.body)}`} size="sm" data-testid="event-signature-process">
                {t("create.viewProcess")} ({signatureProcessOf(d.body)})
              </Anchor>
            )}
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
              <ScrollTable label={t("notifications.attempts")} minWidth={560}>
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
                          {a.error || (a.statusCode ?? 0) >= 300 ? (
                            <DeliveryProblemText error={a.error} status={a.statusCode} />
                          ) : null}
                          {a.responseExcerpt && (
                            <Text size="xs" lineClamp={3}>
                              {a.responseExcerpt}
                            </Text>
                          )}
                        </Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              </ScrollTable>
            )}
            {d.attempts.length > 0 && (
              <>
                <Text fw={600}>{t("notifications.headers")}</Text>
                <Stack gap="xs" data-testid="sent-headers">
                  {d.attempts.map((a, i) => (
                    <div key={i}>
                      <Text size="xs" c="dimmed">
                        {t("notifications.headersOf", { n: i + 1, time: dateTime(a.startedAt) })}
                      </Text>
                      {a.headers.length === 0 ? (
                        <Text size="xs">{t("notifications.noHeaders")}</Text>
                      ) : (
                        <Code block style={{ whiteSpace: "pre-wrap", wordBreak: "break-all" }}>
                          {a.headers.map((h) => `${h.name}: ${h.value}`).join("\n")}
                        </Code>
                      )}
                    </div>
                  ))}
                </Stack>
              </>
            )}
            <VerifyTool eventId={eventId} />
            <Text fw={600}>{t("notifications.body")}</Text>
            {/* A long body scrolls sideways: the keyboard reaches it as a named region. */}
            <Code block tabIndex={0} role="region" aria-label={t("notifications.body")} data-testid="event-body">
              {JSON.stringify(d.body, null, 2)}
            </Code>
            <Text fw={600}>{t("notifications.howReceiverVerifies")}</Text>
            <Text size="sm">{t("notifications.howReceiverVerifiesText")}</Text>
          </Stack>
        )}
      </QueryState>
    </Drawer>
  );
}

export function Notifications() {
  const { t, dateTime, label } = useI18n();
  const session = useSession();
  const rejectionWords = useRejectionWords();
  const [params, setParams] = useSearchParams();
  const opened = params.get("event");
  const [mandateText, setMandateText] = useState(params.get("mandate") ?? "");
  const [mandate] = useDebouncedValue(mandateText.trim(), 300);
  const [state, setState] = useState<string | null>(null);
  const [kind, setKind] = useState<string | null>(null);
  const [selected, setSelected] = useState<string[]>([]);
  // Our man_... or the merchant's mandateId: the server matches either.
  const filters = { mandate: mandate || undefined, state: state ?? undefined, kind: kind ?? undefined };
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
            { header: t("csv.eventId"), value: (e) => e.eventId },
            { header: t("notifications.kind"), value: (e) => e.kind },
            { header: t("common.commerce"), value: (e) => e.commerce },
            { header: t("csv.mandateInternalId"), value: (e) => e.mandateInternalId },
            { header: t("csv.mandateId"), value: (e) => e.mandateId },
            { header: t("common.customer"), value: (e) => e.customerName },
            { header: t("common.state"), value: (e) => e.announcedState },
            { header: t("csv.installmentInternalId"), value: (e) => e.installmentInternalId },
            { header: t("notifications.delivery"), value: (e) => e.deliveryState },
            { header: t("notifications.attempts"), value: (e) => e.attempts },
            { header: t("notifications.lastStatus"), value: (e) => e.lastStatusCode },
            { header: t("notifications.nextAttempt"), value: (e) => e.nextAttemptAt },
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
          <ScrollTable label={t("notifications.title")} minWidth={760}>
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
                  <Table.Th>{t("notifications.event")}</Table.Th>
                  <Table.Th>{t("notifications.mandateCustomer")}</Table.Th>
                  <Table.Th>{t("notifications.delivery")}</Table.Th>
                  <Table.Th>{t("notifications.lastStatus")}</Table.Th>
                  <Table.Th style={{ whiteSpace: "nowrap" }}>{t("common.createdAt")}</Table.Th>
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
                      <Group gap={6} wrap="nowrap">
                        <Text size="sm" fw={600}>
                          {label(e.kind)}
                        </Text>
                        {e.announcedState && <StateBadge state={e.announcedState} />}
                      </Group>
                      {/* The body of a retry IN_PROCESS still carries the previous rejection; only a REJECTED event is one. */}
                      {e.rejectionCode && e.announcedState === "REJECTED" && (
                        <Text size="xs" c="red" data-testid="event-rejection">
                          {t("notifications.rejected", { reason: rejectionWords(e.rejectionCode) })}
                        </Text>
                      )}
                      <Anchor component="button" type="button" size="xs" ff="monospace" onClick={() => open(e.eventId)}>
                        {e.eventId}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>
                      {e.mandateInternalId ? (
                        <Anchor component={Link} to={`/mandates/${e.mandateInternalId}`} size="sm" fw={600}>
                          {e.mandateId ?? e.mandateInternalId}
                        </Anchor>
                      ) : e.signatureProcessId ? null : (
                        "—"
                      )}
                      {e.signatureProcessId && (
                        <Anchor
                          component={Link}
                          to={`/signatures/${e.signatureProcessId}`}
                          size="xs"
                          ff="monospace"
                          display="block"
                          data-testid="event-signature-link"
                          aria-label={`${t("create.viewProcess")} ${e.signatureProcessId}`}
                        >
                          {e.signatureProcessId}
                        </Anchor>
                      )}
                      <Text size="xs">{e.customerName ?? ""}</Text>
                      <Text size="xs" c="dimmed" className="nowrap">
                        {formatRut(e.commerce)}
                      </Text>
                    </Table.Td>
                    <Table.Td>
                      <DeliveryWords event={e} />
                    </Table.Td>
                    <Table.Td>
                      {e.lastStatusCode ? (
                        <Text size="sm" c={e.lastStatusCode < 300 ? undefined : "red"}>
                          {e.lastStatusCode}
                        </Text>
                      ) : e.lastError ? (
                        <Text size="xs" c="red" title={t(deliveryProblem(e.lastError)?.key ?? "delivery.failed")}>
                          {t("notifications.noAnswer")}
                        </Text>
                      ) : (
                        "—"
                      )}
                    </Table.Td>
                    <Table.Td style={{ whiteSpace: "nowrap" }}>{dateTime(e.createdAt)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        )}
        <Pager keyset={keyset} nextCursor={query.data?.nextCursor} />
      </QueryState>
      {opened && <EventDrawer eventId={opened} onClose={() => open(null)} />}
    </Stack>
  );
}
