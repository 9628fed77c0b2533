// "Nuevo proceso de firma": starts a signature process for a commerce from the back office. The
// body is the merchant API's POST /signature (the PDFs in base64, within its 16 MiB limit), and
// the server checks it with the same rules; each refused field is named beside its input. Every
// signatory signs each document on a page added at the end (LAST_PAGE).
import { Alert, Button, FileInput, Group, Modal, NumberInput, Select, SimpleGrid, Stack, Text, TextInput } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { useNavigate } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { useI18n, useSession } from "../lib/context";
import { formatBytes } from "../lib/format";
import { useCommerces } from "./CommerceSelect";
import { creationErrors, initialCommerce, useCommerceChoices } from "./NewCustomerDialog";
import { useCustomerChoices } from "./NewMandateDialog";

const KINDS = ["FES", "FEA", "FAO"] as const;
/** The merchant API's limits: 10 MiB a document; the body's 16 MiB holds 12 MiB in base64. */
const MAX_DOCUMENT = 10 * 1024 * 1024;
const MAX_TOTAL = 12 * 1024 * 1024;

interface Signer {
  customer: string | null;
  search: string;
  kind: string;
  order: number | string;
}

/** The "Nuevo proceso de firma" button (operators and admins) and its dialog. */
export function NewSignatureButton({ commerce }: { commerce?: string | null }) {
  const { t } = useI18n();
  const session = useSession();
  const [opened, setOpened] = useState(false);
  if (!session.can("operator")) return null;
  return (
    <>
      <Button onClick={() => setOpened(true)} data-testid="new-signature">
        {t("create.newSignature")}
      </Button>
      {opened && <NewSignatureDialog commerce={commerce ?? null} onClose={() => setOpened(false)} />}
    </>
  );
}

/** A file's bytes in base64, as the API takes a PDF. */
function base64Of(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1] ?? "");
    reader.onerror = () => reject(reader.error ?? new Error("unreadable file"));
    reader.readAsDataURL(file);
  });
}

/** Where each request path's refusal is shown: `sig0.customer`, `doc1`... */
function placeOf(path: string): string {
  const signatory = /^signatories\[(\d+)\](?:\.(\w+))?$/.exec(path);
  if (signatory) {
    const field = signatory[2];
    const key = field === "order" ? "order" : field === "type" ? "kind" : "customer";
    return `sig${signatory[1]}.${key}`;
  }
  const document = /^documents\[(\d+)\]/.exec(path);
  if (document) return `doc${document[1]}`;
  const simple: Record<string, string> = {
    "process.processName": "processName",
    "process.externalProcessId": "externalProcessId",
    "process.expirationDays": "expirationDays",
    process: "processName",
    signatories: "signatories",
    documents: "documents",
    "urls.callback": "callback",
    "urls.webhook": "webhook",
    urls: "webhook",
    commerce: "commerce",
  };
  return simple[path] ?? path;
}

function SignerRow({
  index,
  signer,
  commerce,
  errors,
  onChange,
  onRemove,
}: {
  index: number;
  signer: Signer;
  commerce: string | null;
  errors: Record<string, string>;
  onChange: (next: Signer) => void;
  onRemove?: () => void;
}) {
  const { t } = useI18n();
  const choices = useCustomerChoices(commerce, signer.search);
  return (
    <Group align="start" gap="sm" wrap="wrap" data-testid="signer-row">
      <Select
        label={t("create.signatory", { n: index + 1 })}
        placeholder={commerce ? t("create.customerSearch") : t("create.pickCommerceFirst")}
        data={choices}
        value={signer.customer}
        onChange={(v) => onChange({ ...signer, customer: v })}
        searchable
        searchValue={signer.search}
        onSearchChange={(v) => onChange({ ...signer, search: v })}
        filter={({ options }) => options}
        nothingFoundMessage={t("app.none")}
        disabled={!commerce}
        required
        error={errors[`sig${index}.customer`]}
        w={{ base: "100%", sm: 300 }}
        data-testid="signer-customer"
      />
      <Select
        label={t("create.signatureType")}
        data={KINDS.map((k) => ({ value: k, label: t(`create.${k}`) }))}
        value={signer.kind}
        onChange={(v) => onChange({ ...signer, kind: v ?? "FES" })}
        allowDeselect={false}
        error={errors[`sig${index}.kind`]}
        w={230}
      />
      <NumberInput
        label={t("create.order")}
        value={signer.order}
        onChange={(v) => onChange({ ...signer, order: v })}
        min={1}
        max={1000}
        allowDecimal={false}
        error={errors[`sig${index}.order`]}
        w={90}
      />
      {onRemove && (
        <Button variant="subtle" color="red" mt={24} onClick={onRemove}>
          {t("create.removeSignatory", { n: index + 1 })}
        </Button>
      )}
    </Group>
  );
}

