import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Checkbox,
  Code,
  CopyButton,
  FileInput,
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
import { Fragment, useEffect, useRef, useState } from "react";
import { Link, Navigate, useParams, useSearchParams } from "react-router";
import { ApiError, api, payload, type Schemas } from "../api/client";
import { MandateActivationCard } from "../components/Activation";
import { confirmAction } from "../components/confirm";
import { DateField } from "../components/DateField";
import { QueryState } from "../components/QueryState";
import { StateBadge } from "../components/StateBadge";
import { PageTitle } from "../components/Layout";
import { useI18n, useSession } from "../lib/context";
import { errorText, formErrors } from "../lib/errors";
import type { Key } from "../lib/i18n";
import { CURRENCY_DECIMALS, parseAmount } from "../lib/money";
import { useRejectionWords } from "./Notifications";
import { formatRut } from "../lib/rut";
import { formatBytes, formatNumber } from "../lib/format";
import { ScrollTable } from "../components/ScrollTable";

type Detail = Schemas["MandateDetail"];
/** The currencies a request accepts; the server writes only these in an installment's `currencyId`. */
type Currency = Schemas["ChargesIn"]["currencyId"];
type Installment = Detail["installments"][number];

const METHODS = ["TRANSFER", "CASH", "CHECK", "CARD", "OTHER"];

function useRefresh(id: string) {
  const queryClient = useQueryClient();
  return (detail: Detail) => {
    queryClient.setQueryData(["mandate", id], detail);
    void queryClient.invalidateQueries({ queryKey: ["mandates"] });
    void queryClient.invalidateQueries({ queryKey: ["dashboard"] });
    void queryClient.invalidateQueries({ queryKey: ["events"] });
  };
}

/** One installment a change refused, and why (the server's code). */
interface Refusal {
  internalId: string;
  code: string;
}

/**
 * The installments a change of several refused: the server names each at `installmentIds[i]`,
 * `i` its place in `selected`. The mandate is read again, so that each line tells the state the
 * installment is really in now (another clerk, or the charging run, may have moved it).
 */
function useRefusals(mandateId: string) {
  const queryClient = useQueryClient();
  return (error: unknown, selected: Installment[]): Refusal[] | null => {
    if (!(error instanceof ApiError)) return null;
    void queryClient.invalidateQueries({ queryKey: ["mandate", mandateId] });
    if (error.code === "INSTALLMENT_NOT_FOUND") return [{ internalId: "", code: error.code }];
    const refused = error.errors.flatMap((e) => {
      const match = /^installmentIds\[(\d+)\]$/.exec(e.field);
      const installment = match ? selected[Number(match[1])] : undefined;
      return installment ? [{ internalId: installment.internalId, code: e.code }] : [];
    });
    return refused.length ? refused : null;
  };
}

function Refusals({ refused, detail, target }: { refused: Refusal[] | null; detail: Detail; target: "PAID" | "ANNULLED" }) {
  const { t, label } = useI18n();
  if (!refused) return null;
  const line = (r: Refusal) => {
    const installment = detail.installments.find((i) => i.internalId === r.internalId);
    if (!installment) return t("mandates.refusedUnknown");
    if (r.code === "DUPLICATED_INSTALLMENT") return t("mandates.refusedTwice", { id: installment.id });
    return t("mandates.refusedState", { id: installment.id, state: label(installment.state.name), target: label(target) });
  };
  return (
    <Alert color="red" title={t("mandates.refusedTitle")} data-testid="refusals">
      <Stack gap={2}>
        {refused.map((r, i) => (
          <Text key={i} size="sm">
            {line(r)}
          </Text>
        ))}
      </Stack>
    </Alert>
  );
}

