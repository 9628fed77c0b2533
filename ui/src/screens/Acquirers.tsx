// Settings › Acquirers (CONTRACT 13): who moves each commerce's money, per rail. Cards go
// through Transbank (Oneclick Mall, Webpay Plus), bank debits through Fintoc, and the
// simulation only in a sandbox. Secrets are write-only: the server never answers them, so the
// form shows whether one is stored and keeps it when the field is left empty.
import { Alert, Badge, Button, Card, Group, PasswordInput, Select, SimpleGrid, Stack, Text, TextInput, Title } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, payload, type Schemas } from "../api/client";
import { useCommerces } from "../components/CommerceSelect";
import { confirmAction } from "../components/confirm";
import { QueryState } from "../components/QueryState";
import { useI18n } from "../lib/context";
import { formErrors } from "../lib/errors";
import type { Key } from "../lib/i18n";
import { FeeRules } from "./FeeRules";

type Rail = "cards" | "bank";
type Acquirer = Schemas["AcquirerDto"];

const KINDS: Record<Rail, string[]> = {
  cards: ["transbank", "simulated"],
  bank: ["fintoc", "simulated"],
};

const FIELDS = ["kind", "mallCode", "childCode", "webpayCode", "responseCodeLevel", "publicKey", "baseUrl", "secret", "webhookSecret"] as const;
type Field = (typeof FIELDS)[number];

function term(acquirer: Acquirer | undefined, name: string): string {
  const terms = (acquirer?.terms ?? {}) as Record<string, unknown>;
  return typeof terms[name] === "string" ? (terms[name] as string) : "";
}

/** One rail's setting: what is stored, and the form that replaces it. */
function RailForm({ code, rail, current, sandbox }: { code: string; rail: Rail; current?: Acquirer; sandbox: boolean }) {
  const { t, dateTime } = useI18n();
  const client = useQueryClient();
  const kinds = KINDS[rail].filter((k) => sandbox || k !== "simulated");
  const [values, setValues] = useState<Record<Field, string>>({
    kind: current?.kind ?? kinds[0],
    mallCode: term(current, "mallCode"),
    childCode: term(current, "childCode"),
    webpayCode: term(current, "webpayCode"),
    responseCodeLevel: String((current?.terms as Record<string, unknown> | undefined)?.responseCodeLevel ?? 1),
    publicKey: term(current, "publicKey"),
    baseUrl: current?.baseUrl ?? "",
    secret: "",
    webhookSecret: "",
  });
  const [errors, setErrors] = useState<Partial<Record<Field, string>>>({});
  const [general, setGeneral] = useState<string | null>(null);
  const set = (field: Field) => (value: string) => setValues((v) => ({ ...v, [field]: value }));
  const done = (message: string) => {
    client.invalidateQueries({ queryKey: ["acquirers", code] });
    client.invalidateQueries({ queryKey: ["dashboard"] });
    setErrors({});
    setGeneral(null);
    setValues((v) => ({ ...v, secret: "", webhookSecret: "" }));
    notifications.show({ color: "green", message });
  };
  const save = useMutation({
    mutationFn: () => {
      const kind = values.kind;
      const body: Schemas["AcquirerRequest"] = { kind };
      if (kind === "transbank") {
        body.mallCode = values.mallCode;
        body.childCode = values.childCode;
        body.webpayCode = values.webpayCode;
        body.responseCodeLevel = Number(values.responseCodeLevel);
      }
      if (kind === "fintoc") {
        body.publicKey = values.publicKey;
        if (values.webhookSecret) body.webhookSecret = values.webhookSecret;
      }
      if (kind !== "simulated") {
        if (values.baseUrl.trim()) body.baseUrl = values.baseUrl.trim();
        if (values.secret) body.secret = values.secret;
      }
      return payload(api.PUT("/commerces/{code}/acquirers/{rail}", { params: { path: { code, rail } }, body }));
    },
    onSuccess: () => done(t("common.saved")),
    onError: (e) => {
      const mapped = formErrors(e, {}, [...FIELDS]);
      setErrors(mapped.fields as Partial<Record<Field, string>>);
      setGeneral(mapped.general);
    },
  });
  const remove = useMutation({
    mutationFn: () => payload(api.DELETE("/commerces/{code}/acquirers/{rail}", { params: { path: { code, rail } } })),
    onSuccess: () => done(t("acquirers.removed")),
    onError: (e) => setGeneral(formErrors(e).general),
  });
  const askRemove = async () => {
    const ok = await confirmAction({
      title: t("acquirers.remove"),
      message: t(sandbox ? "acquirers.removeSandbox" : "acquirers.removeProduction"),
      confirm: t("acquirers.remove"),
      cancel: t("common.cancel"),
    });
    if (ok) remove.mutate();
  };
  const kind = values.kind;
  const id = (field: Field) => `acq-${rail}-${field}`;
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Group justify="space-between">
          <Title order={2} size="h5">{t(`acquirers.rail.${rail}` as Key)}</Title>
          {current ? (
            <Badge color={current.kind === "simulated" ? "gray" : "green"}>{t(`acquirers.kind.${current.kind}` as Key)}</Badge>
          ) : (
            <Badge color={sandbox ? "gray" : "red"}>{t(sandbox ? "acquirers.defaultSimulated" : "acquirers.notConfigured")}</Badge>
          )}
        </Group>
        {general && (
          <Alert color="red" role="alert">
            {general}
          </Alert>
        )}
        <Select
          id={id("kind")}
          label={t("acquirers.kindLabel")}
          data={kinds.map((k) => ({ value: k, label: t(`acquirers.kind.${k}` as Key) }))}
          value={kind}
          onChange={(v) => v && set("kind")(v)}
          allowDeselect={false}
          error={errors.kind}
        />
        {kind === "transbank" && (
          <>
            <TextInput id={id("mallCode")} label={t("acquirers.mallCode")} value={values.mallCode} onChange={(e) => set("mallCode")(e.currentTarget.value)} error={errors.mallCode} inputMode="numeric" />
            <TextInput id={id("childCode")} label={t("acquirers.childCode")} value={values.childCode} onChange={(e) => set("childCode")(e.currentTarget.value)} error={errors.childCode} inputMode="numeric" />
            <TextInput id={id("webpayCode")} label={t("acquirers.webpayCode")} value={values.webpayCode} onChange={(e) => set("webpayCode")(e.currentTarget.value)} error={errors.webpayCode} inputMode="numeric" />
            <Select
              id={id("responseCodeLevel")}
              label={t("acquirers.responseCodeLevel")}
              description={t("acquirers.responseCodeLevelHint")}
              data={[
                { value: "1", label: t("acquirers.responseCodeLevel1") },
                { value: "2", label: t("acquirers.responseCodeLevel2") },
              ]}
              value={values.responseCodeLevel}
              onChange={(v) => v && set("responseCodeLevel")(v)}
              allowDeselect={false}
              error={errors.responseCodeLevel}
            />
          </>
        )}
        {kind === "fintoc" && (
          <TextInput id={id("publicKey")} label={t("acquirers.publicKey")} value={values.publicKey} onChange={(e) => set("publicKey")(e.currentTarget.value)} error={errors.publicKey} />
        )}
        {kind !== "simulated" && (
          <>
            <PasswordInput
              id={id("secret")}
              label={t(kind === "transbank" ? "acquirers.transbankSecret" : "acquirers.fintocSecret")}
              description={current?.secretSet && current.kind === kind ? t("acquirers.secretKept") : undefined}
              value={values.secret}
              onChange={(e) => set("secret")(e.currentTarget.value)}
              error={errors.secret}
              autoComplete="off"
            />
            {kind === "fintoc" && (
              <PasswordInput
                id={id("webhookSecret")}
                label={t("acquirers.webhookSecret")}
                description={t(current?.webhookSecretSet && current.kind === kind ? "acquirers.webhookSecretKept" : "acquirers.webhookSecretHint")}
                value={values.webhookSecret}
                onChange={(e) => set("webhookSecret")(e.currentTarget.value)}
                error={errors.webhookSecret}
                autoComplete="off"
              />
            )}
            <TextInput
              id={id("baseUrl")}
              label={t("acquirers.baseUrl")}
              description={t("acquirers.baseUrlHint")}
              value={values.baseUrl}
              onChange={(e) => set("baseUrl")(e.currentTarget.value)}
              error={errors.baseUrl}
            />
          </>
        )}
        <Group justify="space-between">
          {current ? (
            <Button variant="subtle" color="red" onClick={askRemove} loading={remove.isPending}>
              {t("acquirers.remove")}
            </Button>
          ) : (
            <span />
          )}
          <Button onClick={() => save.mutate()} loading={save.isPending}>
            {t("common.save")}
          </Button>
        </Group>
        {current && (
          <Text size="xs" c="dimmed">
            {t("acquirers.updatedAt", { at: dateTime(current.updatedAt) })}
          </Text>
        )}
      </Stack>
    </Card>
  );
}

