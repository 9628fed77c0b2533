import { Text } from "@mantine/core";
import { modals } from "@mantine/modals";

/** Asks before a destructive action; resolves true when confirmed. */
export function confirmAction({
  title,
  message,
  confirm,
  cancel,
  danger = true,
}: {
  title: string;
  message: string;
  confirm: string;
  cancel: string;
  danger?: boolean;
}): Promise<boolean> {
  return new Promise((resolve) => {
    modals.openConfirmModal({
      title,
      children: <Text size="sm">{message}</Text>,
      labels: { confirm, cancel },
      // No ×: Cancel (and Escape) close it, and an unnamed button would be read as nothing.
      withCloseButton: false,
      confirmProps: { color: danger ? "red" : "blue", "data-testid": "confirm" } as Record<string, unknown>,
      onConfirm: () => resolve(true),
      onCancel: () => resolve(false),
      onClose: () => resolve(false),
    });
  });
}
