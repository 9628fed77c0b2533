import {
  Alert,
  Badge,
  NumberInput,
  Button,
  Card,
  Code,
  CopyButton,
  Group,
  Modal,
  MultiSelect,
  PasswordInput,
  Select,
  SimpleGrid,
  Stack,
  Switch,
  Table,
  Tabs,
  TagsInput,
  Text,
  TextInput,
  Textarea,
  Title,
} from "@mantine/core";
import { useForm } from "@mantine/form";
import { notifications } from "@mantine/notifications";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useSearchParams } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { CommerceActivationMode } from "../components/Activation";
import { Acquirers } from "./Acquirers";
import { AuditChainCheck } from "../components/AuditChainCheck";
import { useCommerces } from "../components/CommerceSelect";
import { confirmAction } from "../components/confirm";
import { LastBackup } from "../components/LastBackup";
import { QueryState } from "../components/QueryState";
import { PageTitle } from "../components/Layout";
import { useI18n, useSession } from "../lib/context";
import { errorText, formErrors } from "../lib/errors";
import type { Key } from "../lib/i18n";
import { formatRut, wrongCheckDigit } from "../lib/rut";
import { PasswordChange } from "./SignIn";
import { DateField } from "../components/DateField";
import { formatExactDecimal } from "../lib/format";
import { ScrollTable } from "../components/ScrollTable";

/** The payment methods a commerce may offer, by their ids in the API. */
const METHOD_IDS = [3, 4, 11, 5, 6, 14] as const;

/** A payment method id in words (`3` is "Crédito"); an id this UI does not know stays a number. */
function methodName(t: (key: Key) => string, id: number): string {
  const key = `settings.method.${id}` as Key;
  const words = t(key);
  return words === key ? String(id) : words;
}

