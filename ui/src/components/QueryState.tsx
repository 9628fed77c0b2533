import { Alert, Button, Center, Loader } from "@mantine/core";
import type { ReactNode } from "react";
import { useI18n } from "../lib/context";
import { errorText } from "../lib/errors";

/** Loading and failure of a query, so every screen shows them the same way. */
export function QueryState({
  loading,
  error,
  retry,
  children,
}: {
  loading: boolean;
  error: unknown;
  retry?: () => void;
  children?: ReactNode;
}) {
  const { t, lang } = useI18n();
  if (error) {
    const message = errorText(error, lang);
    return (
      <Alert color="red" title={t("app.error", { message })}>
        {retry && (
          <Button size="xs" variant="light" onClick={retry}>
            {t("app.retry")}
          </Button>
        )}
      </Alert>
    );
  }
  if (loading) {
    return (
      <Center p="xl">
        <Loader size="sm" />
      </Center>
    );
  }
  return <>{children}</>;
}
