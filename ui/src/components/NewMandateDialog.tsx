// "Nuevo mandato": creates a mandate for a commerce's customer from the back office. The body is
// the merchant API's POST /mandate, checked by the same rules on the server; each refused field
// is named beside its input. Once created, the customer's Magic Link is shown to copy.
import {
  ActionIcon,
  Alert,
  Anchor,
  Button,
  CopyButton,
  Group,
  Modal,
  NumberInput,
  SegmentedControl,
  Select,
  SimpleGrid,
  Stack,
  Text,
  TextInput,
  Tooltip,
} from "@mantine/core";
import { useDebouncedValue, useMediaQuery } from "@mantine/hooks";
import { notifications } from "@mantine/notifications";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { useI18n, useSession } from "../lib/context";
import { parseAmount } from "../lib/money";
import { formatRut } from "../lib/rut";
import { DateField } from "./DateField";
import { creationErrors, initialCommerce, useCommerceChoices } from "./NewCustomerDialog";

const TYPES = ["DYNAMIC", "PERMANENT", "SUBSCRIPTION", "ONEPAY"] as const;
type MandateType = (typeof TYPES)[number];
const PERIODICITIES = ["WEEKLY", "MONTHLY", "BIMONTHLY", "QUARTERLY", "SEMIANNUAL", "ANNUAL"];
/** UF is `CLF` on the wire. */
const CURRENCIES = [
  { value: "CLP", label: "CLP" },
  { value: "CLF", label: "UF" },
];

/** A customer to start the form with (from that customer's page). */
export interface MandateCustomer {
  internalUserId: string;
  commerce: string;
  label: string;
}

interface Row {
  id: string;
  amount: string;
  due: string;
}

/** Where each request path's refusal is shown. */
const PATHS: Record<string, string> = {
  customer: "customer",
  "customer.internalUserId": "customer",
  "customer.userId": "customer",
  "mandate.id": "mandateId",
  "mandate.name": "name",
  "mandate.detail": "detail",
  "mandate.type": "type",
  "mandate.activation": "activation",
  "mandate.charges": "end",
  "mandate.charges.currencyId": "currency",
  "mandate.charges.amount": "amount",
  "mandate.charges.maxAmount": "maxAmount",
  "mandate.charges.periodicity": "periodicity",
  "mandate.charges.startDate": "startDate",
  "mandate.charges.count": "count",
  "mandate.charges.endDate": "endDate",
  "mandate.charges.dueDate": "dueDate",
  installments: "installments",
  commerce: "commerce",
};
const KNOWN = [...new Set(Object.values(PATHS))];

function newMandateId(): string {
  return `M-${Date.now().toString(36).toUpperCase()}`;
}

/** The "Nuevo mandato" button (operators and admins) and its dialog. */
export function NewMandateButton({ commerce, customer }: { commerce?: string | null; customer?: MandateCustomer }) {
  const { t } = useI18n();
  const session = useSession();
  const [opened, setOpened] = useState(false);
  if (!session.can("operator")) return null;
  return (
    <>
      <Button onClick={() => setOpened(true)} data-testid="new-mandate">
        {t("create.newMandate")}
      </Button>
      {opened && <NewMandateDialog commerce={customer?.commerce ?? commerce ?? null} customer={customer} onClose={() => setOpened(false)} />}
    </>
  );
}

/** The customers of a commerce matching what is typed, as choices. */
export function useCustomerChoices(commerce: string | null, search: string, preset?: MandateCustomer) {
  const [debounced] = useDebouncedValue(search.trim(), 250);
  const query = useQuery({
    queryKey: ["customers", "choices", commerce, debounced],
    queryFn: () =>
      payload(api.GET("/customers", { params: { query: { commerce: commerce ?? undefined, q: debounced || undefined, limit: 20 } } })),
    enabled: commerce !== null,
  });
  const choices = (query.data?.items ?? []).map((c) => {
    const p = c.customer.personalInformation;
    const name = [p.firstName, p.lastName, p.secondLastName].filter(Boolean).join(" ");
    return { value: c.customer.internalUserId, label: `${name} (${formatRut(c.customer.identificationDocument.number)})` };
  });
  if (preset && !choices.some((c) => c.value === preset.internalUserId)) {
    choices.unshift({ value: preset.internalUserId, label: preset.label });
  }
  return choices;
}

