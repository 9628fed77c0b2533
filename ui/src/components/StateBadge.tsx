import { Badge } from "@mantine/core";
import { useI18n } from "../lib/context";

const COLORS: Record<string, string> = {
  PENDING: "gray",
  ACTIVE: "green",
  CANCELLED: "red",
  FINISHED: "blue",
  DELETED: "dark",
  IN_PROCESS: "yellow",
  IN_VALIDATION: "orange",
  PAID: "green",
  REJECTED: "red",
  ANNULLED: "dark",
  REVERSED: "grape",
  DELIVERED: "green",
  FAILED: "red",
  NO_URL: "gray",
  RETRY: "orange",
  RUNNING: "blue",
  INTERRUPTED: "orange",
};

/** A state (`{id, name}` or a bare name) as a colored badge with its translated label. */
export function StateBadge({ state }: { state: { name: string } | string | null | undefined }) {
  const { label } = useI18n();
  const name = typeof state === "string" ? state : state?.name;
  if (!name) return <>—</>;
  return (
    <Badge
      color={COLORS[name] ?? "gray"}
      variant="light"
      data-state={name}
      // Never cut a state's name in a narrow column.
      styles={{ root: { maxWidth: "none", overflow: "visible" }, label: { overflow: "visible" } }}
    >
      {label(name)}
    </Badge>
  );
}
