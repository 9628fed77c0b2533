import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Code,
  CopyButton,
  Group,
  Modal,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Textarea,
  Timeline,
  Tooltip,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { notifications } from "@mantine/notifications";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { Fragment, useState } from "react";
import { Link, useParams } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { MandateActivationCard } from "../components/Activation";
import { confirmAction } from "../components/confirm";
import { QueryState } from "../components/QueryState";
import { StateBadge } from "../components/StateBadge";
import { PageTitle } from "../components/Layout";
import { useI18n, useSession } from "../lib/context";
import { errorText, formErrors } from "../lib/errors";
import { CURRENCY_DECIMALS, parseAmount } from "../lib/money";

type Detail = Schemas["MandateDetail"];
/** The currencies a request accepts; the server writes only these in an installment's `currencyId`. */
type Currency = Schemas["ChargesIn"]["currencyId"];
type Installment = Detail["installments"][number];

const METHODS = ["TRANSFER", "CASH", "CHECK", "CARD", "OTHER"];

function today(): string {
  // The business calendar is America/Santiago: the date there, not the browser's.
  return new Intl.DateTimeFormat("en-CA", { timeZone: "America/Santiago" }).format(new Date());
}

function useRefresh(id: string) {
  const queryClient = useQueryClient();
  return (detail: Detail) => {
    queryClient.setQueryData(["mandate", id], detail);
    void queryClient.invalidateQueries({ queryKey: ["mandates"] });
    void queryClient.invalidateQueries({ queryKey: ["dashboard"] });
    void queryClient.invalidateQueries({ queryKey: ["events"] });
  };
}

