// Settings › Acquirers › fees (CONTRACT 13): what each commerce's acquirer charges per payment
// method (a commission percent, a fixed amount in pesos, and IVA on both). The ledger records
// an approval's fee from this rule when the acquirer reports none (Transbank and Fintoc never
// do); a method without a rule of its own uses the simulated acquirer's rates.
import { Alert, Badge, Button, Card, Checkbox, Group, SimpleGrid, Stack, Text, TextInput, Title } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, payload, type Schemas } from "../api/client";
import { QueryState } from "../components/QueryState";
import { useI18n } from "../lib/context";
import { formErrors } from "../lib/errors";
import type { Key } from "../lib/i18n";

type Rule = Schemas["FeeRuleDto"];
const FIELDS = ["commissionPercent", "fixed"] as const;
type Field = (typeof FIELDS)[number];

/** One method's rule and the form that changes it. */
function RuleForm({ code, rule }: { code: string; rule: Rule }) {
  const { t, lang } = useI18n();
  const client = useQueryClient();
  // The percentage is shown with the language's decimal mark (`1,2` in Spanish); either is sent as a point.
  const [values, setValues] = useState({
    commissionPercent: lang === "es" ? rule.commissionPercent.replace(".", ",") : rule.commissionPercent,
    fixed: rule.fixed,
    iva: rule.iva,
  });
  const [errors, setErrors] = useState<Partial<Record<Field, string>>>({});
  const [general, setGeneral] = useState<string | null>(null);
  const path = { params: { path: { code, methodId: rule.methodId } } };
  const done = (message: string) => {
    client.invalidateQueries({ queryKey: ["fees", code] });
    setErrors({});
    setGeneral(null);
    notifications.show({ color: "green", message });
  };
  const failed = (e: unknown) => {
    const mapped = formErrors(e, {}, [...FIELDS]);
    setErrors(mapped.fields as Partial<Record<Field, string>>);
    setGeneral(mapped.general);
  };
  const save = useMutation({
    mutationFn: () =>
      payload(
        api.PUT("/commerces/{code}/fees/{methodId}", {
          ...path,
          body: { commissionPercent: values.commissionPercent.replace(",", "."), fixed: values.fixed, iva: values.iva },
        }),
      ),
    onSuccess: () => done(t("common.saved")),
    onError: failed,
  });
  const reset = useMutation({
    mutationFn: () => payload(api.DELETE("/commerces/{code}/fees/{methodId}", path)),
    onSuccess: () => done(t("fees.resetDone")),
    onError: failed,
  });
  const id = (field: string) => `fee-${rule.methodId}-${field}`;
  return (
    <Card withBorder padding="sm" data-testid={`fee-${rule.methodId}`}>
      <Stack gap={6}>
        <Group justify="space-between" wrap="nowrap" align="flex-start">
          <Text fw={600} size="sm">
            {t(`paymentMethod.${rule.methodName}` as Key)}
          </Text>
          <Badge color={rule.own ? "blue" : "gray"} variant="light" style={{ flexShrink: 0 }}>
            {t(rule.own ? "fees.own" : "fees.default")}
          </Badge>
        </Group>
        {general && (
          <Alert color="red" role="alert">
            {general}
          </Alert>
        )}
        <Group grow align="flex-start">
          <TextInput
            id={id("commission")}
            label={t("fees.commission")}
            value={values.commissionPercent}
            onChange={(e) => {
              // Read now: React clears the event's currentTarget before the updater runs.
              const commissionPercent = e.currentTarget.value;
              setValues((v) => ({ ...v, commissionPercent }));
            }}
            error={errors.commissionPercent}
            inputMode="decimal"
            rightSection="%"
          />
          <TextInput
            id={id("fixed")}
            label={t("fees.fixed")}
            value={values.fixed}
            onChange={(e) => {
              const fixed = e.currentTarget.value;
              setValues((v) => ({ ...v, fixed }));
            }}
            error={errors.fixed}
            inputMode="numeric"
            leftSection="$"
          />
        </Group>
        <Checkbox
          id={id("iva")}
          label={t("fees.iva")}
          checked={values.iva}
          onChange={(e) => {
            const iva = e.currentTarget.checked;
            setValues((v) => ({ ...v, iva }));
          }}
        />
        <Group justify="space-between">
          {rule.own ? (
            <Button variant="subtle" size="xs" onClick={() => reset.mutate()} loading={reset.isPending}>
              {t("fees.reset")}
            </Button>
          ) : (
            <span />
          )}
          <Button size="xs" onClick={() => save.mutate()} loading={save.isPending}>
            {t("common.save")}
          </Button>
        </Group>
      </Stack>
    </Card>
  );
}

/** The commerce's fee rule for every payment method. */
export function FeeRules({ code }: { code: string }) {
  const { t } = useI18n();
  const fees = useQuery({
    queryKey: ["fees", code],
    queryFn: () => payload(api.GET("/commerces/{code}/fees", { params: { path: { code } } })),
  });
  return (
    <Stack gap="xs">
      <Title order={2} size="h5">{t("fees.title")}</Title>
      <Text size="sm" c="dimmed">
        {t("fees.intro")}
      </Text>
      <QueryState loading={fees.isLoading} error={fees.error} retry={() => fees.refetch()}>
        {fees.data && (
          <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
            {fees.data.rules.map((rule) => (
              <RuleForm key={`${rule.methodId}-${rule.updatedAt ?? "default"}-${rule.commissionPercent}`} code={code} rule={rule} />
            ))}
          </SimpleGrid>
        )}
      </QueryState>
    </Stack>
  );
}
