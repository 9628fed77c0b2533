// Electronic signature processes (CONTRACT 8): the list of every commerce's processes, its
// filters kept in the address (so Back and a shared link restore them), and one process with
// its signatories, sandbox codes, documents, sealed PDF, the mandate it activates and its
// audit trail, whose hash chain staff can re-verify on the server.
import {
  Alert,
  Anchor,
  Badge,
  Button,
  Card,
  Code,
  CopyButton,
  Group,
  Select,
  SimpleGrid,
  Stack,
  Table,
  Text,
  TextInput,
  Title,
  Tooltip,
} from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { notifications } from "@mantine/notifications";
import { useEffect, useState, type ReactNode } from "react";
import { Link, useNavigate, useParams, useSearchParams } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { CommerceSelect } from "../components/CommerceSelect";
import { QueryState } from "../components/QueryState";
import { useI18n, useSession } from "../lib/context";
import type { Key } from "../lib/i18n";
import { errorText } from "../lib/errors";
import { PageTitle } from "../components/Layout";
import { formatRut } from "../lib/rut";
import { formatBytes } from "../lib/format";
import { DateField } from "../components/DateField";
import { ScrollTable } from "../components/ScrollTable";
import { NewSignatureButton } from "../components/NewSignatureDialog";
import { confirmAction } from "../components/confirm";

const STATES = ["PENDING", "IN_PROGRESS", "COMPLETED", "CANCELLED", "REJECTED", "EXPIRED"] as const;
type ProcessState = (typeof STATES)[number];

const COLORS: Record<string, string> = {
  PENDING: "gray",
  IN_PROGRESS: "blue",
  COMPLETED: "green",
  CANCELLED: "dark",
  REJECTED: "red",
  EXPIRED: "orange",
  SIGNED: "green",
  ACTIVE: "green",
};

/** A process's or signatory's state in words, as a badge. */
function SignatureBadge({ name }: { name: string }) {
  const { label } = useI18n();
  return (
    <Badge
      color={COLORS[name] ?? "gray"}
      variant="light"
      data-state={name}
      styles={{ root: { maxWidth: "none", overflow: "visible" }, label: { overflow: "visible" } }}
    >
      {label(name)}
    </Badge>
  );
}

/** Where a staff download of a process's document lives (the session cookie authorizes it). */
function documentUrl(process: string, document: string, version: "original" | "sealed"): string {
  return `/admin/api/signatures/${encodeURIComponent(process)}/documents/${encodeURIComponent(document)}/${version}`;
}

// ----- the list -----

/** The list's filters as they travel in the address. */
const FILTERS = ["q", "commerce", "state", "from", "to"] as const;