/** Mark paid: the evidence of a payment received outside automatic charging. */
function PayModal({ mandateId, installment, onClose }: { mandateId: string; installment: Installment; onClose: () => void }) {
  const { t, lang, label } = useI18n();
  const refresh = useRefresh(mandateId);
  const [general, setGeneral] = useState<string | null>(null);
  const decimals = CURRENCY_DECIMALS[installment.currencyId] ?? 2;
  const form = useForm({
    initialValues: {
      date: today(),
      amount: new Intl.NumberFormat(lang === "es" ? "es-CL" : "en-US", {
        minimumFractionDigits: decimals,
        maximumFractionDigits: decimals,
      }).format(installment.amount),
      method: "TRANSFER",
      authorizationCode: "",
    },
  });
  const mutation = useMutation({
    mutationFn: (v: typeof form.values) => {
      const amount = parseAmount(v.amount, lang);
      return payload(
        api.POST("/mandates/{internalId}/payments", {
          params: { path: { internalId: mandateId } },
          body: {
            installmentIds: [installment.internalId],
            payment: {
              date: v.date,
              amount: amount ?? Number.NaN,
              currencyId: installment.currencyId as Currency,
              method: v.method,
              authorizationCode: v.authorizationCode || null,
            },
          },
        }),
      );
    },
    onSuccess: (detail) => {
      refresh(detail);
      notifications.show({ color: "green", message: t("mandates.paid") });
      onClose();
    },
    onError: (e) => {
      const mapped = formErrors(
        e,
        {
          "payment.date": "date",
          "payment.amount": "amount",
          "payment.method": "method",
          "payment.authorizationCode": "authorizationCode",
        },
        ["date", "amount", "method", "authorizationCode"],
      );
      form.setErrors(mapped.fields);
      setGeneral(mapped.general);
    },
  });
  return (
    <Modal opened onClose={onClose} title={t("mandates.payTitle", { id: installment.id })}>
      <form
        onSubmit={form.onSubmit((v) => {
          if (parseAmount(v.amount, lang) === null) {
            form.setFieldError("amount", "?");
            return;
          }
          mutation.mutate(v);
        })}
      >
        <Stack>
          <Text size="sm">{t("mandates.payIntro")}</Text>
          {general && <Alert color="red">{general}</Alert>}
          <TextInput type="date" label={t("mandates.payDate")} name="date" required {...form.getInputProps("date")} />
          <TextInput
            label={`${t("common.amount")} (${installment.currencyId})`}
            name="amount"
            required
            {...form.getInputProps("amount")}
          />
          <Select
            label={t("mandates.payMethod")}
            data={METHODS.map((m) => ({ value: m, label: t(`method.${m}` as "method.CASH") }))}
            allowDeselect={false}
            {...form.getInputProps("method")}
          />
          <TextInput label={t("mandates.authorizationCode")} name="authorizationCode" {...form.getInputProps("authorizationCode")} />
          <Text size="xs" c="dimmed">
            {label(installment.state.name)} → {label("PAID")}
          </Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button type="submit" loading={mutation.isPending} data-testid="pay-submit">
              {t("mandates.markPaid")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

/** Cancel with a reason; the modal is the confirmation (a red button, and what it does). */
function CancelModal({ detail, onClose }: { detail: Detail; onClose: () => void }) {
  const { t } = useI18n();
  const id = detail.mandate.internalId;
  const refresh = useRefresh(id);
  const [general, setGeneral] = useState<string | null>(null);
  const form = useForm({ initialValues: { description: "" } });
  const mutation = useMutation({
    mutationFn: (description: string) =>
      payload(api.POST("/mandates/{internalId}/cancel", { params: { path: { internalId: id } }, body: { description } })),
    onSuccess: (next) => {
      refresh(next);
      notifications.show({ color: "green", message: t("mandates.cancelled") });
      onClose();
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["description"]);
      form.setErrors(mapped.fields);
      setGeneral(mapped.general);
    },
  });
  return (
    <Modal opened onClose={onClose} title={t("mandates.cancelTitle", { id: detail.mandate.id })}>
      <form onSubmit={form.onSubmit((v) => mutation.mutate(v.description))}>
        <Stack>
          <Alert color="red">{t("mandates.cancelWarning")}</Alert>
          {general && <Alert color="red">{general}</Alert>}
          <Textarea
            label={t("mandates.cancelReason")}
            name="description"
            autosize
            minRows={2}
            maxLength={500}
            {...form.getInputProps("description")}
          />
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.close")}
            </Button>
            <Button color="red" type="submit" loading={mutation.isPending} data-testid="cancel-submit">
              {t("mandates.cancelConfirm")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}

interface NewRow {
  id: string;
  amount: string;
  installmentDueDate: string;
}

/** New installments of a DYNAMIC mandate: all of them, or none. */
function AddInstallmentsModal({ detail, onClose }: { detail: Detail; onClose: () => void }) {
  const { t, lang } = useI18n();
  const id = detail.mandate.internalId;
  const currency = String(
    (detail.mandate.charges as Record<string, unknown>).currencyId ?? "CLP",
  ) as Currency;
  const refresh = useRefresh(id);
  const [general, setGeneral] = useState<string | null>(null);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [rows, setRows] = useState<NewRow[]>([
    { id: String(detail.installments.length + 1), amount: "", installmentDueDate: today() },
  ]);
  const mutation = useMutation({
    mutationFn: () =>
      payload(
        api.POST("/mandates/{internalId}/installments", {
          params: { path: { internalId: id } },
          body: {
            installments: rows.map((r) => ({
              id: r.id,
              amount: parseAmount(r.amount, lang) ?? Number.NaN,
              currencyId: currency,
              installmentDueDate: r.installmentDueDate,
            })),
          },
        }),
      ),
    onSuccess: (next) => {
      refresh(next);
      notifications.show({ color: "green", message: t("mandates.added") });
      onClose();
    },
    onError: (e) => {
      const mapped = formErrors(e);
      setErrors(mapped.fields);
      setGeneral(mapped.general);
    },
  });
  const set = (i: number, key: keyof NewRow, value: string) =>
    setRows((all) => all.map((r, j) => (j === i ? { ...r, [key]: value } : r)));
  return (
    <Modal opened onClose={onClose} title={t("mandates.addTitle", { id: detail.mandate.id })} size="lg">
      <Stack>
        {general && <Alert color="red">{general}</Alert>}
        {rows.map((r, i) => (
          <Group key={i} align="start" grow>
            <TextInput
              label={t("mandates.installmentId")}
              value={r.id}
              onChange={(e) => set(i, "id", e.currentTarget.value)}
              error={errors[`installments[${i}].id`] ?? errors.installments}
            />
            <TextInput
              label={`${t("common.amount")} (${currency})`}
              value={r.amount}
              onChange={(e) => set(i, "amount", e.currentTarget.value)}
              error={errors[`installments[${i}].amount`] ?? errors[`installments[${i}].currencyId`]}
            />
            <TextInput
              type="date"
              label={t("mandates.dueDate")}
              value={r.installmentDueDate}
              onChange={(e) => set(i, "installmentDueDate", e.currentTarget.value)}
              error={errors[`installments[${i}].installmentDueDate`]}
            />
          </Group>
        ))}
        <Group justify="space-between">
          <Button
            variant="subtle"
            onClick={() =>
              setRows((all) => [...all, { id: String(detail.installments.length + all.length + 1), amount: "", installmentDueDate: today() }])
            }
          >
            {t("mandates.addRow")}
          </Button>
          <Group>
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button onClick={() => mutation.mutate()} loading={mutation.isPending} data-testid="add-submit">
              {t("mandates.addInstallments")}
            </Button>
          </Group>
        </Group>
      </Stack>
    </Modal>
  );
}

function InstallmentRows({ detail, installment, onPay }: { detail: Detail; installment: Installment; onPay: () => void }) {
  const { t, money, date, dateTime, label } = useI18n();
  const session = useSession();
  const operator = session.can("operator");
  const refresh = useRefresh(detail.mandate.internalId);
  const [open, setOpen] = useState(false);
  const annul = useMutation({
    mutationFn: () =>
      payload(
        api.POST("/mandates/{internalId}/annulments", {
          params: { path: { internalId: detail.mandate.internalId } },
          body: { installmentIds: [installment.internalId] },
        }),
      ),
    onSuccess: (next) => {
      refresh(next);
      notifications.show({ color: "green", message: t("mandates.annulled") });
    },
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
  const askAnnul = async () => {
    const ok = await confirmAction({
      title: t("mandates.annulTitle", { id: installment.id }),
      message: t("mandates.annulWarning"),
      confirm: t("mandates.annul"),
      cancel: t("common.cancel"),
    });
    if (ok) annul.mutate();
  };
  const notAllowed = t("app.notAllowed", { role: session.info.role });
  return (
    <Fragment>
      <Table.Tr data-installment={installment.id}>
        <Table.Td>
          <Anchor component="button" type="button" size="sm" onClick={() => setOpen((o) => !o)}>
            {installment.id}
          </Anchor>
        </Table.Td>
        <Table.Td>
          {date(installment.installmentDueDate)}
          {installment.chargeDate !== installment.installmentDueDate && (
            <Text size="xs" c="dimmed" data-testid="charge-date">
              {t("mandates.chargeDate")} {date(installment.chargeDate)}
            </Text>
          )}
        </Table.Td>
        <Table.Td ta="right">{money(installment.amount, installment.currencyId)}</Table.Td>
        <Table.Td>
          <StateBadge state={installment.state} />
          {installment.rejection && (
            <Text size="xs" c="red">
              {installment.rejection.code}
            </Text>
          )}
        </Table.Td>
        <Table.Td>{installment.attempts}</Table.Td>
        <Table.Td>{dateTime(installment.dateTime)}</Table.Td>
        <Table.Td>
          <Group gap={4} wrap="nowrap">
            {installment.canPay && (
              <Tooltip label={notAllowed} disabled={operator}>
                <Button size="compact-xs" variant="light" disabled={!operator} onClick={onPay} data-testid="mark-paid">
                  {t("mandates.markPaid")}
                </Button>
              </Tooltip>
            )}
            {installment.canAnnul && (
              <Tooltip label={notAllowed} disabled={operator}>
                <Button
                  size="compact-xs"
                  variant="light"
                  color="red"
                  disabled={!operator}
                  loading={annul.isPending}
                  onClick={() => void askAnnul()}
                  data-testid="annul"
                >
                  {t("mandates.annul")}
                </Button>
              </Tooltip>
            )}
          </Group>
        </Table.Td>
      </Table.Tr>
      {open && (
        <Table.Tr>
          <Table.Td colSpan={7} bg="var(--mantine-color-default-hover)">
            <SimpleGrid cols={{ base: 1, md: 2 }}>
              <div>
                <Text size="sm" fw={600}>
                  {t("mandates.history")}
                </Text>
                <Timeline active={installment.history.length - 1} bulletSize={12} lineWidth={2} mt="xs">
                  {installment.history.map((h, i) => (
                    <Timeline.Item key={i} title={label(h.state.name)}>
                      <Text size="xs" c="dimmed">
                        {dateTime(h.at)}
                        {h.rejectionCode ? ` · ${h.rejectionCode}` : ""}
                      </Text>
                      {h.eventId && (
                        <Anchor component={Link} to={`/notifications?event=${h.eventId}`} size="xs">
                          {h.eventId} · {label(h.deliveryState)}
                        </Anchor>
                      )}
                    </Timeline.Item>
                  ))}
                </Timeline>
              </div>
              <div>
                <Text size="sm" fw={600}>
                  {t("mandates.chargeAttempts")}
                </Text>
                {installment.chargeAttempts.length === 0 ? (
                  <Text size="xs" c="dimmed">
                    {t("app.none")}
                  </Text>
                ) : (
                  <Table>
                    <Table.Tbody>
                      {installment.chargeAttempts.map((a) => (
                        <Table.Tr key={a.attempt}>
                          <Table.Td>#{a.attempt}</Table.Td>
                          <Table.Td>{date(a.businessDate)}</Table.Td>
                          <Table.Td>
                            <StateBadge state={a.state} />
                          </Table.Td>
                          <Table.Td>{a.authorizationCode ?? a.rejectionCode ?? ""}</Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                )}
                {installment.payment && (
                  <Code block mt="xs">
                    {JSON.stringify(installment.payment, null, 2)}
                  </Code>
                )}
              </div>
            </SimpleGrid>
          </Table.Td>
        </Table.Tr>
      )}
    </Fragment>
  );
}

export function MandateDetail() {
  const { id = "" } = useParams();
  const { t, money, date, dateTime, label } = useI18n();
  const session = useSession();
  const operator = session.can("operator");
  const [paying, setPaying] = useState<Installment | null>(null);
  const [cancelling, setCancelling] = useState(false);
  const [adding, setAdding] = useState(false);
  const query = useQuery({
    queryKey: ["mandate", id],
    queryFn: () => payload(api.GET("/mandates/{internalId}", { params: { path: { internalId: id } } })),
  });
  const d = query.data;
  const charges = (d?.mandate.charges ?? {}) as Record<string, string | number | null>;
  const method = d?.paymentMethod as { id?: number; name?: string; instrument?: unknown } | null | undefined;
  const notAllowed = t("app.notAllowed", { role: session.info.role });
  return (
    <Stack>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {d && (
          <>
            <Group justify="space-between" align="start">
              <Stack gap={2}>
                <Group gap="sm">
                  <PageTitle title={d.mandate.name} />
                  <StateBadge state={d.mandate.state} />
                  <Badge variant="outline">{label(d.mandate.type)}</Badge>
                </Group>
                <Text c="dimmed" size="sm">
                  {d.mandate.id} · {d.mandate.internalId} · {d.commerce.name} ({d.commerce.code})
                </Text>
              </Stack>
              <Group gap="xs">
                <CopyButton value={d.mandate.magicLink}>
                  {({ copied, copy }) => (
                    <Button variant="default" onClick={copy} data-testid="copy-magic-link">
                      {copied ? t("common.copied") : t("mandates.copyMagicLink")}
                    </Button>
                  )}
                </CopyButton>
                {d.actions.addInstallments && (
                  <Tooltip label={notAllowed} disabled={operator}>
                    <Button variant="light" disabled={!operator} onClick={() => setAdding(true)} data-testid="add-installments">
                      {t("mandates.addInstallments")}
                    </Button>
                  </Tooltip>
                )}
                {d.actions.cancel && (
                  <Tooltip label={notAllowed} disabled={operator}>
                    <Button color="red" variant="light" disabled={!operator} onClick={() => setCancelling(true)} data-testid="cancel-mandate">
                      {t("mandates.cancel")}
                    </Button>
                  </Tooltip>
                )}
              </Group>
            </Group>
            <SimpleGrid cols={{ base: 1, md: 3 }}>
              <Card withBorder>
                <Text fw={600} mb="xs">
                  {t("common.customer")}
                </Text>
                <Anchor component={Link} to={`/customers/${d.customer.internalUserId}`}>
                  {d.customer.personalInformation.firstName} {d.customer.personalInformation.lastName}
                </Anchor>
                <Text size="sm">
                  {d.customer.identificationDocument.number} · {d.customer.userId}
                </Text>
                <Text size="sm" c="dimmed">
                  {d.customer.contacts.email}
                </Text>
              </Card>
              <Card withBorder>
                <Text fw={600} mb="xs">
                  {t("mandates.charges")}
                </Text>
                <Text size="sm">
                  {money(
                    (charges.amount ?? charges.maxAmount) as number | null,
                    charges.currencyId as string,
                  )}{" "}
                  {charges.periodicity ? `· ${label(String(charges.periodicity))}` : ""}
                </Text>
                <Text size="xs" c="dimmed">
                  {[
                    charges.startDate && `${t("common.from")} ${date(String(charges.startDate))}`,
                    charges.endDate && `${t("common.to")} ${date(String(charges.endDate))}`,
                    charges.count && `× ${charges.count}`,
                    charges.dueDate && `${t("mandates.dueDate")} ${date(String(charges.dueDate))}`,
                  ]
                    .filter(Boolean)
                    .join(" · ")}
                </Text>
                <Text size="xs" c="dimmed">
                  {t("common.createdAt")}: {dateTime(d.mandate.createdAt)}
                </Text>
              </Card>
              <Card withBorder>
                <Text fw={600} mb="xs">
                  {t("mandates.paymentMethod")}
                </Text>
                <Text size="sm">
                  {method ? `${label(method.name)} ${method.instrument ? JSON.stringify(method.instrument) : ""}` : t("mandates.notEnrolled")}
                </Text>
                <Text size="xs" c="dimmed" mt="xs">
                  {t("mandates.magicLink")} · {t("mandates.magicLinkExpires", { date: dateTime(d.mandate.magicLinkExpiresAt) })}
                </Text>
                <Text size="xs" style={{ wordBreak: "break-all" }} data-testid="magic-link">
                  {d.mandate.magicLink}
                </Text>
              </Card>
            </SimpleGrid>
            <MandateActivationCard mandate={d.mandate} />
            {d.mandate.cancellation && (
              <Alert color="red" title={t("mandates.cancellation")}>
                {d.mandate.cancellation.description}
              </Alert>
            )}
            <Card withBorder>
              <Text fw={600} mb="xs">
                {t("mandates.schedule")}
              </Text>
              <Group gap={0} wrap="nowrap" style={{ overflowX: "auto" }} data-testid="schedule">
                {d.installments.map((i) => (
                  <Stack key={i.internalId} gap={2} miw={110} align="center" p={4}>
                    <StateBadge state={i.state} />
                    <Text size="xs" fw={600}>
                      {date(i.installmentDueDate)}
                    </Text>
                    <Text size="xs" c="dimmed">
                      {money(i.amount, i.currencyId)}
                    </Text>
                  </Stack>
                ))}
              </Group>
            </Card>
            <Card withBorder>
              <Text fw={600} mb="xs">
                {t("mandates.installments")}
              </Text>
              <Table.ScrollContainer minWidth={700}>
                <Table data-testid="installments-table">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>{t("common.id")}</Table.Th>
                      <Table.Th>{t("mandates.dueDate")}</Table.Th>
                      <Table.Th ta="right">{t("common.amount")}</Table.Th>
                      <Table.Th>{t("common.state")}</Table.Th>
                      <Table.Th>{t("mandates.attempts")}</Table.Th>
                      <Table.Th>{t("common.updatedAt")}</Table.Th>
                      <Table.Th>{t("common.actions")}</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {d.installments.map((i) => (
                      <InstallmentRows key={i.internalId} detail={d} installment={i} onPay={() => setPaying(i)} />
                    ))}
                  </Table.Tbody>
                </Table>
              </Table.ScrollContainer>
            </Card>
            <Card withBorder>
              <Text fw={600} mb="xs">
                {t("mandates.events")}
              </Text>
              {d.events.length === 0 ? (
                <Text size="sm" c="dimmed">
                  {t("mandates.noEvents")}
                </Text>
              ) : (
                <Table data-testid="mandate-events">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>{t("mandates.sequence")}</Table.Th>
                      <Table.Th>{t("mandates.event")}</Table.Th>
                      <Table.Th>{t("common.state")}</Table.Th>
                      <Table.Th>{t("mandates.delivery")}</Table.Th>
                      <Table.Th>{t("common.createdAt")}</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {d.events.map((e) => (
                      <Table.Tr key={e.eventId}>
                        <Table.Td>{e.sequence}</Table.Td>
                        <Table.Td>
                          <Anchor component={Link} to={`/notifications?event=${e.eventId}`} size="sm">
                            {label(e.kind)} · {e.eventId}
                          </Anchor>
                        </Table.Td>
                        <Table.Td>{e.state ? <StateBadge state={e.state} /> : "—"}</Table.Td>
                        <Table.Td>
                          <StateBadge state={e.deliveryState} />
                        </Table.Td>
                        <Table.Td>{dateTime(e.createdAt)}</Table.Td>
                      </Table.Tr>
                    ))}
                  </Table.Tbody>
                </Table>
              )}
            </Card>
            {d.mandate.metadata && (
              <Card withBorder>
                <Text fw={600} mb="xs">
                  {t("mandates.metadata")}
                </Text>
                <Code block>{JSON.stringify(d.mandate.metadata, null, 2)}</Code>
              </Card>
            )}
            {paying && <PayModal mandateId={d.mandate.internalId} installment={paying} onClose={() => setPaying(null)} />}
            {cancelling && <CancelModal detail={d} onClose={() => setCancelling(false)} />}
            {adding && <AddInstallmentsModal detail={d} onClose={() => setAdding(false)} />}
          </>
        )}
      </QueryState>
    </Stack>
  );
}