/** Mark paid: one payment received outside automatic charging, for one or several installments. */
function PayModal({
  detail,
  installments,
  onClose,
  onDone,
}: {
  detail: Detail;
  installments: Installment[];
  onClose: () => void;
  onDone: () => void;
}) {
  const { t, lang, label, date } = useI18n();
  const mandateId = detail.mandate.internalId;
  const refresh = useRefresh(mandateId);
  const refusals = useRefusals(mandateId);
  const [general, setGeneral] = useState<string | null>(null);
  const [refused, setRefused] = useState<Refusal[] | null>(null);
  const [dateValid, setDateValid] = useState(true);
  const [file, setFile] = useState<File | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);
  const currency = installments[0].currencyId;
  const decimals = CURRENCY_DECIMALS[currency] ?? 2;
  const total = installments.reduce((sum, i) => sum + i.amount, 0);
  const form = useForm({
    initialValues: {
      date: detail.businessDate,
      amount: new Intl.NumberFormat(lang === "es" ? "es-CL" : "en-US", {
        minimumFractionDigits: decimals,
        maximumFractionDigits: decimals,
      }).format(Number(total.toFixed(decimals))),
      method: "TRANSFER",
      authorizationCode: "",
    },
    validate: {
      date: (value) =>
        !value
          ? t("common.invalidDate")
          : value > detail.businessDate
            ? t("mandates.payDateMax", { date: date(detail.businessDate) })
            : null,
    },
  });
  const mutation = useMutation({
    mutationFn: async (v: typeof form.values) => {
      const amount = parseAmount(v.amount, lang);
      const evidenceFile = file ? { name: file.name, contentBase64: await fileBase64(file) } : null;
      return payload(
        api.POST("/mandates/{internalId}/payments", {
          params: { path: { internalId: mandateId } },
          body: {
            installmentIds: installments.map((i) => i.internalId),
            payment: {
              date: v.date,
              amount: amount ?? Number.NaN,
              currencyId: currency as Currency,
              method: v.method,
              authorizationCode: v.authorizationCode || null,
            },
            evidenceFile,
          },
        }),
      );
    },
    onSuccess: (next) => {
      refresh(next);
      notifications.show({
        color: "green",
        message: installments.length === 1 ? t("mandates.paid") : t("mandates.paidMany", { count: installments.length }),
      });
      onDone();
      onClose();
    },
    onError: (e) => {
      const lines = refusals(e, installments);
      setRefused(lines);
      const mapped = formErrors(
        e,
        {
          "payment.date": "date",
          "payment.amount": "amount",
          "payment.method": "method",
          "payment.authorizationCode": "authorizationCode",
          "evidenceFile.name": "file",
          "evidenceFile.contentBase64": "file",
        },
        ["date", "amount", "method", "authorizationCode", "file"],
      );
      const { file: fileProblem, ...fields } = mapped.fields;
      form.setErrors(fields);
      if (fileProblem) setFileError(evidenceFileWords(t, e) ?? fileProblem);
      setGeneral(lines ? null : mapped.general);
    },
  });
  const ids = installments.map((i) => i.id).join(", ");
  const title =
    installments.length === 1 ? t("mandates.payTitle", { id: installments[0].id }) : t("mandates.payManyTitle", { count: installments.length });
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={title}>
      <form
        onSubmit={form.onSubmit((v) => {
          // A mistyped date is named under its field; the previous date is not sent instead.
          if (!dateValid) return;
          if (parseAmount(v.amount, lang) === null) {
            form.setFieldError("amount", "?");
            return;
          }
          if (fileError) return;
          mutation.mutate(v);
        })}
      >
        <Stack>
          <Text size="sm">{installments.length === 1 ? t("mandates.payIntro") : t("mandates.payManyIntro", { ids })}</Text>
          <Refusals refused={refused} detail={detail} target="PAID" />
          {general && <Alert color="red">{general}</Alert>}
          <DateField
            label={t("mandates.payDate")}
            description={t("mandates.payDateMax", { date: date(detail.businessDate) })}
            name="date"
            required
            max={detail.businessDate}
            maxError={t("mandates.payDateMax", { date: date(detail.businessDate) })}
            testId="pay-date"
            value={form.values.date}
            onChange={(iso) => form.setFieldValue("date", iso)}
            onValidity={setDateValid}
            error={form.errors.date as string | undefined}
          />
          <TextInput label={`${t("common.amount")} (${currency})`} name="amount" required {...form.getInputProps("amount")} />
          <Select
            label={t("mandates.payMethod")}
            data={METHODS.map((m) => ({ value: m, label: t(`method.${m}` as "method.CASH") }))}
            allowDeselect={false}
            {...form.getInputProps("method")}
          />
          <TextInput label={t("mandates.authorizationCode")} name="authorizationCode" {...form.getInputProps("authorizationCode")} />
          <FileInput
            label={t("mandates.evidenceFile")}
            description={t("mandates.evidenceFileHint")}
            accept={EVIDENCE_TYPES.join(",")}
            clearable
            clearButtonProps={{ "aria-label": t("common.clear") }}
            value={file}
            onChange={(next) => {
              setFile(next);
              setFileError(next ? evidenceFileProblem(t, next) : null);
            }}
            error={fileError}
            data-testid="pay-evidence-file"
          />
          <Text size="xs" c="dimmed">
            {[...new Set(installments.map((i) => label(i.state.name)))].join(", ")} → {label("PAID")}
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
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={t("mandates.cancelTitle", { id: detail.mandate.id })}>
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
  // Rows whose due date was mistyped: nothing is sent until each is a date.
  const [invalidDates, setInvalidDates] = useState<Record<number, boolean>>({});
  const [rows, setRows] = useState<NewRow[]>([
    { id: String(detail.installments.length + 1), amount: "", installmentDueDate: detail.businessDate },
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
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={t("mandates.addTitle", { id: detail.mandate.id })} size="lg">
      <Stack>
        {general && <Alert color="red">{general}</Alert>}
        {rows.map((r, i) => (
          <SimpleGrid key={i} cols={{ base: 1, xs: 3 }} data-testid="new-installment-row">
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
            <DateField
              label={t("mandates.dueDate")}
              value={r.installmentDueDate}
              onChange={(iso) => set(i, "installmentDueDate", iso)}
              onValidity={(valid) => setInvalidDates((all) => ({ ...all, [i]: !valid }))}
              error={errors[`installments[${i}].installmentDueDate`]}
              testId="add-due-date"
              width="auto"
            />
          </SimpleGrid>
        ))}
        <Group justify="space-between">
          <Button
            variant="subtle"
            onClick={() =>
              setRows((all) => [
                ...all,
                { id: String(detail.installments.length + all.length + 1), amount: "", installmentDueDate: detail.businessDate },
              ])
            }
          >
            {t("mandates.addRow")}
          </Button>
          <Group>
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button
              onClick={() => {
                if (!Object.values(invalidDates).some(Boolean)) mutation.mutate();
              }}
              loading={mutation.isPending}
              data-testid="add-submit"
            >
              {t("mandates.addInstallments")}
            </Button>
          </Group>
        </Group>
      </Stack>
    </Modal>
  );
}