/** Settings › Acquirers: admins choose a commerce and set each rail. */
export function Acquirers({ sandbox }: { sandbox: boolean }) {
  const { t } = useI18n();
  const commerces = useCommerces();
  const items = commerces.data?.items ?? [];
  const [chosen, setChosen] = useState<string | null>(null);
  const code = chosen ?? items[0]?.code ?? null;
  const acquirers = useQuery({
    queryKey: ["acquirers", code],
    queryFn: () => payload(api.GET("/commerces/{code}/acquirers", { params: { path: { code: code ?? "" } } })),
    enabled: code !== null,
  });
  const byRail = (rail: Rail) => acquirers.data?.acquirers.find((a) => a.rail === rail);
  return (
    <Stack>
      <Text size="sm" c="dimmed">
        {t(sandbox ? "acquirers.introSandbox" : "acquirers.introProduction")}
      </Text>
      <Select
        label={t("common.commerce")}
        data={items.map((c) => ({ value: c.code, label: `${c.name} (${c.code})` }))}
        value={code}
        onChange={setChosen}
        allowDeselect={false}
        maw={360}
      />
      <QueryState loading={acquirers.isLoading} error={acquirers.error} retry={() => acquirers.refetch()}>
        {code && acquirers.data && (
          <SimpleGrid cols={{ base: 1, md: 2 }} key={code}>
            {(["cards", "bank"] as Rail[]).map((rail) => (
              <RailForm key={`${code}-${rail}-${byRail(rail)?.updatedAt ?? "none"}`} code={code} rail={rail} current={byRail(rail)} sandbox={sandbox} />
            ))}
          </SimpleGrid>
        )}
      </QueryState>
      {code && <FeeRules key={`fees-${code}`} code={code} />}
    </Stack>
  );
}
