// The check of the staff audit's hash chain (`GET /audit/verify`, as `mandato audit verify`):
// run on demand, since it reads every staff action on record.
import { Alert, Button, Group, Stack, Text } from "@mantine/core";
import { useQuery } from "@tanstack/react-query";
import { api, payload, type Schemas } from "../api/client";
import { useI18n } from "../lib/context";
import { errorText } from "../lib/errors";
import type { Key } from "../lib/i18n";

const PROBLEMS: Record<Schemas["ChainProblem"], Key> = {
  BROKEN_LINK: "auditChain.brokenLink",
  HASH_MISMATCH: "auditChain.hashMismatch",
  HEAD_MISMATCH: "auditChain.headMismatch",
  RECORDS_MISSING: "auditChain.recordsMissing",
};

export function AuditChainCheck() {
  const { t, dateTime, lang } = useI18n();
  const check = useQuery({
    queryKey: ["audit-verify"],
    queryFn: () => payload(api.GET("/audit/verify")),
    enabled: false,
    gcTime: 0,
  });
  const d = check.data;
  return (
    <Stack gap="xs">
      <Group>
        <Text size="sm">{t("auditChain.intro")}</Text>
        <Button
          size="xs"
          variant="default"
          loading={check.isFetching}
          onClick={() => void check.refetch()}
          data-testid="verify-audit-chain"
        >
          {t("auditChain.verify")}
        </Button>
      </Group>
      {check.error && !check.isFetching && (
        <Alert color="red">{t("app.error", { message: errorText(check.error, lang) })}</Alert>
      )}
      {d && !check.isFetching && (
        <Alert color={d.ok ? "green" : "red"} data-testid="audit-chain-result">
          {d.ok || !d.broken
            ? t("auditChain.intact", { count: d.records })
            : t("auditChain.broken", {
                seq: d.broken.seq,
                at: d.broken.at ? dateTime(d.broken.at) : "—",
                problem: t(PROBLEMS[d.broken.problem]),
                count: d.records,
              })}
        </Alert>
      )}
    </Stack>
  );
}