function InstallmentRows({
  installment,
  selected,
  onSelect,
  onPay,
  onAnnul,
  onRefund,
  focused = false,
}: {
  installment: Installment;
  /** Opened with its history and scrolled to: the installment the page was opened for (`?installment=`). */
  focused?: boolean;
  selected: boolean;
  onSelect: (checked: boolean) => void;
  onPay: () => void;
  onAnnul: () => void;
  onRefund: () => void;
}) {
  const { t, lang, money, date, dateTime, label } = useI18n();
  const session = useSession();
  const operator = session.can("operator");
  const rejectionWords = useRejectionWords();
  const [open, setOpen] = useState(focused);
  const row = useRef<HTMLTableRowElement>(null);
  useEffect(() => {
    if (!focused) return;
    setOpen(true);
    row.current?.scrollIntoView({ block: "center" });
  }, [focused]);
  const selectable = operator && (installment.canPay || installment.canAnnul);
  const notAllowed = t("app.notAllowed", { role: session.info.role });
  return (
    <Fragment>
      <Table.Tr ref={row} data-installment={installment.id} data-focused={focused || undefined}>
        <Table.Td data-testid="installment-id">
          <Group gap="xs" wrap="nowrap">
            <Checkbox
              aria-label={t("mandates.selectInstallment", { id: installment.id })}
              disabled={!selectable}
              checked={selected && selectable}
              onChange={(e) => onSelect(e.currentTarget.checked)}
              data-testid="select-installment"
            />
            <Anchor
              component="button"
              type="button"
              size="sm"
              className="nowrap"
              aria-expanded={open}
              title={t("mandates.historyOf", { id: installment.id })}
              onClick={() => setOpen((o) => !o)}
              data-testid="installment-history-toggle"
            >
              {installment.id}
            </Anchor>
          </Group>
        </Table.Td>
        <Table.Td ta="right" className="nowrap" data-testid="installment-amount">
          {money(installment.amount, installment.currencyId)}
          {installment.ufCharge && (
            <Text size="xs" c="dimmed" data-testid="uf-charge">
              {t("mandates.ufCharged", { clp: money(installment.ufCharge.clp, "CLP") })}
              <br />
              {t("mandates.ufValue", {
                date: date(installment.ufCharge.date),
                value: installment.ufCharge.ufValue == null ? "—" : `$${formatNumber(installment.ufCharge.ufValue, lang, 2)}`,
              })}
            </Text>
          )}
        </Table.Td>
        <Table.Td className="nowrap">
          {date(installment.installmentDueDate)}
          {installment.chargeDate !== installment.installmentDueDate && (
            <Text size="xs" c="dimmed" data-testid="charge-date">
              {t("mandates.chargeDate")} {date(installment.chargeDate)}
            </Text>
          )}
        </Table.Td>
        <Table.Td>
          <StateBadge state={installment.state} />
          {installment.state.name === "REJECTED" && installment.rejection && (
            <Text size="xs" c="red" data-testid="rejection">
              {rejectionWords(installment.rejection.code)}
            </Text>
          )}
          {installment.state.name === "REJECTED" && (
            <Text size="xs" c={installment.nextRetryDate ? "dimmed" : "red"} data-testid="retry">
              {installment.nextRetryDate ? t("mandates.nextRetry", { date: date(installment.nextRetryDate) }) : t("mandates.noRetry")}
            </Text>
          )}
        </Table.Td>
        <Table.Td>{installment.attempts}</Table.Td>
        <Table.Td className="nowrap">{dateTime(installment.dateTime)}</Table.Td>
        <Table.Td className="sticky-end">
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
                  onClick={onAnnul}
                  data-testid="annul"
                >
                  {t("mandates.annul")}
                </Button>
              </Tooltip>
            )}
            {installment.canRefund && (
              <Tooltip label={notAllowed} disabled={operator}>
                <Button size="compact-xs" variant="light" color="orange" disabled={!operator} onClick={onRefund} data-testid="refund">
                  {t("mandates.refund")}
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
                        {h.rejectionCode ? ` · ${rejectionWords(h.rejectionCode)}` : ""}
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
                          <Table.Td>{a.authorizationCode ?? (a.rejectionCode ? rejectionWords(a.rejectionCode) : "")}</Table.Td>
                        </Table.Tr>
                      ))}
                    </Table.Tbody>
                  </Table>
                )}
                {installment.payment && <ManualPaymentFields payment={installment.payment} file={installment.evidenceFile} />}
              </div>
            </SimpleGrid>
          </Table.Td>
        </Table.Tr>
      )}
    </Fragment>
  );
}