export function NewSignatureDialog({ commerce, onClose }: { commerce: string | null; onClose: () => void }) {
  const { t, lang } = useI18n();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const commerces = useCommerces();
  const choices = useCommerceChoices();
  const [chosen, setChosen] = useState<string | null>(null);
  const code = chosen ?? initialCommerce(commerce, choices);
  const [processName, setProcessName] = useState("");
  const [externalProcessId, setExternalProcessId] = useState("");
  const [expirationDays, setExpirationDays] = useState<number | string>(30);
  const [signers, setSigners] = useState<Signer[]>([{ customer: null, search: "", kind: "FES", order: 1 }]);
  const [files, setFiles] = useState<File[]>([]);
  const [callback, setCallback] = useState("");
  // The commerce's webhook URL, until the staff member writes another.
  const [webhook, setWebhook] = useState<string | null>(null);
  const commerceWebhook = (commerces.data?.items ?? []).find((c) => c.code === code)?.webhookUrl ?? "";
  const webhookValue = webhook ?? commerceWebhook;
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [general, setGeneral] = useState<string | null>(null);

  const tooLarge = files.find((f) => f.size > MAX_DOCUMENT);
  const notPdf = files.find((f) => !/\.pdf$/i.test(f.name) && f.type !== "application/pdf");
  const total = files.reduce((sum, f) => sum + f.size, 0);
  const fileProblem = notPdf
    ? t("create.notPdf", { name: notPdf.name })
    : tooLarge
      ? t("create.tooLarge", { name: tooLarge.name })
      : total > MAX_TOTAL
        ? t("create.totalTooLarge")
        : null;

  const mutation = useMutation({
    mutationFn: async () => {
      const contents = await Promise.all(files.map(base64Of));
      const refs = signers.map((s) => ({ internalUserId: s.customer ?? "" }));
      const body = {
        commerce: code ?? undefined,
        process: {
          processName,
          externalProcessId: externalProcessId.trim() === "" ? undefined : externalProcessId.trim(),
          expirationDays: typeof expirationDays === "number" ? expirationDays : Number(expirationDays) || undefined,
        },
        signatories: signers.map((s, i) => ({ ...refs[i], order: typeof s.order === "number" ? s.order : Number(s.order) || 1, type: s.kind })),
        documents: files.map((f, i) => ({
          documentName: f.name,
          contentBase64: contents[i],
          signatureData: refs.map((r) => ({ signatory: r, mode: "LAST_PAGE" })),
        })),
        urls: { callback: callback.trim(), webhook: webhookValue.trim() },
      } as unknown as Schemas["StaffSignatureRequest"];
      return payload(api.POST("/signatures", { body }));
    },
    onSuccess: (created) => {
      void queryClient.invalidateQueries({ queryKey: ["signatures"] });
      notifications.show({ color: "green", message: t("create.signatureCreated") });
      onClose();
      void navigate(`/signatures/${created.signature.process.internalId}`);
    },
    onError: (e) => {
      const paths: Record<string, string> = {};
      const known = new Set(["commerce", "processName", "externalProcessId", "expirationDays", "signatories", "documents", "callback", "webhook"]);
      signers.forEach((_, i) => ["customer", "kind", "order"].forEach((f) => known.add(`sig${i}.${f}`)));
      files.forEach((_, i) => known.add(`doc${i}`));
      const raw = e as { errors?: { field: string }[] };
      for (const fe of raw.errors ?? []) paths[fe.field] = placeOf(fe.field);
      const mapped = creationErrors(e, paths, [...known], t);
      setErrors(mapped.fields);
      setGeneral(mapped.general);
    },
  });
  const documentErrors = files
    .map((f, i) => (errors[`doc${i}`] ? `${f.name}: ${errors[`doc${i}`]}` : null))
    .filter(Boolean)
    .join("; ");
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} title={t("create.newSignature")} size="xl">
      <form
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          if (!fileProblem) mutation.mutate();
        }}
      >
        <Stack>
          {general && (
            <Alert color="red" data-testid="signature-error">
              {general}
            </Alert>
          )}
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <Select
              label={t("common.commerce")}
              placeholder={t("create.pickCommerce")}
              data={choices}
              value={code}
              onChange={(v) => {
                setChosen(v);
                setSigners((all) => all.map((s) => ({ ...s, customer: null, search: "" })));
              }}
              allowDeselect={false}
              required
              error={errors.commerce}
              data-testid="signature-commerce"
            />
            <TextInput label={t("create.processName")} value={processName} onChange={(e) => setProcessName(e.currentTarget.value)} required error={errors.processName} data-testid="signature-name" />
            <TextInput label={t("create.externalProcessId")} value={externalProcessId} onChange={(e) => setExternalProcessId(e.currentTarget.value)} error={errors.externalProcessId} />
            <NumberInput
              label={t("create.expirationDays")}
              value={expirationDays}
              onChange={setExpirationDays}
              min={1}
              max={365}
              allowDecimal={false}
              error={errors.expirationDays}
              w={160}
            />
          </SimpleGrid>
          <Text fw={600} size="sm">
            {t("create.signatories")}
          </Text>
          {errors.signatories && (
            <Text c="red" size="sm">
              {errors.signatories}
            </Text>
          )}
          {signers.map((s, i) => (
            <SignerRow
              key={i}
              index={i}
              signer={s}
              commerce={code}
              errors={errors}
              onChange={(next) => setSigners((all) => all.map((x, j) => (j === i ? next : x)))}
              onRemove={signers.length > 1 ? () => setSigners((all) => all.filter((_, j) => j !== i)) : undefined}
            />
          ))}
          <Group>
            <Button
              variant="subtle"
              onClick={() => setSigners((all) => [...all, { customer: null, search: "", kind: "FES", order: all.length + 1 }])}
              data-testid="add-signer"
            >
              {t("create.addSignatory")}
            </Button>
          </Group>
          <FileInput
            label={t("create.documents")}
            description={t("create.documentsHint")}
            multiple
            accept="application/pdf,.pdf"
            value={files}
            onChange={setFiles}
            clearable
            required
            error={fileProblem ?? (documentErrors || errors.documents)}
            data-testid="signature-files"
          />
          {files.length > 0 && (
            <Text size="xs" c="dimmed">
              {files.map((f) => `${f.name} (${formatBytes(f.size, lang)})`).join(", ")}
            </Text>
          )}
          <SimpleGrid cols={{ base: 1, sm: 2 }}>
            <TextInput
              label={t("create.callbackUrl")}
              placeholder="https://"
              value={callback}
              onChange={(e) => setCallback(e.currentTarget.value)}
              required
              type="url"
              error={errors.callback}
              data-testid="signature-callback"
            />
            <TextInput
              label={t("create.webhookUrl")}
              placeholder="https://"
              value={webhookValue}
              onChange={(e) => setWebhook(e.currentTarget.value)}
              required
              type="url"
              error={errors.webhook}
              data-testid="signature-webhook"
            />
          </SimpleGrid>
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              {t("common.cancel")}
            </Button>
            <Button type="submit" loading={mutation.isPending} disabled={fileProblem !== null} data-testid="signature-submit">
              {t("create.submitSignature")}
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