export function Signatures() {
  const { t, label, dateTime, number } = useI18n();
  const [params, setParams] = useSearchParams();
  const [text, setText] = useState(params.get("q") ?? "");
  const [debounced] = useDebouncedValue(text.trim(), 300);
  const filters = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) || undefined])) as Record<
    (typeof FILTERS)[number],
    string | undefined
  >;
  // The cursors of the pages walked through, so that Back and "previous" return exactly.
  const cursors = (params.get("pages") ?? "").split(",").filter(Boolean);
  const cursor = cursors[cursors.length - 1];

  /** Changes filters (and starts again at the first page); typing replaces the entry. */
  const update = (changes: Record<string, string | null | undefined>, replace = false) => {
    setParams(
      (current) => {
        const next = new URLSearchParams(current);
        for (const [name, value] of Object.entries(changes)) {
          if (value) next.set(name, value);
          else next.delete(name);
        }
        if (!("pages" in changes)) next.delete("pages");
        return next;
      },
      { replace },
    );
  };

  useEffect(() => {
    if (debounced !== (params.get("q") ?? "")) update({ q: debounced }, true);
    // Only the typed text drives this effect; the address is read here, not watched.
  }, [debounced]);
  // Back to an address with another search shows that search in the box.
  const addressQ = params.get("q") ?? "";
  useEffect(() => {
    setText((current) => (current.trim() === addressQ ? current : addressQ));
  }, [addressQ]);

  const query = useQuery({
    queryKey: ["signatures", filters, cursor],
    queryFn: () =>
      payload(
        api.GET("/signatures", {
          params: {
            query: { ...filters, state: filters.state as ProcessState | undefined, cursor, limit: 50 },
          },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const page = query.data;
  const items = page?.items ?? [];
  const total = page?.total ?? 0;
  return (
    <Stack>
      <PageTitle title={t("signatures.title")} />
      <Group align="end" gap="sm">
        <TextInput
          label={t("common.search")}
          placeholder={t("signatures.searchHint")}
          value={text}
          onChange={(e) => setText(e.currentTarget.value)}
          w={{ base: "100%", sm: 340 }}
          maxLength={200}
          data-testid="signature-search"
        />
        <CommerceSelect value={filters.commerce ?? null} onChange={(v) => update({ commerce: v })} />
        <NewSignatureButton commerce={filters.commerce ?? null} />
        <Select
          label={t("common.state")}
          placeholder={t("common.all")}
          clearable
          data={STATES.map((s) => ({ value: s, label: label(s) }))}
          value={filters.state ?? null}
          onChange={(v) => update({ state: v })}
          w={180}
          data-testid="signature-state"
        />
        <DateField
          label={t("common.from")}
          value={filters.from ?? ""}
          onChange={(iso) => update({ from: iso })}
          testId="signature-from"
        />
        <DateField
          label={t("common.to")}
          value={filters.to ?? ""}
          onChange={(iso) => update({ to: iso })}
          testId="signature-to"
        />
        <Button
          variant="subtle"
          onClick={() => {
            setText("");
            setParams({});
          }}
        >
          {t("common.clear")}
        </Button>
      </Group>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        <Text size="sm" c="dimmed" data-testid="signature-count">
          {total === 1 ? t("signatures.countOne") : t("signatures.count", { count: number(total) })}
        </Text>
        {items.length === 0 ? (
          <Text c="dimmed">{t("app.none")}</Text>
        ) : (
          <ScrollTable label={t("signatures.title")} minWidth={900}>
            <Table striped highlightOnHover data-testid="signatures-table">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>{t("signatures.process")}</Table.Th>
                  <Table.Th>{t("common.commerce")}</Table.Th>
                  <Table.Th>{t("signatures.documents")}</Table.Th>
                  <Table.Th ta="right">{t("signatures.signed")}</Table.Th>
                  <Table.Th>{t("common.state")}</Table.Th>
                  <Table.Th>{t("common.createdAt")}</Table.Th>
                  <Table.Th>{t("signatures.expires")}</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {items.map((p) => (
                  <Table.Tr key={p.internalId}>
                    <Table.Td>
                      <Anchor component={Link} to={`/signatures/${p.internalId}`} size="sm" ff="monospace">
                        {p.internalId}
                      </Anchor>
                      <Text size="xs" c="dimmed">
                        {p.processName}
                      </Text>
                    </Table.Td>
                    <Table.Td className="nowrap">{formatRut(p.commerce)}</Table.Td>
                    <Table.Td>{p.documentNames.join(", ")}</Table.Td>
                    <Table.Td ta="right">
                      {p.signed}/{p.signatories}
                    </Table.Td>
                    <Table.Td>
                      <SignatureBadge name={p.state.name} />
                    </Table.Td>
                    <Table.Td>{dateTime(p.createdAt)}</Table.Td>
                    <Table.Td>{dateTime(p.expiresAt)}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </ScrollTable>
        )}
        <Group justify="flex-end" gap="xs">
          <Text size="sm" c="dimmed">
            {t("common.page", { n: cursors.length + 1 })}
          </Text>
          <Button
            size="xs"
            variant="default"
            disabled={cursors.length === 0}
            onClick={() => update({ pages: cursors.slice(0, -1).join(",") || null })}
          >
            {t("common.previous")}
          </Button>
          <Button
            size="xs"
            variant="default"
            disabled={!page?.nextCursor}
            onClick={() => page?.nextCursor && update({ pages: [...cursors, page.nextCursor].join(",") })}
          >
            {t("common.next")}
          </Button>
        </Group>
      </QueryState>
    </Stack>
  );
}

// ----- one process -----

function Field({ name, children }: { name: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed">
        {name}
      </Text>
      <Text size="sm" component="div">
        {children ?? "—"}
      </Text>
    </div>
  );
}

/** A SHA-256 in full, in a line that wraps rather than widening the page. */
function Hash({ value, testId }: { value: string; testId?: string }) {
  return (
    <Code style={{ wordBreak: "break-all" }} data-testid={testId}>
      {value}
    </Code>
  );
}

function SandboxCode({ signatory }: { signatory: Schemas["StaffSignatoryDto"] }) {
  const { t, dateTime } = useI18n();
  const code = signatory.sandboxCode;
  if (!code) return <Text size="sm" c="dimmed">{t("signatures.codeNone")}</Text>;
  return (
    <Stack gap={2} align="flex-start">
      <Code fz="lg" fw={700} style={{ letterSpacing: "0.1em" }} data-testid={`code-${signatory.internalId}`}>
        {code.code}
      </Code>
      <Text size="xs" c="dimmed">
        {code.used ? t("signatures.codeUsed") : t("signatures.codeExpires", { at: dateTime(code.expiresAt) })}
      </Text>
    </Stack>
  );
}

function Signatories({ detail }: { detail: Schemas["StaffSignatureDetail"] }) {
  const { t, dateTime } = useI18n();
  const { info } = useSession();
  const showCodes = detail.sandbox && detail.codesVisible;
  return (
    <Card withBorder>
      <Title order={2} size="h4" mb="xs">
        {t("signatures.signatories")}
      </Title>
      {detail.sandbox && !detail.codesVisible && (
        <Alert color="gray" mb="xs" data-testid="codes-hidden">
          {t("signatures.codeHidden", { role: t(`role.${info.role}` as Key) })}
        </Alert>
      )}
      {showCodes && (
        <Text size="xs" c="dimmed" mb="xs">
          {t("signatures.codeHelp")}
        </Text>
      )}
      <Stack gap="sm" data-testid="signatories">
        {detail.signatories.map((s) => (
          <Card key={s.internalId} withBorder padding="sm" data-testid={`signatory-${s.internalId}`}>
            <SimpleGrid cols={{ base: 2, md: showCodes ? 7 : 6 }} spacing="sm">
              <Field name={t("signatures.order")}>{s.order}</Field>
              <Field name={t("common.name")}>{s.name}</Field>
              <Field name={t("signatures.rut")}>
                <span className="nowrap">{formatRut(s.rut)}</span>
              </Field>
              <Field name={t("common.email")}>
                <Text size="sm" style={{ wordBreak: "break-all" }}>
                  {s.email}
                </Text>
              </Field>
              <Field name={t("signatures.kind")}>{s.kind}</Field>
              <Field name={t("common.state")}>
                <SignatureBadge name={s.state.name} />
                {s.signedAt && (
                  <Text size="xs" c="dimmed">
                    {t("signatures.signedAt")} {dateTime(s.signedAt)}
                  </Text>
                )}
                {s.rejectedAt && (
                  <Text size="xs" c="dimmed">
                    {t("signatures.rejectedAt")} {dateTime(s.rejectedAt)}
                    {s.rejectionReason ? ` · ${s.rejectionReason}` : ""}
                  </Text>
                )}
              </Field>
              {showCodes && (
                <Field name={t("signatures.code")}>
                  {s.state.name === "PENDING" ? <SandboxCode signatory={s} /> : "—"}
                </Field>
              )}
            </SimpleGrid>
            <SigningLink detail={detail} signatory={s} />
          </Card>
        ))}
      </Stack>
    </Card>
  );
}

/**
 * A signatory's own signing link, to copy and hand to that person only (it is their
 * credential): operators and admins, while the process is open and the signatory has not acted.
 */
function SigningLink({ detail, signatory }: { detail: Schemas["StaffSignatureDetail"]; signatory: Schemas["StaffSignatoryDto"] }) {
  const { t } = useI18n();
  const session = useSession();
  const url = detail.signature.signatories.find((x) => x.internalId === signatory.internalId)?.signingUrl;
  const open = ["PENDING", "IN_PROGRESS"].includes(detail.signature.process.state.name);
  if (!url || !open || !session.can("operator") || signatory.state.name !== "PENDING") return null;
  return (
    <Group gap="xs" mt="xs" wrap="nowrap">
      <CopyButton value={url}>
        {({ copied, copy }) => (
          <Button
            size="xs"
            variant="light"
            color={copied ? "teal" : "blue"}
            onClick={() => {
              copy();
              notifications.show({ color: "green", message: t("create.linkCopied") });
            }}
            data-testid="copy-signing-link"
            data-url={url}
            aria-label={t("create.copyLink", { name: signatory.name })}
          >
            {copied ? t("create.copied") : t("create.copyLinkShort")}
          </Button>
        )}
      </CopyButton>
    </Group>
  );
}

/** Cancels an open process after confirmation (operators and admins). */
function CancelProcess({ detail }: { detail: Schemas["StaffSignatureDetail"] }) {
  const { t } = useI18n();
  const session = useSession();
  const queryClient = useQueryClient();
  const id = detail.signature.process.internalId;
  const mutation = useMutation({
    mutationFn: () => payload(api.POST("/signatures/{internalId}/cancel", { params: { path: { internalId: id } }, body: {} })),
    onSuccess: (next) => {
      queryClient.setQueryData(["signature", id], next);
      void queryClient.invalidateQueries({ queryKey: ["signatures"] });
      void queryClient.invalidateQueries({ queryKey: ["events"] });
      notifications.show({ color: "green", message: t("create.processCancelled") });
    },
    onError: (e) => {
      notifications.show({ color: "red", message: errorText(e) });
      void queryClient.invalidateQueries({ queryKey: ["signature", id] });
    },
  });
  const open = ["PENDING", "IN_PROGRESS"].includes(detail.signature.process.state.name);
  if (!open || !session.can("operator")) return null;
  return (
    <Button
      color="red"
      variant="light"
      loading={mutation.isPending}
      data-testid="cancel-process"
      onClick={async () => {
        const sure = await confirmAction({
          title: t("create.cancelTitle"),
          message: t("create.cancelMessage"),
          confirm: t("create.cancelConfirm"),
          cancel: t("create.keep"),
        });
        if (sure) mutation.mutate();
      }}
    >
      {t("create.cancelProcess")}
    </Button>
  );
}

function Documents({ detail }: { detail: Schemas["StaffSignatureDetail"] }) {
  const { t, lang, number } = useI18n();
  const id = detail.signature.process.internalId;
  return (
    <Card withBorder>
      <Title order={2} size="h4" mb="xs">
        {t("signatures.documents")}
      </Title>
      <Stack gap="md">
        {detail.documents.map((d) => (
          <SimpleGrid key={d.internalId} cols={{ base: 1, md: 2 }} data-testid={`document-${d.internalId}`}>
            <Stack gap={4}>
              <Group gap="xs">
                <Text fw={600}>{d.documentName}</Text>
                <Badge variant="outline">{t("signatures.original")}</Badge>
              </Group>
              <Text size="sm">
                {t("signatures.pages")}: {number(d.pageCount)} · {t("signatures.size")}: {formatBytes(d.sizeBytes, lang)}
              </Text>
              <Hash value={d.sha256} />
              <Anchor href={documentUrl(id, d.internalId, "original")} size="sm" data-testid="download-original">
                {t("signatures.download")}
              </Anchor>
            </Stack>
            <Stack gap={4}>
              <Badge variant="light" color={d.sealed ? "green" : "gray"} w="fit-content">
                {t("signatures.sealed")}
              </Badge>
              {d.sealed ? (
                <>
                  <Text size="sm" data-testid="sealed-pages">
                    {t("signatures.pages")}: {number(d.sealed.pageCount)} · {t("signatures.size")}:{" "}
                    {formatBytes(d.sealed.sizeBytes, lang)}
                  </Text>
                  <Hash value={d.sealed.sha256} testId="sealed-sha256" />
                  <Anchor href={documentUrl(id, d.internalId, "sealed")} size="sm" data-testid="download-sealed">
                    {t("signatures.download")}
                  </Anchor>
                </>
              ) : (
                <Text size="sm" c="dimmed">
                  {t("signatures.notSealed")}
                </Text>
              )}
            </Stack>
          </SimpleGrid>
        ))}
      </Stack>
    </Card>
  );
}

function ChainCheck({ internalId }: { internalId: string }) {
  const { t, dateTime } = useI18n();
  const check = useQuery({
    queryKey: ["signature-chain", internalId],
    queryFn: () => payload(api.GET("/signatures/{internalId}/audit/verify", { params: { path: { internalId } } })),
    enabled: false,
    gcTime: 0,
  });
  const d = check.data;
  return (
    <Stack gap="xs">
      <Group>
        <Text size="sm">{t("signatures.auditHelp")}</Text>
        <Button
          size="xs"
          variant="default"
          loading={check.isFetching}
          onClick={() => void check.refetch()}
          data-testid="verify-signature-chain"
        >
          {t("signatures.verify")}
        </Button>
      </Group>
      {check.error && !check.isFetching && <Alert color="red">{t("app.error", { message: errorText(check.error) })}</Alert>}
      {d && !check.isFetching && (
        <Alert color={d.valid ? "green" : "red"} data-testid="signature-chain-result">
          {d.valid
            ? t("signatures.chainIntact", { count: d.records, at: dateTime(d.checkedAt) })
            : t("signatures.chainBroken", { position: d.brokenAt ?? 1, count: d.records, at: dateTime(d.checkedAt) })}
        </Alert>
      )}
    </Stack>
  );
}

function AuditTrail({ detail }: { detail: Schemas["StaffSignatureDetail"] }) {
  const { t, dateTime } = useI18n();
  const id = detail.signature.process.internalId;
  const actor = (a: Schemas["ActorDto"]) => {
    const kind = t(`signatures.actor.${a.kind}` as Key);
    if (a.kind === "SIGNATORY") return a.name ?? kind;
    return a.name ? `${kind} · ${a.name}` : kind;
  };
  return (
    <Card withBorder>
      <Title order={2} size="h4" mb="xs">
        {t("signatures.audit")}
      </Title>
      <ChainCheck internalId={id} />
      <ScrollTable label={t("signatures.audit")} minWidth={820}>
        <Table data-testid="audit-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>#</Table.Th>
              <Table.Th>{t("common.date")}</Table.Th>
              <Table.Th>{t("signatures.action")}</Table.Th>
              <Table.Th>{t("signatures.actor")}</Table.Th>
              <Table.Th>{t("signatures.hash")}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {detail.audit.records.map((r) => (
              <Table.Tr key={r.position}>
                <Table.Td>{r.position}</Table.Td>
                <Table.Td>{dateTime(r.at)}</Table.Td>
                <Table.Td>{t(`signatures.act.${r.action}` as Key)}</Table.Td>
                <Table.Td>{actor(r.actor)}</Table.Td>
                <Table.Td>
                  <Tooltip label={r.hash}>
                    <Code>{r.hash.slice(0, 16)}…</Code>
                  </Tooltip>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </ScrollTable>
    </Card>
  );
}

export function SignatureDetail() {
  const { id = "" } = useParams();
  const { t, dateTime, label } = useI18n();
  const navigate = useNavigate();
  // Back to the list as it was (its filters are in the address); to the plain list when the
  // detail was opened directly.
  const back = () => ((window.history.state as { idx?: number } | null)?.idx ? navigate(-1) : navigate("/signatures"));
  const query = useQuery({
    queryKey: ["signature", id],
    queryFn: () => payload(api.GET("/signatures/{internalId}", { params: { path: { internalId: id } } })),
    // While signatories act, their states and codes change: staff read the code as it is sent.
    refetchInterval: (q) => {
      const state = q.state.data?.signature.process.state.name;
      return state === "PENDING" || state === "IN_PROGRESS" ? 5000 : false;
    },
  });
  const d = query.data;
  const p = d?.signature.process;
  return (
    <Stack>
      <Anchor component="button" type="button" size="sm" w="fit-content" onClick={back} data-testid="back-to-list">
        ← {t("signatures.title")}
      </Anchor>
      <QueryState loading={query.isLoading} error={query.error} retry={() => void query.refetch()}>
        {d && p && (
          <>
            <Group justify="space-between" align="start">
              <Group gap="sm">
                <PageTitle title={p.processName} />
                <SignatureBadge name={p.state.name} />
              </Group>
              <CancelProcess detail={d} />
            </Group>
            <Card withBorder>
              <SimpleGrid cols={{ base: 2, md: 4 }}>
                <Field name={t("signatures.process")}>
                  <Text size="sm" ff="monospace" style={{ wordBreak: "break-all" }} data-testid="process-id">
                    {p.internalId}
                  </Text>
                </Field>
                <Field name={t("common.commerce")}>{formatRut(d.commerce)}</Field>
                <Field name={t("signatures.externalId")}>{p.externalProcessId}</Field>
                <Field name={t("signatures.requestUser")}>{p.requestUser}</Field>
                <Field name={t("common.createdAt")}>{dateTime(p.createdAt)}</Field>
                <Field name={t("signatures.expires")}>{dateTime(p.expiresAt)}</Field>
                <Field name={t("signatures.finished")}>{p.finishedAt ? dateTime(p.finishedAt) : null}</Field>
              </SimpleGrid>
              {p.rejectionReason && (
                <Alert color="red" mt="sm">
                  {t("signatures.rejection", { reason: p.rejectionReason })}
                </Alert>
              )}
            </Card>
            {d.mandate && (
              <Card withBorder data-testid="signature-mandate">
                <Group gap="sm">
                  <Text fw={600}>{t("signatures.mandate")}</Text>
                  <Anchor component={Link} to={`/mandates/${d.mandate.internalId}`}>
                    {d.mandate.name} ({d.mandate.id})
                  </Anchor>
                  <SignatureBadge name={d.mandate.state.name} />
                </Group>
                {d.mandate.failure && (
                  <Text size="sm" c="orange" mt="xs">
                    {t("signatures.mandateFailure", { reason: label(d.mandate.failure) })}
                  </Text>
                )}
              </Card>
            )}
            <Signatories detail={d} />
            <Documents detail={d} />
            <AuditTrail detail={d} />
          </>
        )}
      </QueryState>
    </Stack>
  );
}