/** A payment method as staff wrote it: `TRANSFER` is "Transferencia"; a merchant's own word stays as written. */
function manualMethodWords(t: (key: Key) => string, method: string | null | undefined): string | null {
  if (!method) return null;
  const key = `method.${method}` as Key;
  const words = t(key);
  return words === key ? method : words;
}

/** The evidence of a payment received outside automatic charging, field by field. */
function ManualPaymentFields({
  payment,
  file,
}: {
  payment: NonNullable<Installment["payment"]>;
  file: Installment["evidenceFile"];
}) {
  const { t, lang, date, dateTime, money } = useI18n();
  return (
    <Stack gap={4} mt="xs" data-testid="manual-payment">
      <Text size="sm" fw={600}>
        {t("mandates.manualPayment")}
      </Text>
      <SimpleGrid cols={2} spacing="xs">
        <Evidence name={t("mandates.payMethod")} value={manualMethodWords(t, payment.method)} testId="manual-payment-method" />
        <Evidence name={t("mandates.payDate")} value={date(payment.date)} testId="manual-payment-date" />
        <Evidence name={t("common.amount")} value={money(payment.amount, payment.currencyId)} testId="manual-payment-amount" />
        <Evidence
          name={t("mandates.authorizationCode")}
          value={payment.authorizationCode}
          testId="manual-payment-reference"
        />
      </SimpleGrid>
      {file && (
        <div data-testid="manual-payment-file">
          <Text size="xs" c="dimmed">
            {t("mandates.evidenceFileAttached")}
          </Text>
          <Anchor
            href={file.url}
            target="_blank"
            rel="noopener"
            size="sm"
            style={{ overflowWrap: "anywhere" }}
            aria-label={t("mandates.evidenceFileOpen", { name: file.name })}
            data-testid="manual-payment-file-link"
          >
            {file.name}
          </Anchor>
          <Text size="xs" c="dimmed" data-testid="manual-payment-file-meta">
            {[EVIDENCE_KIND[file.contentType] ?? file.contentType, formatBytes(file.sizeBytes, lang), file.uploadedBy, dateTime(file.uploadedAt)].join(" · ")}
          </Text>
        </div>
      )}
    </Stack>
  );
}