export function NewMandateDialog({
  commerce,
  customer,
  onClose,
}: {
  commerce: string | null;
  customer?: MandateCustomer;
  onClose: () => void;
}) {
  const { t, lang, label } = useI18n();
  const queryClient = useQueryClient();
  // On a phone the four types stand one under another, each whole.
  const narrow = useMediaQuery("(max-width: 480px)");
  const commerceChoices = useCommerceChoices();
  const [chosenCommerce, setChosenCommerce] = useState<string | null>(null);
  const code = chosenCommerce ?? initialCommerce(commerce, commerceChoices);
  const [customerId, setCustomerId] = useState<string | null>(customer?.internalUserId ?? null);
  const [customerSearch, setCustomerSearch] = useState("");
  const customerChoices = useCustomerChoices(code, customerSearch, customer);
  const today = useQuery({ queryKey: ["business-today"], queryFn: () => payload(api.GET("/charging")), staleTime: 60_000 }).data?.today ?? "";

  const [mandateId, setMandateId] = useState(newMandateId);
  const [name, setName] = useState("");
  const [detail, setDetail] = useState("");
  const [type, setType] = useState<MandateType>("DYNAMIC");
  const [currency, setCurrency] = useState("CLP");
  const [amount, setAmount] = useState("");
  const [maxAmount, setMaxAmount] = useState("");
  const [periodicity, setPeriodicity] = useState<string | null>("MONTHLY");
  const [startDate, setStartDate] = useState("");
  const [endBy, setEndBy] = useState<"count" | "endDate">("count");
  const [count, setCount] = useState<number | string>(12);
  const [endDate, setEndDate] = useState("");
  const [dueDate, setDueDate] = useState("");
  const [activation, setActivation] = useState<string | null>("");
  const [rows, setRows] = useState<Row[]>([{ id: "1", amount: "", due: "" }]);
  // Date fields whose text is not a date yet: nothing is sent until each is one.
  const [badDates, setBadDates] = useState<Record<string, boolean>>({});
  const dateValidity = (key: string) => (valid: boolean) => setBadDates((all) => ({ ...all, [key]: !valid }));

  const [errors, setErrors] = useState<Record<string, string>>({});
  const [general, setGeneral] = useState<string | null>(null);
  const [created, setCreated] = useState<Schemas["StaffMandateCreated"] | null>(null);

  const money = (text: string) => parseAmount(text, lang) ?? Number.NaN;
  const body = () => {
    const charges: Record<string, unknown> = { currencyId: currency };
    let installments: Record<string, unknown>[] | undefined;
    if (type === "DYNAMIC") {
      if (maxAmount.trim() !== "") charges.maxAmount = money(maxAmount);
      installments = rows.map((r) => ({ id: r.id, amount: money(r.amount), currencyId: currency, installmentDueDate: r.due || today }));
    } else {
      charges.amount = money(amount);
      if (type === "ONEPAY") {
        charges.dueDate = dueDate || today;
      } else {
        charges.periodicity = periodicity;
        charges.startDate = startDate || today;
        if (type === "SUBSCRIPTION") {
          if (endBy === "count") charges.count = typeof count === "number" ? count : Number(count) || undefined;
          else charges.endDate = endDate || undefined;
        }
      }
    }
    return {
      commerce: code ?? undefined,
      customer: { internalUserId: customerId ?? undefined },
      mandate: {
        id: mandateId.trim(),
        type,
        name,
        detail: detail.trim() === "" ? undefined : detail,
        charges,
        activation: activation || undefined,
      },
      installments,
    } as Schemas["StaffMandateRequest"];
  };
  const mutation = useMutation({
    mutationFn: () => payload(api.POST("/mandates", { body: body() })),
    onSuccess: (result) => {
      void queryClient.invalidateQueries({ queryKey: ["mandates"] });
      void queryClient.invalidateQueries({ queryKey: ["customer"] });
      void queryClient.invalidateQueries({ queryKey: ["dashboard"] });
      notifications.show({ color: "green", message: t("create.mandateCreated", { id: result.mandate.mandate.id }) });
      setCreated(result);
    },
    onError: (e) => {
      const known = [...KNOWN, ...rows.flatMap((_, i) => [`installments[${i}].id`, `installments[${i}].amount`, `installments[${i}].installmentDueDate`, `installments[${i}].currencyId`])];
      const mapped = creationErrors(e, PATHS, known, t);
      setErrors(mapped.fields);
      setGeneral(mapped.general);
    },
  });
  const setRow = (i: number, key: keyof Row, value: string) => setRows((all) => all.map((r, j) => (j === i ? { ...r, [key]: value } : r)));
  const currencyLabel = currency === "CLF" ? "UF" : currency;

  if (created) {
    const m = created.mandate.mandate;
    return (
      <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={t("create.mandateCreated", { id: m.id })} size="lg">
        <Stack data-testid="mandate-created">
          <TextInput
            label={t("create.magicLink")}
            description={t("create.magicLinkHelp")}
            value={m.magicLink}
            readOnly
            data-testid="magic-link"
            onFocus={(e) => e.currentTarget.select()}
            rightSection={
              <CopyButton value={m.magicLink}>
                {({ copied, copy }) => (
                  <Tooltip label={copied ? t("create.copied") : t("create.copy")} withArrow>
                    <ActionIcon variant="subtle" onClick={copy} aria-label={t("create.copy")} data-testid="copy-magic-link" color={copied ? "teal" : "gray"}>
                      {copied ? "✓" : "⧉"}
                    </ActionIcon>
                  </Tooltip>
                )}
              </CopyButton>
            }
          />
          <Group justify="space-between">
            <Anchor component={Link} to={`/mandates/${m.internalId}`} onClick={onClose} data-testid="open-created-mandate">
              {t("create.openMandate")}
            </Anchor>
            <Button onClick={onClose}>{t("app.close")}</Button>
          </Group>
        </Stack>
      </Modal>
    );
  }

  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={t("create.newMandate")} size="xl">
      {/* Not a <form>: Enter in a date field takes the date, it does not send a stale one. */}
      <div>
        <Stack>
          {general && (
            <Alert color="red" data-testid="mandate-error">
              {general}
            </Alert>
          )}
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <Select
              label={t("common.commerce")}
              placeholder={t("create.pickCommerce")}
              data={commerceChoices}
              value={code}
              onChange={(v) => {
                setChosenCommerce(v);
                if (!customer) setCustomerId(null);
              }}
              allowDeselect={false}
              required
              error={errors.commerce}
              data-testid="mandate-commerce"
            />
            <Select
              label={t("create.customer")}
              placeholder={code ? t("create.customerSearch") : t("create.pickCommerceFirst")}
              data={customerChoices}
              value={customerId}
              onChange={setCustomerId}
              searchable
              searchValue={customerSearch}
              onSearchChange={setCustomerSearch}
              filter={({ options }) => options}
              nothingFoundMessage={t("app.none")}
              disabled={!code}
              required
              error={errors.customer}
              data-testid="mandate-customer"
            />
            <TextInput label={t("create.mandateId")} value={mandateId} onChange={(e) => setMandateId(e.currentTarget.value)} required error={errors.mandateId} data-testid="mandate-id" />
            <TextInput label={t("create.mandateName")} value={name} onChange={(e) => setName(e.currentTarget.value)} required error={errors.name} data-testid="mandate-name" />
          </SimpleGrid>
          <TextInput label={t("create.detail")} value={detail} onChange={(e) => setDetail(e.currentTarget.value)} error={errors.detail} />
          <Group align="end" gap="md">
            <Stack gap={4}>
              <Text size="sm" fw={500} id="mandate-type-label">
                {t("common.type")}
              </Text>
              <SegmentedControl
                aria-labelledby="mandate-type-label"
                data={TYPES.map((v) => ({ value: v, label: label(v) }))}
                value={type}
                onChange={(v) => setType(v as MandateType)}
                orientation={narrow ? "vertical" : "horizontal"}
                data-testid="mandate-type"
              />
            </Stack>
            <Stack gap={4}>
              <Text size="sm" fw={500} id="mandate-currency-label">
                {t("create.currency")}
              </Text>
              <SegmentedControl aria-labelledby="mandate-currency-label" data={CURRENCIES} value={currency} onChange={setCurrency} data-testid="mandate-currency" />
            </Stack>
            <Select
              label={t("create.activation")}
              data={[{ value: "", label: t("create.activationDefault") }, ...["DIRECT", "SIGNATURE"].map((v) => ({ value: v, label: label(v) }))]}
              value={activation}
              onChange={setActivation}
              allowDeselect={false}
              error={errors.activation}
              w={200}
            />
          </Group>
          {errors.type && <Text c="red" size="sm">{errors.type}</Text>}
          {errors.currency && <Text c="red" size="sm">{errors.currency}</Text>}

          {type !== "DYNAMIC" && (
            <SimpleGrid cols={{ base: 1, sm: 3 }}>
              <TextInput
                label={`${t("common.amount")} (${currencyLabel})`}
                value={amount}
                onChange={(e) => setAmount(e.currentTarget.value)}
                required
                inputMode="decimal"
                error={errors.amount}
                data-testid="mandate-amount"
              />
              {type === "ONEPAY" ? (
                <DateField
                  label={t("create.dueDate")}
                  value={dueDate || today}
                  onChange={setDueDate}
                  onValidity={dateValidity("dueDate")}
                  error={errors.dueDate}
                  testId="mandate-due-date"
                  width="auto"
                />
              ) : (
                <>
                  <Select
                    label={t("create.periodicity")}
                    data={PERIODICITIES.map((v) => ({ value: v, label: label(v) }))}
                    value={periodicity}
                    onChange={setPeriodicity}
                    allowDeselect={false}
                    error={errors.periodicity}
                    data-testid="mandate-periodicity"
                  />
                  <DateField
                    label={t("create.startDate")}
                    value={startDate || today}
                    onChange={setStartDate}
                    onValidity={dateValidity("startDate")}
                    error={errors.startDate}
                    testId="mandate-start-date"
                    width="auto"
                  />
                </>
              )}
            </SimpleGrid>
          )}
          {type === "SUBSCRIPTION" && (
            <Group align="end">
              <Stack gap={4}>
                <Text size="sm" fw={500} id="mandate-end-label">
                  {t("create.end")}
                </Text>
                <SegmentedControl
                  aria-labelledby="mandate-end-label"
                  data={[
                    { value: "count", label: t("create.byCount") },
                    { value: "endDate", label: t("create.byEndDate") },
                  ]}
                  value={endBy}
                  onChange={(v) => setEndBy(v as "count" | "endDate")}
                />
              </Stack>
              {endBy === "count" ? (
                <NumberInput label={t("create.count")} value={count} onChange={setCount} min={1} max={1200} allowDecimal={false} error={errors.count ?? errors.end} w={160} data-testid="mandate-count" />
              ) : (
                <DateField label={t("create.endDate")} value={endDate} onChange={setEndDate} onValidity={dateValidity("endDate")} error={errors.endDate ?? errors.end} testId="mandate-end-date" />
              )}
            </Group>
          )}
          {type === "DYNAMIC" && (
            <Stack gap="xs">
              <TextInput
                label={`${t("create.maxAmount")} (${currencyLabel})`}
                value={maxAmount}
                onChange={(e) => setMaxAmount(e.currentTarget.value)}
                inputMode="decimal"
                error={errors.maxAmount}
                w={{ base: "100%", sm: 280 }}
              />
              <Text fw={600} size="sm">
                {t("create.installments")}
              </Text>
              {errors.installments && (
                <Text c="red" size="sm">
                  {errors.installments}
                </Text>
              )}
              {rows.map((r, i) => (
                <Group key={i} align="start" gap="sm" wrap="wrap" data-testid="mandate-installment-row">
                  <TextInput label={t("create.installmentId")} value={r.id} onChange={(e) => setRow(i, "id", e.currentTarget.value)} error={errors[`installments[${i}].id`]} w={140} />
                  <TextInput
                    label={`${t("common.amount")} (${currencyLabel})`}
                    value={r.amount}
                    onChange={(e) => setRow(i, "amount", e.currentTarget.value)}
                    inputMode="decimal"
                    error={errors[`installments[${i}].amount`] ?? errors[`installments[${i}].currencyId`]}
                    w={180}
                    data-testid="installment-amount"
                  />
                  <DateField
                    label={t("create.dueDate")}
                    value={r.due || today}
                    onChange={(iso) => setRow(i, "due", iso)}
                    onValidity={dateValidity(`row${i}`)}
                    error={errors[`installments[${i}].installmentDueDate`]}
                    testId="installment-due-date"
                  />
                  {rows.length > 1 && (
                    <Button
                      variant="subtle"
                      color="red"
                      mt={24}
                      onClick={() => {
                        setRows((all) => all.filter((_, j) => j !== i));
                        setBadDates((all) => ({ ...all, [`row${i}`]: false }));
                      }}
                    >
                      {t("create.removeInstallment", { n: i + 1 })}
                    </Button>
                  )}
                </Group>
              ))}
              <Group>
                <Button variant="subtle" onClick={() => setRows((all) => [...all, { id: String(all.length + 1), amount: "", due: "" }])} data-testid="add-installment-row">
                  {t("create.addInstallment")}
                </Button>
              </Group>
            </Stack>
          )}
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button
              onClick={() => {
                if (!Object.values(badDates).some(Boolean)) mutation.mutate();
              }}
              loading={mutation.isPending}
              data-testid="mandate-submit"
            >
              {t("create.submitMandate")}
            </Button>
          </Group>
        </Stack>
      </div>
    </Modal>
  );
}