/** A secret shown once, with a copy button. */
function ShownOnce({ title, values, onClose }: { title: string; values: [string, string][]; onClose: () => void }) {
  const { t } = useI18n();
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={title} size="lg">
      <Stack>
        <Alert color="yellow">{t("common.shownOnce")}</Alert>
        {values.map(([name, value]) => (
          <Stack key={name} gap={4}>
            <Text size="sm" fw={600}>
              {name}
            </Text>
            <Group wrap="nowrap">
              <Code style={{ wordBreak: "break-all", flex: 1 }} data-testid={`secret-${name}`}>
                {value}
              </Code>
              <CopyButton value={value}>
                {({ copied, copy }) => (
                  <Button size="xs" variant="default" onClick={copy}>
                    {copied ? t("common.copied") : t("common.copy")}
                  </Button>
                )}
              </CopyButton>
            </Group>
          </Stack>
        ))}
        <Group justify="flex-end">
          <Button onClick={onClose} data-testid="shown-once-done">
            {t("common.done")}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

function useInvalidate(...keys: string[]) {
  const queryClient = useQueryClient();
  return () => keys.forEach((k) => void queryClient.invalidateQueries({ queryKey: [k] }));
}

function Commerces() {
  const { t, dateTime } = useI18n();
  const session = useSession();
  const admin = session.can("admin");
  const commerces = useCommerces();
  const invalidate = useInvalidate("commerces");
  const [shown, setShown] = useState<{ title: string; values: [string, string][] } | null>(null);
  const [general, setGeneral] = useState<string | null>(null);
  const [editing, setEditing] = useState<Schemas["CommerceDto"] | null>(null);
  const [editingWebhook, setEditingWebhook] = useState<Schemas["CommerceDto"] | null>(null);
  const form = useForm({
    initialValues: { code: "", name: "", password: "", channels: [] as string[], paymentMethods: METHOD_IDS.map(String), authorizationRequired: false },
    validateInputOnChange: ["code"],
    validate: {
      code: (code) => {
        const wrong = wrongCheckDigit(code);
        return wrong ? t("settings.rutInvalid", wrong) : null;
      },
    },
  });
  const create = useMutation({
    mutationFn: (v: typeof form.values) =>
      payload(
        api.POST("/commerces", {
          body: {
            code: v.code,
            name: v.name,
            password: v.password || null,
            channels: v.channels,
            paymentMethods: v.paymentMethods.map(Number),
            authorizationRequired: v.authorizationRequired,
          },
        }),
      ),
    onSuccess: (r) => {
      invalidate();
      form.reset();
      setGeneral(null);
      const values: [string, string][] = [[t("settings.webhookSecret"), r.webhookSecret]];
      if (r.password) values.push([t("settings.generatedPassword"), r.password]);
      setShown({ title: t("settings.commerceCreated", { code: r.code }), values });
    },
    onError: (e, v) => {
      const mapped = formErrors(e, {}, ["code", "name", "password", "channels", "paymentMethods"]);
      const wrong = wrongCheckDigit(v.code);
      form.setErrors(wrong ? { ...mapped.fields, code: t("settings.rutInvalid", wrong) } : mapped.fields);
      setGeneral(mapped.general);
    },
  });
  const [rotating, setRotating] = useState<string | null>(null);
  const rotate = useMutation({
    mutationFn: ({ code, overlapHours }: { code: string; overlapHours: number }) =>
      payload(api.POST("/commerces/{code}/rotate-secret", { params: { path: { code } }, body: { overlapHours } })),
    onSuccess: (r) => {
      invalidate();
      setRotating(null);
      setShown({ title: t("settings.rotated", { date: dateTime(r.previousValidUntil) }), values: [[t("settings.webhookSecret"), r.webhookSecret]] });
    },
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
  const reveal = useMutation({
    mutationFn: (code: string) => payload(api.POST("/commerces/{code}/reveal-secret", { params: { path: { code } } })),
    onSuccess: (r) =>
      setShown({ title: t("settings.currentSecret", { code: r.code }), values: [[t("settings.webhookSecret"), r.webhookSecret]] }),
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
  const askRotate = (code: string) => setRotating(code);
  return (
    <Stack>
      <QueryState loading={commerces.isLoading} error={commerces.error}>
        <ScrollTable label={t("settings.commerces")} minWidth={1100}>
          <Table striped data-testid="commerces-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("common.id")}</Table.Th>
                <Table.Th>{t("common.name")}</Table.Th>
                <Table.Th>{t("settings.paymentMethods")}</Table.Th>
                <Table.Th>{t("settings.retryPolicy")}</Table.Th>
                <Table.Th>{t("activation.mode")}</Table.Th>
                <Table.Th>{t("settings.chargingRule")}</Table.Th>
                <Table.Th>{t("settings.webhookUrl")}</Table.Th>
                <Table.Th>{t("common.createdAt")}</Table.Th>
                {admin && <Table.Th>{t("common.actions")}</Table.Th>}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {(commerces.data?.items ?? []).map((c) => (
                <Table.Tr key={c.code} data-commerce={c.code}>
                  <Table.Td className="nowrap">{formatRut(c.code)}</Table.Td>
                  <Table.Td>
                    {c.name}
                    {c.channels && (
                      <Text size="xs" c="dimmed">
                        {c.channels.join(", ")}
                      </Text>
                    )}
                    {c.previousSecretValidUntil && (
                      <Text size="xs" c="orange">
                        {t("settings.rotation", { date: dateTime(c.previousSecretValidUntil) })}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td data-testid="commerce-methods">{c.paymentMethods.map((id) => methodName(t, id)).join(", ")}</Table.Td>
                  <Table.Td>
                    {c.retryPolicy.afterDays.join(", ")}
                    {!c.customRetryPolicy && (
                      <Text span size="xs" c="dimmed">
                        {" "}
                        ({t("settings.retryDefault")})
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <CommerceActivationMode commerce={c} admin={admin} />
                  </Table.Td>
                  <Table.Td>
                    <ChargingRuleCell commerce={c} editable={admin} />
                  </Table.Td>
                  <Table.Td data-testid="commerce-webhook-url" style={{ overflowWrap: "anywhere", minWidth: 180 }}>
                    {c.webhookUrl ?? (
                      <Text span size="sm" c="dimmed">
                        {t("settings.noWebhookUrl")}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td className="nowrap">{dateTime(c.createdAt)}</Table.Td>
                  {admin && (
                    <Table.Td>
                      <Group gap={4} wrap="nowrap">
                        <Button size="compact-xs" variant="light" onClick={() => setEditing(c)}>
                          {t("settings.editRetry")}
                        </Button>
                        <Button size="compact-xs" variant="light" onClick={() => setEditingWebhook(c)} data-testid="edit-webhook-url">
                          {t("settings.editWebhookUrl")}
                        </Button>
                        <Button size="compact-xs" variant="light" onClick={() => reveal.mutate(c.code)}>
                          {t("settings.showSecret")}
                        </Button>
                        <Button size="compact-xs" variant="light" color="orange" onClick={() => askRotate(c.code)}>
                          {t("settings.rotateSecret")}
                        </Button>
                      </Group>
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollTable>
      </QueryState>
      {admin && (
        <Card withBorder>
          <Title order={2} size="h4" mb="sm">
            {t("settings.newCommerce")}
          </Title>
          <form onSubmit={form.onSubmit((v) => create.mutate(v))}>
            <Stack>
              {general && <Alert color="red">{general}</Alert>}
              <SimpleGrid cols={{ base: 1, sm: 3 }} data-testid="new-commerce-fields">
                <TextInput label={t("settings.code")} name="code" placeholder="76.123.456-0" {...form.getInputProps("code")} />
                <TextInput label={t("settings.commerceName")} name="name" {...form.getInputProps("name")} />
                <PasswordInput label={t("settings.commercePassword")} name="password" autoComplete="new-password" {...form.getInputProps("password")} />
              </SimpleGrid>
              <SimpleGrid cols={{ base: 1, sm: 2 }}>
                <TagsInput label={t("settings.channels")} {...form.getInputProps("channels")} />
                <MultiSelect
                  label={t("settings.paymentMethods")}
                  data={METHOD_IDS.map((id) => ({ value: String(id), label: methodName(t, id) }))}
                  {...form.getInputProps("paymentMethods")}
                />
              </SimpleGrid>
              <Switch label={t("settings.authorizationRequired")} {...form.getInputProps("authorizationRequired", { type: "checkbox" })} />
              <Group justify="flex-end">
                <Button type="submit" loading={create.isPending} data-testid="create-commerce">
                  {t("settings.createCommerce")}
                </Button>
              </Group>
            </Stack>
          </form>
        </Card>
      )}
      {editing && <RetryPolicyModal commerce={editing} onClose={() => setEditing(null)} />}
      {editingWebhook && <WebhookUrlModal commerce={editingWebhook} onClose={() => setEditingWebhook(null)} />}
      {rotating && (
        <RotateModal
          code={rotating}
          pending={rotate.isPending}
          onRotate={(overlapHours) => rotate.mutate({ code: rotating, overlapHours })}
          onClose={() => setRotating(null)}
        />
      )}
      {shown && <ShownOnce title={shown.title} values={shown.values} onClose={() => setShown(null)} />}
    </Stack>
  );
}

/** Where the commerce's charges due on a weekend or holiday go; admins change it in place. */
function ChargingRuleCell({ commerce, editable }: { commerce: Schemas["CommerceDto"]; editable: boolean }) {
  const { t } = useI18n();
  const invalidate = useInvalidate("commerces");
  const save = useMutation({
    mutationFn: (chargingRule: "NEXT" | "PREVIOUS") =>
      payload(api.PUT("/commerces/{code}/charging-rule", { params: { path: { code: commerce.code } }, body: { chargingRule } })),
    onSuccess: () => {
      invalidate();
      notifications.show({ color: "green", message: t("common.saved") });
    },
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
  const rules = ["NEXT", "PREVIOUS"].map((r) => ({ value: r, label: t(`settings.rule${r}` as Key) }));
  if (!editable) return <Text size="sm">{t(`settings.rule${commerce.chargingRule}` as Key)}</Text>;
  return (
    <Select
      size="xs"
      aria-label={t("settings.chargingRule")}
      data-testid={`charging-rule-${commerce.code}`}
      data={rules}
      value={commerce.chargingRule}
      allowDeselect={false}
      miw={170}
      disabled={save.isPending}
      onChange={(v) => (v === "NEXT" || v === "PREVIOUS") && v !== commerce.chargingRule && save.mutate(v)}
    />
  );
}

/** The business-day calendar: a year's holidays, and the one-off ones admins add or remove. */
function Calendar() {
  const { t, date } = useI18n();
  const session = useSession();
  const admin = session.can("admin");
  const [year, setYear] = useState(new Date().getFullYear());
  const holidays = useQuery({
    queryKey: ["holidays", year],
    queryFn: () => payload(api.GET("/calendar/holidays", { params: { query: { year } } })),
  });
  const queryClient = useQueryClient();
  const invalidate = () => void queryClient.invalidateQueries({ queryKey: ["holidays"] });
  const form = useForm({ initialValues: { date: "", name: "" } });
  const [dateValid, setDateValid] = useState(true);
  const [general, setGeneral] = useState<string | null>(null);
  const add = useMutation({
    mutationFn: (v: typeof form.values) => payload(api.POST("/calendar/holidays", { body: { date: v.date, name: v.name } })),
    onSuccess: () => {
      invalidate();
      form.reset();
      setGeneral(null);
      notifications.show({ color: "green", message: t("common.saved") });
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["date", "name"]);
      form.setErrors(mapped.fields);
      setGeneral(mapped.general);
    },
  });
  const remove = useMutation({
    mutationFn: (day: string) => payload(api.DELETE("/calendar/holidays/{date}", { params: { path: { date: day } } })),
    onSuccess: () => invalidate(),
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
  const askRemove = async (day: string) => {
    const ok = await confirmAction({
      title: t("settings.removeHoliday"),
      message: t("settings.removeHolidayConfirm", { date: date(day) }),
      confirm: t("settings.removeHoliday"),
      cancel: t("common.cancel"),
    });
    if (ok) remove.mutate(day);
  };
  const years = Array.from({ length: 7 }, (_, i) => String(new Date().getFullYear() - 2 + i));
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        {t("settings.holidaysHelp")}
      </Text>
      <Group align="end">
        <Select
          label={t("settings.year")}
          data-testid="holidays-year"
          data={years}
          value={String(year)}
          allowDeselect={false}
          onChange={(v) => v && setYear(Number(v))}
          w={120}
        />
      </Group>
      <Title order={2} size="h4">{t("settings.holidaysOf", { year })}</Title>
      <QueryState loading={holidays.isLoading} error={holidays.error}>
        <ScrollTable label={t("settings.holidaysOf", { year })} minWidth={480}>
          <Table striped data-testid="holidays-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>{t("settings.holidayDate")}</Table.Th>
                <Table.Th>{t("settings.holidayName")}</Table.Th>
                {admin && <Table.Th>{t("common.actions")}</Table.Th>}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {(holidays.data?.holidays ?? []).map((h) => (
                <Table.Tr key={`${h.date}-${h.name}`} data-holiday={h.date}>
                  <Table.Td>{date(h.date)}</Table.Td>
                  <Table.Td>
                    {h.name}{" "}
                    {h.added && (
                      <Badge size="xs" variant="light">
                        {t("settings.holidayAdded")}
                      </Badge>
                    )}
                  </Table.Td>
                  {admin && (
                    <Table.Td>
                      {h.added && (
                        <Button size="compact-xs" variant="light" color="red" onClick={() => void askRemove(h.date)}>
                          {t("settings.removeHoliday")}
                        </Button>
                      )}
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollTable>
      </QueryState>
      {admin && (
        <Card withBorder>
          <Title order={2} size="h4" mb="sm">
            {t("settings.addHoliday")}
          </Title>
          <form
            onSubmit={form.onSubmit((v) => {
              if (dateValid) add.mutate(v);
            })}
          >
            <Stack>
              {general && <Alert color="red">{general}</Alert>}
              <Group grow align="start">
                <DateField
                  label={t("settings.holidayDate")}
                  name="date"
                  value={form.values.date}
                  onChange={(iso) => form.setFieldValue("date", iso)}
                  onValidity={setDateValid}
                  error={form.errors.date as string | undefined}
                  testId="holiday-date"
                  width="auto"
                />
                <TextInput label={t("settings.holidayName")} name="name" maxLength={100} {...form.getInputProps("name")} />
              </Group>
              <Group justify="flex-end">
                <Button type="submit" loading={add.isPending} data-testid="add-holiday">
                  {t("settings.addHoliday")}
                </Button>
              </Group>
            </Stack>
          </form>
        </Card>
      )}
    </Stack>
  );
}

/** The rotation of a webhook secret, with how long the previous one keeps signing. */
function RotateModal({
  code,
  pending,
  onRotate,
  onClose,
}: {
  code: string;
  pending: boolean;
  onRotate: (overlapHours: number) => void;
  onClose: () => void;
}) {
  const { t } = useI18n();
  const [hours, setHours] = useState<number | string>(24);
  const valid = typeof hours === "number" && Number.isInteger(hours) && hours >= 0 && hours <= 720;
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={t("settings.rotateSecret")}>
      <Stack>
        <Text size="sm">{t("settings.rotateConfirm", { code })}</Text>
        <NumberInput
          label={t("settings.overlapHours")}
          description={t("settings.overlapHelp")}
          data-testid="overlap-hours"
          min={0}
          max={720}
          step={1}
          allowDecimal={false}
          allowNegative={false}
          clampBehavior="strict"
          value={hours}
          onChange={setHours}
        />
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            {t("common.cancel")}
          </Button>
          <Button color="orange" disabled={!valid} loading={pending} onClick={() => valid && onRotate(hours)} data-testid="confirm-rotate">
            {t("settings.rotateSecret")}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** The UF table the engine charges UF installments with, newest first, a page at a time. */
function UfValues() {
  const { t, lang, date } = useI18n();
  const [before, setBefore] = useState<string[]>([]);
  const cursor = before[before.length - 1];
  const values = useQuery({
    queryKey: ["uf", cursor ?? null],
    queryFn: () => payload(api.GET("/uf", { params: { query: { limit: 31, ...(cursor ? { before: cursor } : {}) } } })),
  });
  const d = values.data;
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        {t("settings.ufIntro")}
      </Text>
      <QueryState loading={values.isLoading} error={values.error}>
        {d && (
          <Stack>
            <Text fw={600} data-testid="uf-coverage">
              {d.total === 0 || !d.firstDate || !d.lastDate
                ? t("settings.ufEmpty")
                : t("settings.ufCoverage", { count: d.total, first: date(d.firstDate), last: date(d.lastDate) })}
            </Text>
            {d.items.length > 0 && (
              <Table striped data-testid="uf-table" maw={480}>
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>{t("settings.holidayDate")}</Table.Th>
                    <Table.Th ta="right">{t("settings.ufValue")}</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {d.items.map((v) => (
                    <Table.Tr key={v.date} data-uf={v.date}>
                      <Table.Td>{date(v.date)}</Table.Td>
                      <Table.Td ta="right" ff="monospace" className="nowrap">
                        {formatExactDecimal(v.value, lang)}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
            <Group>
              {before.length > 0 && (
                <Button variant="default" size="xs" onClick={() => setBefore(before.slice(0, -1))}>
                  {t("common.previous")}
                </Button>
              )}
              {d.nextBefore && (
                <Button variant="default" size="xs" onClick={() => setBefore([...before, d.nextBefore as string])}>
                  {t("settings.older")}
                </Button>
              )}
            </Group>
          </Stack>
        )}
      </QueryState>
    </Stack>
  );
}

function RetryPolicyModal({ commerce, onClose }: { commerce: Schemas["CommerceDto"]; onClose: () => void }) {
  const { t } = useI18n();
  const invalidate = useInvalidate("commerces");
  const [text, setText] = useState(commerce.retryPolicy.afterDays.join(","));
  const [error, setError] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (afterDays: number[] | null) =>
      payload(api.PUT("/commerces/{code}/retry-policy", { params: { path: { code: commerce.code } }, body: { afterDays } })),
    onSuccess: () => {
      invalidate();
      notifications.show({ color: "green", message: t("common.saved") });
      onClose();
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["afterDays"]);
      setError(mapped.fields.afterDays ?? mapped.general);
    },
  });
  const days = text
    .split(/[,\s]+/)
    .filter(Boolean)
    .map(Number);
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={`${t("settings.retryPolicy")} · ${commerce.name}`}>
      <Stack>
        <TextInput label={t("settings.retryDays")} value={text} onChange={(e) => setText(e.currentTarget.value)} error={error} />
        <Group justify="space-between">
          <Button variant="subtle" onClick={() => save.mutate(null)}>
            {t("settings.retryReset")}
          </Button>
          <Button onClick={() => save.mutate(days)} loading={save.isPending}>
            {t("common.save")}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

/** Sets or clears the commerce's webhook URL; the server checks it as a mandate's. */
function WebhookUrlModal({ commerce, onClose }: { commerce: Schemas["CommerceDto"]; onClose: () => void }) {
  const { t } = useI18n();
  const invalidate = useInvalidate("commerces");
  const [text, setText] = useState(commerce.webhookUrl ?? "");
  const [error, setError] = useState<string | null>(null);
  const save = useMutation({
    mutationFn: (webhookUrl: string | null) =>
      payload(api.PUT("/commerces/{code}/webhook-url", { params: { path: { code: commerce.code } }, body: { webhookUrl } })),
    onSuccess: () => {
      invalidate();
      notifications.show({ color: "green", message: t("common.saved") });
      onClose();
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["webhookUrl"]);
      setError(mapped.fields.webhookUrl ?? mapped.general);
    },
  });
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={`${t("settings.webhookUrl")} · ${commerce.name}`}>
      <Stack>
        <TextInput
          label={t("settings.webhookUrl")}
          description={t("settings.webhookUrlHelp")}
          placeholder="https://"
          value={text}
          onChange={(e) => setText(e.currentTarget.value)}
          error={error}
          data-testid="webhook-url-input"
        />
        <Group justify="space-between">
          <Button variant="subtle" onClick={() => save.mutate(null)} disabled={!commerce.webhookUrl}>
            {t("settings.clearWebhookUrl")}
          </Button>
          <Button onClick={() => save.mutate(text.trim() || null)} loading={save.isPending}>
            {t("common.save")}
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

function ApiKeys() {
  const { t, dateTime } = useI18n();
  const session = useSession();
  const admin = session.can("admin");
  const keys = useQuery({ queryKey: ["api-keys"], queryFn: () => payload(api.GET("/api-keys")) });
  const commerces = useCommerces();
  const invalidate = useInvalidate("api-keys");
  const [scope, setScope] = useState<string[]>([]);
  const [name, setName] = useState("");
  const [nameError, setNameError] = useState<string | null>(null);
  const [shown, setShown] = useState<{ title: string; values: [string, string][] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: () => payload(api.POST("/api-keys", { body: { commerces: scope, name: name.trim() || null } })),
    onSuccess: (r) => {
      invalidate();
      setScope([]);
      setName("");
      setNameError(null);
      setError(null);
      setShown({ title: t("settings.keyCreated"), values: [["x-api-key", r.apiKey]] });
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["name", "commerce"]);
      setNameError(mapped.fields.name ?? null);
      setError(mapped.general ?? mapped.fields.commerce ?? (mapped.fields.name ? null : errorText(e)));
    },
  });
  const revoke = useMutation({
    mutationFn: (prefix: string) => payload(api.DELETE("/api-keys/{prefix}", { params: { path: { prefix } } })),
    onSuccess: (r) => {
      invalidate();
      notifications.show({ color: "green", message: t("settings.keyRevoked", { prefix: r.prefix }) });
    },
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
  const askRevoke = async (prefix: string) => {
    const ok = await confirmAction({
      title: t("settings.revoke"),
      message: t("settings.revokeConfirm", { prefix }),
      confirm: t("settings.revoke"),
      cancel: t("common.cancel"),
    });
    if (ok) revoke.mutate(prefix);
  };
  return (
    <Stack>
      {admin && (
        <Card withBorder>
          <Title order={2} size="h4" mb="sm">
            {t("settings.newKey")}
          </Title>
          <Group align="end">
            <TextInput
              label={t("settings.keyName")}
              name="key-name"
              maxLength={100}
              value={name}
              onChange={(e) => setName(e.currentTarget.value)}
              error={nameError}
              w={260}
            />
            <MultiSelect
              label={t("settings.keyCommerces")}
              data={(commerces.data?.items ?? []).map((c) => ({ value: c.code, label: `${c.name} (${c.code})` }))}
              value={scope}
              onChange={setScope}
              error={error}
              w={400}
            />
            <Button onClick={() => create.mutate()} loading={create.isPending} data-testid="create-key">
              {t("settings.createKey")}
            </Button>
          </Group>
        </Card>
      )}
      <QueryState loading={keys.isLoading} error={keys.error}>
        <ScrollTable label={t("settings.apiKeys")} minWidth={760}>
        <Table striped data-testid="keys-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t("settings.prefix")}</Table.Th>
              <Table.Th>{t("common.name")}</Table.Th>
              <Table.Th>{t("settings.scope")}</Table.Th>
              <Table.Th>{t("common.state")}</Table.Th>
              <Table.Th>{t("settings.lastUsed")}</Table.Th>
              <Table.Th>{t("common.createdAt")}</Table.Th>
              {admin && <Table.Th>{t("common.actions")}</Table.Th>}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(keys.data?.items ?? []).map((k) => (
              <Table.Tr key={k.prefix + k.createdAt} data-key={k.prefix}>
                <Table.Td>
                  <Code>{k.prefix}…</Code>
                </Table.Td>
                <Table.Td>{k.name ?? "—"}</Table.Td>
                <Table.Td>{k.allCommerces ? t("settings.allCommerces") : k.commerces.join(", ")}</Table.Td>
                <Table.Td>
                  {k.revokedAt ? (
                    <Badge color="red" variant="light">
                      {t("settings.revoked")} {dateTime(k.revokedAt)}
                    </Badge>
                  ) : (
                    <Badge color="green" variant="light">
                      {t("settings.active")}
                    </Badge>
                  )}
                </Table.Td>
                <Table.Td data-testid="key-last-used">{k.lastUsedAt ? dateTime(k.lastUsedAt) : t("settings.neverUsed")}</Table.Td>
                <Table.Td>{dateTime(k.createdAt)}</Table.Td>
                  {admin && (
                    <Table.Td>
                      {!k.revokedAt && (
                        <Button size="compact-xs" color="red" variant="light" onClick={() => void askRevoke(k.prefix)}>
                          {t("settings.revoke")}
                        </Button>
                      )}
                    </Table.Td>
                  )}
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </ScrollTable>
      </QueryState>
      {shown && <ShownOnce title={shown.title} values={shown.values} onClose={() => setShown(null)} />}
    </Stack>
  );
}

function Environment() {
  const { t, date } = useI18n();
  const query = useQuery({ queryKey: ["environment"], queryFn: () => payload(api.GET("/environment")) });
  const d = query.data;
  return (
    <QueryState loading={query.isLoading} error={query.error}>
      {d && (
        <Stack>
          <Group gap="xl">
            <div>
              <Text size="xs" c="dimmed">
                {t("settings.environment")}
              </Text>
              <Text>{d.environment}</Text>
            </div>
            <div>
              <Text size="xs" c="dimmed">
                {t("settings.publicUrl")}
              </Text>
              <Text>{d.publicBaseUrl}</Text>
            </div>
            <div>
              <Text size="xs" c="dimmed">
                {t("settings.timeZone")}
              </Text>
              <Text>{d.timeZone}</Text>
            </div>
            <div>
              <Text size="xs" c="dimmed">
                {t("mandates.businessDate")}
              </Text>
              <Text>{date(d.today)}</Text>
            </div>
            <div>
              <Text size="xs" c="dimmed">
                {t("settings.version")}
              </Text>
              <Text>{d.version}</Text>
            </div>
          </Group>
          <Card withBorder>
            <Group justify="space-between" mb="xs">
              <Text fw={600}>
                {t("settings.jweKey")} <Code>kid {d.jwePublicKey.kid}</Code>
              </Text>
              <CopyButton value={d.jwePublicKey.publicKey}>
                {({ copied, copy }) => (
                  <Button size="xs" variant="default" onClick={copy} data-testid="copy-jwe-key">
                    {copied ? t("common.copied") : t("common.copy")}
                  </Button>
                )}
              </CopyButton>
            </Group>
            <Text size="sm" mb="xs">
              {t("settings.jweIntro")}
            </Text>
            <Code block tabIndex={0} data-testid="jwe-key">
              {d.jwePublicKey.publicKey}
            </Code>
          </Card>
          <LastBackup />
          <AuditChainCheck />
        </Stack>
      )}
    </QueryState>
  );
}

function TrustedRoots() {
  const { t, dateTime } = useI18n();
  const session = useSession();
  const admin = session.can("admin");
  const roots = useQuery({ queryKey: ["roots"], queryFn: () => payload(api.GET("/trusted-roots")) });
  const invalidate = useInvalidate("roots");
  const [pem, setPem] = useState("");
  const [error, setError] = useState<string | null>(null);
  const add = useMutation({
    mutationFn: () => payload(api.POST("/trusted-roots", { body: { pem } })),
    onSuccess: (r) => {
      invalidate();
      setPem("");
      setError(null);
      notifications.show({ color: "green", message: t("settings.rootsAdded", { count: r.added.length }) });
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["pem"]);
      setError(mapped.fields.pem ?? mapped.general);
    },
  });
  const remove = useMutation({
    mutationFn: (fingerprint: string) => payload(api.DELETE("/trusted-roots/{fingerprint}", { params: { path: { fingerprint } } })),
    onSuccess: () => {
      invalidate();
      notifications.show({ color: "green", message: t("settings.rootRemoved") });
    },
  });
  const askRemove = async (root: Schemas["TrustedRootDto"]) => {
    const ok = await confirmAction({
      title: t("settings.removeRoot"),
      message: t("settings.removeRootConfirm", { subject: root.subject }),
      confirm: t("settings.removeRoot"),
      cancel: t("common.cancel"),
    });
    if (ok) remove.mutate(root.fingerprint);
  };
  return (
    <Stack>
      <QueryState loading={roots.isLoading} error={roots.error}>
        {(roots.data?.items ?? []).length === 0 ? (
          <Text c="dimmed">{t("app.none")}</Text>
        ) : (
          <ScrollTable label={t("settings.roots")} minWidth={700}>
            <Table striped>
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("settings.subject")}</Table.Th>
                  <Table.Th>{t("settings.fingerprint")}</Table.Th>
                  <Table.Th>{t("common.createdAt")}</Table.Th>
                  {admin && <Table.Th>{t("common.actions")}</Table.Th>}
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {(roots.data?.items ?? []).map((r) => (
                  <Table.Tr key={r.fingerprint}>
                    <Table.Td>{r.subject}</Table.Td>
                    <Table.Td>
                      <Code>{r.fingerprint.slice(0, 16)}…</Code>
                    </Table.Td>
                    <Table.Td>{dateTime(r.addedAt)}</Table.Td>
                    {admin && (
                      <Table.Td>
                        <Button size="compact-xs" color="red" variant="light" onClick={() => void askRemove(r)}>
                          {t("settings.removeRoot")}
                        </Button>
                      </Table.Td>
                    )}
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        )}
      </QueryState>
      {admin && (
        <Card withBorder>
          <Title order={2} size="h4" mb="sm">
            {t("settings.addRoot")}
          </Title>
          <Textarea
            label={t("settings.rootPem")}
            placeholder="-----BEGIN CERTIFICATE-----"
            autosize
            minRows={4}
            value={pem}
            onChange={(e) => setPem(e.currentTarget.value)}
            error={error}
          />
          <Group justify="flex-end" mt="xs">
            <Button disabled={!pem.trim()} onClick={() => add.mutate()} loading={add.isPending}>
              {t("common.save")}
            </Button>
          </Group>
        </Card>
      )}
    </Stack>
  );
}

function Staff() {
  const { t, dateTime } = useI18n();
  const session = useSession();
  const staff = useQuery({ queryKey: ["staff"], queryFn: () => payload(api.GET("/staff")) });
  const invalidate = useInvalidate("staff");
  const [general, setGeneral] = useState<string | null>(null);
  const form = useForm({ initialValues: { email: "", password: "", role: "viewer" } });
  const create = useMutation({
    mutationFn: (v: typeof form.values) => payload(api.POST("/staff", { body: v })),
    onSuccess: (r) => {
      invalidate();
      form.reset();
      setGeneral(null);
      notifications.show({ color: "green", message: t("settings.staffCreated", { email: r.email }) });
    },
    onError: (e) => {
      const mapped = formErrors(e, {}, ["email", "password", "role"]);
      form.setErrors(mapped.fields);
      setGeneral(mapped.general);
    },
  });
  const update = useMutation({
    mutationFn: (v: { email: string; role?: string; disabled?: boolean }) =>
      payload(api.PUT("/staff/{email}", { params: { path: { email: v.email } }, body: { role: v.role ?? null, disabled: v.disabled ?? null } })),
    onSuccess: () => {
      invalidate();
      notifications.show({ color: "green", message: t("settings.staffUpdated") });
    },
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
  const [shown, setShown] = useState<{ title: string; values: [string, string][] } | null>(null);
  const reset = useMutation({
    mutationFn: (email: string) => payload(api.POST("/staff/{email}/password-reset", { params: { path: { email } } })),
    onSuccess: (r) => {
      invalidate();
      setShown({ title: t("settings.temporaryFor", { email: r.email }), values: [[t("settings.temporaryPassword"), r.temporaryPassword]] });
    },
    onError: (e) => notifications.show({ color: "red", message: formErrors(e).general ?? String(e) }),
  });
  const askReset = async (email: string) => {
    const ok = await confirmAction({
      title: t("settings.resetPassword"),
      message: t("settings.resetConfirm", { email }),
      confirm: t("settings.resetPassword"),
      cancel: t("common.cancel"),
    });
    if (ok) reset.mutate(email);
  };
  const askRole = async (email: string, from: string, to: string) => {
    const ok = await confirmAction({
      title: t("settings.roleChange"),
      message: t("settings.roleChangeConfirm", { email, from: t(`role.${from}` as Key), to: t(`role.${to}` as Key) }),
      confirm: t("settings.roleChange"),
      cancel: t("common.cancel"),
      danger: to !== "admin" && from === "admin",
    });
    if (ok) update.mutate({ email, role: to });
  };
  const askDisable = async (email: string) => {
    const ok = await confirmAction({
      title: t("settings.disable"),
      message: t("settings.disableConfirm", { email }),
      confirm: t("settings.disable"),
      cancel: t("common.cancel"),
    });
    if (ok) update.mutate({ email, disabled: true });
  };
  const roles = ["admin", "operator", "viewer"].map((r) => ({ value: r, label: t(`role.${r}` as Key) }));
  return (
    <Stack>
      <QueryState loading={staff.isLoading} error={staff.error}>
        <ScrollTable label={t("settings.staff")} minWidth={700}>
        <Table striped data-testid="staff-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t("common.email")}</Table.Th>
              <Table.Th>{t("settings.role")}</Table.Th>
              <Table.Th>{t("common.state")}</Table.Th>
              <Table.Th>{t("common.createdAt")}</Table.Th>
              <Table.Th>{t("common.actions")}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {(staff.data?.items ?? []).map((s) => {
              const self = s.email.toLowerCase() === session.info.email.toLowerCase();
              return (
                <Table.Tr key={s.email} data-staff={s.email}>
                  <Table.Td>
                    {s.email} {self && <Text span c="dimmed">{t("settings.you")}</Text>}
                    {s.passwordChangeRequired && (
                      <Badge size="xs" color="yellow" variant="light" ml={4}>
                        {t("settings.mustChange")}
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Select
                      size="xs"
                      data={roles}
                      value={s.role}
                      disabled={self}
                      allowDeselect={false}
                      aria-label={t("settings.roleChange")}
                      data-testid={`role-${s.email}`}
                      onChange={(role) => role && role !== s.role && void askRole(s.email, s.role, role)}
                      w={160}
                    />
                  </Table.Td>
                  <Table.Td>
                    {s.disabledAt ? (
                      <Badge color="red" variant="light">
                        {t("settings.disabled")}
                      </Badge>
                    ) : (
                      <Badge color="green" variant="light">
                        {t("settings.active")}
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>{dateTime(s.createdAt)}</Table.Td>
                  <Table.Td>
                    {!self && (
                      <Group gap={4} wrap="nowrap">
                        {s.disabledAt ? (
                          <Button size="compact-xs" variant="light" onClick={() => update.mutate({ email: s.email, disabled: false })}>
                            {t("settings.enable")}
                          </Button>
                        ) : (
                          <Button size="compact-xs" color="red" variant="light" onClick={() => void askDisable(s.email)}>
                            {t("settings.disable")}
                          </Button>
                        )}
                        <Button size="compact-xs" variant="light" onClick={() => void askReset(s.email)} data-testid={`reset-${s.email}`}>
                          {t("settings.resetPassword")}
                        </Button>
                      </Group>
                    )}
                  </Table.Td>
                </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
        </ScrollTable>
      </QueryState>
      <Card withBorder>
        <Title order={2} size="h4" mb="sm">
          {t("settings.newStaff")}
        </Title>
        <form onSubmit={form.onSubmit((v) => create.mutate(v))}>
          <Stack>
            {general && <Alert color="red">{general}</Alert>}
            <Group grow align="start">
              <TextInput label={t("common.email")} name="staff-email" {...form.getInputProps("email")} />
              <PasswordInput label={t("login.password")} name="staff-password" autoComplete="new-password" {...form.getInputProps("password")} />
              <Select label={t("settings.role")} data={roles} allowDeselect={false} name="staff-role" {...form.getInputProps("role")} />
            </Group>
            <Group justify="flex-end">
              <Button type="submit" loading={create.isPending} data-testid="create-staff">
                {t("settings.createStaff")}
              </Button>
            </Group>
          </Stack>
        </form>
      </Card>
      {shown && <ShownOnce title={shown.title} values={shown.values} onClose={() => setShown(null)} />}
    </Stack>
  );
}

/** Settings › Acquirers, once the environment is known (the simulation is sandbox-only). */
function AcquirersTab() {
  const query = useQuery({ queryKey: ["environment"], queryFn: () => payload(api.GET("/environment")) });
  return (
    <QueryState loading={query.isLoading} error={query.error}>
      {query.data && <Acquirers sandbox={query.data.environment === "sandbox"} />}
    </QueryState>
  );
}

export function Settings() {
  const { t } = useI18n();
  const session = useSession();
  const [params, setParams] = useSearchParams();
  const tab = params.get("tab") ?? "commerces";
  return (
    <Stack>
      <PageTitle title={t("settings.title")} />
      <Tabs value={tab} onChange={(v) => setParams(v ? { tab: v } : {})} keepMounted={false}>
        <Tabs.List>
          <Tabs.Tab value="commerces">{t("settings.commerces")}</Tabs.Tab>
          <Tabs.Tab value="acquirers">{t("acquirers.title")}</Tabs.Tab>
          <Tabs.Tab value="keys">{t("settings.apiKeys")}</Tabs.Tab>
          <Tabs.Tab value="environment">{t("settings.environment")}</Tabs.Tab>
          <Tabs.Tab value="roots">{t("settings.roots")}</Tabs.Tab>
          <Tabs.Tab value="staff">{t("settings.staff")}</Tabs.Tab>
          <Tabs.Tab value="calendar">{t("settings.calendar")}</Tabs.Tab>
          <Tabs.Tab value="uf">{t("settings.uf")}</Tabs.Tab>
          <Tabs.Tab value="account">{t("settings.account")}</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="commerces" pt="md">
          <Commerces />
        </Tabs.Panel>
        <Tabs.Panel value="acquirers" pt="md">
          {session.can("admin") ? <AcquirersTab /> : <Alert color="gray">{t("settings.adminOnly")}</Alert>}
        </Tabs.Panel>
        <Tabs.Panel value="keys" pt="md">
          <ApiKeys />
        </Tabs.Panel>
        <Tabs.Panel value="environment" pt="md">
          <Environment />
        </Tabs.Panel>
        <Tabs.Panel value="roots" pt="md">
          <TrustedRoots />
        </Tabs.Panel>
        <Tabs.Panel value="staff" pt="md">
          {session.can("admin") ? <Staff /> : <Alert color="gray">{t("settings.adminOnly")}</Alert>}
        </Tabs.Panel>
        <Tabs.Panel value="calendar" pt="md">
          <Calendar />
        </Tabs.Panel>
        <Tabs.Panel value="uf" pt="md">
          <UfValues />
        </Tabs.Panel>
        <Tabs.Panel value="account" pt="md">
          <Title order={2} size="h4" mb="sm">
            {t("settings.changePassword")}
          </Title>
          <PasswordChange />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