/** The kinds of evidence file the server accepts (it checks the bytes, this only the type the browser says). */
const EVIDENCE_TYPES = ["application/pdf", "image/png", "image/jpeg"];
const EVIDENCE_MAX_BYTES = 5 * 1024 * 1024;
const EVIDENCE_KIND: Record<string, string> = { "application/pdf": "PDF", "image/png": "PNG", "image/jpeg": "JPEG" };

/** What is wrong with a chosen file before it is sent, if anything. */
function evidenceFileProblem(t: (key: Key) => string, file: File): string | null {
  if (file.size > EVIDENCE_MAX_BYTES) return t("mandates.evidenceFileTooLarge");
  if (file.type && !EVIDENCE_TYPES.includes(file.type)) return t("mandates.evidenceFileType");
  return null;
}

/** The server's refusal of the file in the staff's words. */
function evidenceFileWords(t: (key: Key) => string, error: unknown): string | null {
  if (!(error instanceof ApiError)) return null;
  const codes = error.errors.filter((e) => e.field.startsWith("evidenceFile.")).map((e) => e.code);
  if (codes.includes("FILE_TOO_LARGE")) return t("mandates.evidenceFileTooLarge");
  if (codes.includes("UNSUPPORTED_FILE_TYPE")) return t("mandates.evidenceFileType");
  if (codes.includes("INVALID_BASE64")) return t("mandates.evidenceFileUnreadable");
  return null;
}

/** A file's bytes in base64, as the API takes them. */
async function fileBase64(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) {
    binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  }
  return btoa(binary);
}

/** The refund of a card charge through its acquirer, with the reason staff give. */
function RefundModal({ detail, installment, onClose }: { detail: Detail; installment: Installment; onClose: () => void }) {
  const { t, money } = useI18n();
  const refresh = useRefresh(detail.mandate.internalId);
  const [reason, setReason] = useState("");
  const [error, setError] = useState<string | null>(null);
  const mutation = useMutation({
    mutationFn: () =>
      payload(
        api.POST("/installments/{internalId}/refund", {
          params: { path: { internalId: installment.internalId } },
          body: { reason },
        }),
      ),
    onSuccess: (next) => {
      refresh(next);
      notifications.show({ color: "green", message: t("mandates.refunded", { id: installment.id }) });
      onClose();
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["reason"]);
      setError(mapped.fields.reason ?? mapped.general);
    },
  });
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={t("mandates.refundTitle", { id: installment.id })}>
      <Stack>
        <Text size="sm">
          {t("mandates.refundWarning", { amount: money(installment.amount, installment.currencyId) })}
        </Text>
        <Textarea
          label={t("mandates.refundReason")}
          value={reason}
          onChange={(e) => setReason(e.currentTarget.value)}
          error={error}
          maxLength={500}
          data-testid="refund-reason"
        />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            {t("common.cancel")}
          </Button>
          <Button color="orange" onClick={() => mutation.mutate()} loading={mutation.isPending} data-testid="confirm-refund">
            {t("mandates.refund")}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** Annulment of one or several installments, after one confirmation. */
