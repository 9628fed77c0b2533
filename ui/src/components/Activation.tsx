// How mandates are activated: the commerce's default (Settings › commerces) and, on a mandate,
// its mode, the signature process its Magic Link started and the sealed mandate PDF.
import { Alert, Anchor, Badge, Button, Card, Group, Modal, Select, Stack, Table, Text } from "@mantine/core";
import { notifications } from "@mantine/notifications";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { api, payload, type Schemas } from "../api/client";
import { errorText } from "../lib/errors";
import { useI18n } from "../lib/context";
import { StateBadge } from "./StateBadge";

type Mode = Schemas["ActivationModeDto"];
const MODES: Mode[] = ["DIRECT", "SIGNATURE"];

/** The commerce's default mode: a select for admins, its name for everyone else. */
export function CommerceActivationMode({ commerce, admin }: { commerce: Schemas["CommerceDto"]; admin: boolean }) {
  const { t, label } = useI18n();
  const queryClient = useQueryClient();
  const save = useMutation({
    mutationFn: (mode: Mode) =>
      payload(api.PUT("/commerces/{code}/activation-mode", { params: { path: { code: commerce.code } }, body: { mode } })),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ["commerces"] });
      notifications.show({ color: "green", message: t("activation.saved") });
    },
    onError: (e) => notifications.show({ color: "red", message: errorText(e) }),
  });
  if (!admin) return <>{label(commerce.activationMode)}</>;
  return (
    <Select
      size="xs"
      aria-label={`${t("activation.mode")} · ${commerce.name}`}
      data-testid={`activation-mode-${commerce.code}`}
      data={MODES.map((m) => ({ value: m, label: label(m) }))}
      value={commerce.activationMode}
      allowDeselect={false}
      miw={190}
      disabled={save.isPending}
      onChange={(value) => {
        if (value && value !== commerce.activationMode) save.mutate(value as Mode);
      }}
    />
  );
}

/** Where a staff download of a signature document lives (the session cookie authorizes it). */
function documentUrl(process: string, document: string, version: "original" | "sealed"): string {
  return `/admin/api/signatures/${encodeURIComponent(process)}/documents/${encodeURIComponent(document)}/${version}`;
}

/** The process behind a signature-gated mandate: its signatories and both documents. */
function SignatureProcessModal({ internalId, onClose }: { internalId: string; onClose: () => void }) {
  const { t, dateTime } = useI18n();
  const query = useQuery({
    queryKey: ["signature", internalId],
    queryFn: () => payload(api.GET("/signatures/{internalId}", { params: { path: { internalId } } })),
  });
  const signature = query.data?.signature;
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ "aria-label": t("app.close") }} size="lg" title={`${t("activation.signatureProcess")} · ${internalId}`}>
      {signature && (
        <Stack>
          <Group gap="sm">
            <Text fw={600}>{signature.process.processName}</Text>
            <StateBadge state={signature.process.state} />
          </Group>
          {signature.process.rejectionReason && <Alert color="red">{signature.process.rejectionReason}</Alert>}
          <Text size="sm" fw={600}>
            {t("activation.signatories")}
          </Text>
          <Table>
            <Table.Tbody>
              {signature.signatories.map((s) => (
                <Table.Tr key={s.internalId}>
                  <Table.Td>{s.internalId}</Table.Td>
                  <Table.Td>
                    <StateBadge state={s.state} />
                  </Table.Td>
                  <Table.Td>{s.signedAt ? dateTime(s.signedAt) : s.rejectedAt ? dateTime(s.rejectedAt) : "—"}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {signature.documents.map((d) => (
            <Group key={d.internalId} gap="md">
              <Anchor href={documentUrl(internalId, d.internalId, "original")} target="_blank" rel="noopener">
                {t("activation.original")}
              </Anchor>
              {d.sealedSha256 && (
                <Anchor href={documentUrl(internalId, d.internalId, "sealed")} target="_blank" rel="noopener">
                  {t("activation.sealed")}
                </Anchor>
              )}
            </Group>
          ))}
        </Stack>
      )}
    </Modal>
  );
}

/** The mandate's activation: its mode and, for `SIGNATURE`, the process and the sealed PDF. */
export function MandateActivationCard({ mandate }: { mandate: Schemas["MandateDto"] }) {
  const { t, label, dateTime } = useI18n();
  const [open, setOpen] = useState(false);
  const signature = mandate.signature;
  const process = useQuery({
    queryKey: ["signature", signature?.internalId],
    queryFn: () =>
      payload(api.GET("/signatures/{internalId}", { params: { path: { internalId: signature?.internalId ?? "" } } })),
    enabled: signature?.state.name === "COMPLETED",
  });
  const sealed = process.data?.signature.documents.find((d) => d.sealedSha256);
  return (
    <Card withBorder data-testid="mandate-activation">
      <Group justify="space-between" mb="xs">
        <Text fw={600}>{t("activation.mode")}</Text>
        <Badge variant="outline">{label(mandate.activation)}</Badge>
      </Group>
      {mandate.activation === "SIGNATURE" && !signature && (
        <Text size="sm" c="dimmed">
          {t("activation.notStarted")}
        </Text>
      )}
      {signature && (
        <Stack gap="xs">
          <Group gap="sm">
            <Text size="sm">{t("activation.signatureProcess")}</Text>
            <Anchor size="sm" component="button" onClick={() => setOpen(true)} data-testid="open-signature">
              {signature.internalId}
            </Anchor>
            <StateBadge state={signature.state} />
          </Group>
          {mandate.activationFailure && (
            <Alert color="orange" title={label(mandate.activationFailure.reason)}>
              {t("activation.failure", { date: dateTime(mandate.activationFailure.at) })}
            </Alert>
          )}
          {sealed && signature.sealedSha256 && (
            <Group gap="sm">
              <Button
                component="a"
                size="xs"
                variant="light"
                href={documentUrl(signature.internalId, sealed.internalId, "sealed")}
                download={sealed.documentName}
                data-testid="sealed-pdf"
              >
                {t("activation.sealed")}
              </Button>
              <Text size="xs" c="dimmed" style={{ wordBreak: "break-all" }}>
                SHA-256 {signature.sealedSha256}
              </Text>
            </Group>
          )}
        </Stack>
      )}
      {open && signature && <SignatureProcessModal internalId={signature.internalId} onClose={() => setOpen(false)} />}
    </Card>
  );
}
