import { Code, Text } from "@mantine/core";
import { useI18n } from "../lib/context";
import { deliveryProblem } from "../lib/delivery";

/**
 * Why a delivery failed, in words, with the server's technical text one click away (a
 * `details` the keyboard opens too) for whoever looks after the receiver.
 */
export function DeliveryProblemText({ error, status }: { error: string | null | undefined; status?: number | null }) {
  const { t } = useI18n();
  const problem = deliveryProblem(error, status);
  if (!problem) return null;
  return (
    <div data-testid="delivery-problem">
      <Text size="xs" c="red">
        {t(problem.key, problem.vars)}
      </Text>
      {error && (
        <details>
          <summary>
            <Text span size="xs" c="dimmed">
              {t("delivery.technical")}
            </Text>
          </summary>
          <Code block style={{ whiteSpace: "pre-wrap", wordBreak: "break-all" }} data-testid="delivery-raw">
            {error}
          </Code>
        </details>
      )}
    </div>
  );
}