function useAnnul(detail: Detail | undefined, onDone: () => void) {
  const { t } = useI18n();
  const refresh = useRefresh(detail?.mandate.internalId ?? "");
  const refusals = useRefusals(detail?.mandate.internalId ?? "");
  const [refused, setRefused] = useState<Refusal[] | null>(null);
  const mutation = useMutation({
    mutationFn: (installments: Installment[]) =>
      payload(
        api.POST("/mandates/{internalId}/annulments", {
          params: { path: { internalId: detail?.mandate.internalId ?? "" } },
          body: { installmentIds: installments.map((i) => i.internalId) },
        }),
      ),
    onMutate: () => setRefused(null),
    onSuccess: (next, installments) => {
      refresh(next);
      notifications.show({
        color: "green",
        message: installments.length === 1 ? t("mandates.annulled") : t("mandates.annulledMany", { count: installments.length }),
      });
      onDone();
    },
    onError: (e, installments) => {
      const lines = refusals(e, installments);
      setRefused(lines);
      if (!lines) notifications.show({ color: "red", message: errorText(e) });
    },
  });
  const ask = async (installments: Installment[]) => {
    const ids = installments.map((i) => i.id).join(", ");
    const one = installments.length === 1;
    const ok = await confirmAction({
      title: one ? t("mandates.annulTitle", { id: ids }) : t("mandates.annulManyTitle", { count: installments.length }),
      message: one ? t("mandates.annulWarning") : t("mandates.annulManyWarning", { ids }),
      confirm: t("mandates.annul"),
      cancel: t("common.cancel"),
    });
    if (ok) mutation.mutate(installments);
  };
  return { ask, refused, pending: mutation.isPending };
}

/** A value of the acceptance evidence, or "not recorded". */
function Evidence({ name, value, testId }: { name: string; value: string | null | undefined; testId?: string }) {
  const { t } = useI18n();
  return (
    <div>
      <Text size="xs" c="dimmed">
        {name}
      </Text>
      <Text size="sm" style={{ overflowWrap: "anywhere" }} data-testid={testId}>
        {value || t("mandates.unknownValue")}
      </Text>
    </div>
  );
}

function AcceptanceCard({ detail, method }: { detail: Detail; method: EnrolledMethod | null | undefined }) {
  const { t, dateTime } = useI18n();
  const methodWords = usePaymentMethodWords();
  const a = detail.acceptance;
  const p = detail.customer.personalInformation;
  return (
    <Card withBorder data-testid="acceptance">
      <Text fw={600} mb="xs">
        {t("mandates.acceptance")}
      </Text>
      {!a ? (
        <Text size="sm" c="dimmed">
          {t("mandates.notAccepted")}
        </Text>
      ) : (
        <Stack gap="xs">
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 4 }}>
            <Evidence
              name={t("mandates.acceptedBy")}
              value={`${[p.firstName, p.lastName, p.secondLastName].filter(Boolean).join(" ")} · ${formatRut(detail.customer.identificationDocument.number)}`}
            />
            <Evidence name={t("mandates.acceptedAt")} value={dateTime(a.acceptedAt)} testId="accepted-at" />
            <Evidence name={t("mandates.acceptedIp")} value={a.ip} />
            <Evidence name={t("mandates.acceptedMethod")} value={method ? methodWords(method) : null} />
          </SimpleGrid>
          <Evidence name={t("mandates.acceptedUserAgent")} value={a.userAgent} />
          <Text size="xs" c="dimmed" ff="monospace" style={{ wordBreak: "break-all" }}>
            {t("mandates.termsHash")}: {a.termsSha256}
            {a.documentSha256 ? ` · ${t("mandates.documentHash")}: ${a.documentSha256}` : ""}
          </Text>
          {a.documentAvailable && (
            <Group>
              <Button
                component="a"
                href={`/admin/api/mandates/${encodeURIComponent(detail.mandate.internalId)}/document`}
                download
                variant="light"
                data-testid="download-document"
              >
                {t("mandates.downloadDocument")}
              </Button>
            </Group>
          )}
        </Stack>
      )}
    </Card>
  );
}

type EnrolledMethod = { id?: number; name?: string; instrument?: unknown };

/** The enrolled method in words, with its masked instrument. */
function usePaymentMethodWords(): (method: EnrolledMethod) => string {
  const { t, label } = useI18n();
  return (method) => {
    const key = `paymentMethod.${method.name ?? ""}` as Key;
    const words = t(key);
    const name = words === key ? label(method.name) : words;
    return method.instrument ? `${name} · ${String(method.instrument)}` : name;
  };
}

