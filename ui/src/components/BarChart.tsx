import { Group, SegmentedControl, Stack, Text } from "@mantine/core";
import { useMemo, useState } from "react";
import { useI18n } from "../lib/context";

export interface DayBars {
  date: string;
  collected: { amount: number; currencyId: string }[];
  rejected: { amount: number; currencyId: string }[];
}

/** Collected and rejected amounts per day, one currency at a time, as paired bars (SVG). */
export function BarChart({ days }: { days: DayBars[] }) {
  const { t, money, date } = useI18n();
  const currencies = useMemo(() => {
    const set = new Set<string>();
    for (const d of days) for (const m of [...d.collected, ...d.rejected]) set.add(m.currencyId);
    return [...set].sort((a, b) => (a === "CLP" ? -1 : b === "CLP" ? 1 : a.localeCompare(b)));
  }, [days]);
  const [chosen, setChosen] = useState<string | null>(null);
  const currency = chosen && currencies.includes(chosen) ? chosen : (currencies[0] ?? "CLP");
  const amount = (list: { amount: number; currencyId: string }[]) =>
    list.find((m) => m.currencyId === currency)?.amount ?? 0;
  const max = Math.max(1, ...days.flatMap((d) => [amount(d.collected), amount(d.rejected)]));
  const width = 720;
  const height = 180;
  const slot = width / Math.max(days.length, 1);
  const bar = Math.max(2, slot / 2 - 2);
  return (
    <Stack gap="xs">
      <Group justify="space-between">
        <Group gap="md">
          <Group gap={4}>
            <svg width="10" height="10" aria-hidden>
              <rect width="10" height="10" fill="var(--mantine-color-teal-6)" />
            </svg>
            <Text size="xs">{t("dashboard.collected")}</Text>
          </Group>
          <Group gap={4}>
            <svg width="10" height="10" aria-hidden>
              <rect width="10" height="10" fill="var(--mantine-color-red-6)" />
            </svg>
            <Text size="xs">{t("dashboard.rejected")}</Text>
          </Group>
        </Group>
        {currencies.length > 1 && (
          <SegmentedControl size="xs" data={currencies} value={currency} onChange={setChosen} />
        )}
      </Group>
      {currencies.length === 0 ? (
        <Text size="sm" c="dimmed">
          {t("dashboard.noAmounts")}
        </Text>
      ) : null}
      <svg
        viewBox={`0 0 ${width} ${height + 20}`}
        width="100%"
        role="img"
        aria-label={t("dashboard.chart")}
        data-testid="amounts-chart"
      >
        <line x1="0" y1={height} x2={width} y2={height} stroke="var(--mantine-color-gray-4)" />
        {days.map((d, i) => {
          const c = amount(d.collected);
          const r = amount(d.rejected);
          const ch = (c / max) * (height - 10);
          const rh = (r / max) * (height - 10);
          const x = i * slot + 1;
          return (
            <g key={d.date}>
              <title>
                {`${date(d.date)} · ${t("dashboard.collected")}: ${money(c, currency)} · ${t("dashboard.rejected")}: ${money(r, currency)}`}
              </title>
              <rect x={x} y={height - ch} width={bar} height={ch} fill="var(--mantine-color-teal-6)" />
              <rect x={x + bar + 1} y={height - rh} width={bar} height={rh} fill="var(--mantine-color-red-6)" />
              {i % 5 === 0 || i === days.length - 1 ? (
                <text x={x} y={height + 14} fontSize="10" fill="var(--mantine-color-dimmed)">
                  {d.date.slice(5)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
    </Stack>
  );
}