export function MandateDetail() {
  const { id = "" } = useParams();
  // Our ids start with `man_`; anything else is the merchant's mandateId, which the list
  // resolves (`/mandates?id=`) and replaces in the history by the mandate's own page.
  if (!id.startsWith("man_")) return <Navigate to={`/mandates?id=${encodeURIComponent(id)}`} replace />;
  return <MandateDetailOf id={id} />;
}

function MandateDetailOf({ id }: { id: string }) {
  const { t, money, date, dateTime, label } = useI18n();
  const session = useSession();
  const operator = session.can("operator");
  const methodWords = usePaymentMethodWords();
  const [paying, setPaying] = useState<Installment[] | null>(null);
  const [refunding, setRefunding] = useState<Installment | null>(null);
  const [cancelling, setCancelling] = useState(false);
  const [adding, setAdding] = useState(false);
  const [selected, setSelected] = useState<string[]>([]);
  const [params] = useSearchParams();
  const focusedInstallment = params.get("installment");
  const query = useQuery({
    queryKey: ["mandate", id],
    queryFn: () => payload(api.GET("/mandates/{internalId}", { params: { path: { internalId: id } } })),
  });
  const d = query.data;
  const annul = useAnnul(d, () => setSelected([]));
  const charges = (d?.mandate.charges ?? {}) as Record<string, string | number | null>;
  const method = d?.paymentMethod as EnrolledMethod | null | undefined;
  const notAllowed = t("app.notAllowed", { role: session.info.role });
  const selectable = operator ? (d?.installments ?? []).filter((i) => i.canPay || i.canAnnul) : [];
  // An installment that has moved on since it was ticked (paid elsewhere, charged) drops out.
  const chosen = selectable.filter((i) => selected.includes(i.internalId));
  const select = (installment: Installment, checked: boolean) =>
    setSelected((s) => (checked ? [...s, installment.internalId] : s.filter((x) => x !== installment.internalId)));
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
                  <span className="nowrap">{d.mandate.id}</span> · <span className="nowrap">{d.mandate.internalId}</span> · {d.commerce.name} (<span className="nowrap">{formatRut(d.commerce.code)}</span>)
                </Text>
              </Stack>
              <Group gap="xs">
                {d.actions.shareMagicLink && (
                  <CopyButton value={d.mandate.magicLink}>
                    {({ copied, copy }) => (
                      <Button variant="default" onClick={copy} data-testid="copy-magic-link">
                        {copied ? t("common.copied") : t("mandates.copyMagicLink")}
                      </Button>
                    )}
                  </CopyButton>
                )}
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
                  <span className="nowrap" data-testid="customer-rut">
                    {formatRut(d.customer.identificationDocument.number)}
                  </span>{" "}
                  · <span className="nowrap">{d.customer.userId}</span>
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
                <Text size="sm" data-testid="payment-method">
                  {method ? methodWords(method) : t("mandates.notEnrolled")}
                </Text>
                {d.actions.shareMagicLink ? (
                  <>
                    <Text size="xs" c="dimmed" mt="xs">
                      {t("mandates.magicLink")} · {t("mandates.magicLinkExpires", { date: dateTime(d.mandate.magicLinkExpiresAt) })}
                    </Text>
                    <Text size="xs" style={{ wordBreak: "break-all" }} data-testid="magic-link">
                      {d.mandate.magicLink}
                    </Text>
                  </>
                ) : (
                  d.mandate.state.name !== "ACTIVE" &&
                  !method && (
                    <Text size="xs" c="dimmed" mt="xs">
                      {t("mandates.magicLinkClosed")}
                    </Text>
                  )
                )}
              </Card>
            </SimpleGrid>
            <MandateActivationCard mandate={d.mandate} />
            <AcceptanceCard detail={d} method={method} />
            {d.mandate.cancellation && (
              <Alert color="red" title={t("mandates.cancellation")}>
                {d.mandate.cancellation.description}
              </Alert>
            )}
            <Card withBorder>
              <Text fw={600} mb="xs">
                {t("mandates.schedule")}
              </Text>
              <Group
                gap={0}
                wrap="nowrap"
                style={{ overflowX: "auto" }}
                tabIndex={0}
                role="region"
                aria-label={t("mandates.schedule")}
                data-testid="schedule"
              >
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
              <Group justify="space-between" mb="xs">
                <Text fw={600}>{t("mandates.installments")}</Text>
                {operator && (
                  <Group gap="xs" data-testid="bulk-actions">
                    <Text size="sm" c="dimmed">
                      {t("mandates.selected", { count: chosen.length })}
                    </Text>
                    <Button
                      size="xs"
                      variant="light"
                      disabled={chosen.length === 0 || !chosen.every((i) => i.canPay)}
                      onClick={() => setPaying(chosen)}
                      data-testid="pay-selected"
                    >
                      {t("mandates.markPaidSelected", { count: chosen.length })}
                    </Button>
                    <Button
                      size="xs"
                      variant="light"
                      color="red"
                      disabled={chosen.length === 0 || !chosen.every((i) => i.canAnnul)}
                      loading={annul.pending}
                      onClick={() => void annul.ask(chosen)}
                      data-testid="annul-selected"
                    >
                      {t("mandates.annulSelected", { count: chosen.length })}
                    </Button>
                  </Group>
                )}
              </Group>
              <Refusals refused={annul.refused} detail={d} target="ANNULLED" />
              <ScrollTable label={t("mandates.installments")} minWidth={760}>
                <Table data-testid="installments-table">
                  <Table.Thead>
                    <Table.Tr>
                      <Table.Th>
                        <Group gap="xs" wrap="nowrap">
                          <Checkbox
                            aria-label={t("mandates.selectAll")}
                            disabled={selectable.length === 0}
                            checked={selectable.length > 0 && selectable.every((i) => selected.includes(i.internalId))}
                            indeterminate={chosen.length > 0 && chosen.length < selectable.length}
                            onChange={(e) => setSelected(e.currentTarget.checked ? selectable.map((i) => i.internalId) : [])}
                            data-testid="select-all"
                          />
                          {t("common.id")}
                        </Group>
                      </Table.Th>
                      <Table.Th ta="right">{t("common.amount")}</Table.Th>
                      <Table.Th>{t("mandates.dueDate")}</Table.Th>
                      <Table.Th>{t("common.state")}</Table.Th>
                      <Table.Th>{t("mandates.attempts")}</Table.Th>
                      <Table.Th>{t("common.updatedAt")}</Table.Th>
                      <Table.Th className="sticky-end">{t("common.actions")}</Table.Th>
                    </Table.Tr>
                  </Table.Thead>
                  <Table.Tbody>
                    {d.installments.map((i) => (
                      <InstallmentRows
                        key={i.internalId}
                        installment={i}
                        focused={i.internalId === focusedInstallment}
                        selected={selected.includes(i.internalId)}
                        onSelect={(checked) => select(i, checked)}
                        onPay={() => setPaying([i])}
                        onAnnul={() => void annul.ask([i])}
                        onRefund={() => setRefunding(i)}
                      />
                    ))}
                  </Table.Tbody>
                </Table>
              </ScrollTable>
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
                <ScrollTable label={t("mandates.events")} minWidth={640}>
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
                </ScrollTable>
              )}
            </Card>
            {d.mandate.metadata && (
              <Card withBorder>
                <Text fw={600} mb="xs">
                  {t("mandates.metadata")}
                </Text>
                <Code block tabIndex={0} role="region" aria-label={t("mandates.metadata")}>
                  {JSON.stringify(d.mandate.metadata, null, 2)}
                </Code>
              </Card>
            )}
            {refunding && <RefundModal detail={d} installment={refunding} onClose={() => setRefunding(null)} />}
            {paying && (
              <PayModal detail={d} installments={paying} onClose={() => setPaying(null)} onDone={() => setSelected([])} />
            )}
            {cancelling && <CancelModal detail={d} onClose={() => setCancelling(false)} />}
            {adding && <AddInstallmentsModal detail={d} onClose={() => setAdding(false)} />}
          </>
        )}
      </QueryState>
    </Stack>
  );
}
