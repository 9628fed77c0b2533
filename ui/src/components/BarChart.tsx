import { Group, SegmentedControl, Stack, Table, Text } from "@mantine/core";
import { useElementSize } from "@mantine/hooks";
import { useId, useMemo } from "react";
import { useI18n } from "../lib/context";

export interface DayBars {
  date: string;
  collected: { amount: number; currencyId: string }[];
  rejected: { amount: number; currencyId: string }[];
}

/** The currencies present in the days, CLP first. */
export function chartCurrencies(days: DayBars[]): string[] {
  const set = new Set<string>();
  for (const d of days) for (const m of [...d.collected, ...d.rejected]) set.add(m.currencyId);
  return [...set].sort((a, b) => (a === "CLP" ? -1 : b === "CLP" ? 1 : a.localeCompare(b)));
}

/** The drawing's width before the page is measured, and its least (a phone's card). */
const DRAWING_WIDTH = 760;
const MIN_WIDTH = 280;
/** The room one day label needs, in pixels: fewer labels on a narrow screen, never overlapping. */
const DAY_LABEL_ROOM = 44;
const HEIGHT = 200;
const LEFT = 92;
const BOTTOM = 22;
const TOP = 8;

/**
 * Collected and rejected amounts per day in one currency, as paired bars (SVG) with a value
 * axis, a tooltip per day, a title and a summary for screen readers, and the same figures as
 * a table on request.
 */
export function BarChart({
  days,
  currency: wanted,
  onCurrency,
}: {
  days: DayBars[];
  currency?: string | null;
  onCurrency?: (currency: string) => void;
}) {
  const { t, money, date, lang } = useI18n();
  // The drawing is as wide as its box, one unit a pixel, so the axis text keeps its size on a
  // phone instead of shrinking with the whole picture.
  const { ref: box, width: measured } = useElementSize();
  const WIDTH = measured > 0 ? Math.max(MIN_WIDTH, Math.floor(measured)) : DRAWING_WIDTH;
  const titleId = useId();
  const descId = useId();
  const currencies = useMemo(() => chartCurrencies(days), [days]);
  const currency = wanted && currencies.includes(wanted) ? wanted : (currencies[0] ?? wanted ?? "CLP");
  const amount = (list: { amount: number; currencyId: string }[]) =>
    list.find((m) => m.currencyId === currency)?.amount ?? 0;
  const max = Math.max(1, ...days.flatMap((d) => [amount(d.collected), amount(d.rejected)]));
  const plot = HEIGHT - TOP - BOTTOM;
  const slot = (WIDTH - LEFT) / Math.max(days.length, 1);
  const bar = Math.max(1, slot / 2 - 2);
  const labelEvery = Math.max(1, Math.ceil(DAY_LABEL_ROOM / slot));
  const y = (value: number) => TOP + plot - (value / max) * plot;
  const ticks = [0, max / 2, max];
  const totalCollected = days.reduce((sum, d) => sum + amount(d.collected), 0);
  const totalRejected = days.reduce((sum, d) => sum + amount(d.rejected), 0);
  const best = days.reduce<DayBars | null>((b, d) => (!b || amount(d.collected) > amount(b.collected) ? d : b), null);
  const summary = t("dashboard.chartSummary", {
    currency,
    collected: money(totalCollected, currency),
    rejected: money(totalRejected, currency),
    best: best && amount(best.collected) > 0 ? `${date(best.date)} (${money(amount(best.collected), currency)})` : "—",
  });
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
          <SegmentedControl
            size="xs"
            data={currencies}
            value={currency}
            onChange={(c) => onCurrency?.(c)}
            data-testid="chart-currency"
          />
        )}
      </Group>
      {currencies.length === 0 ? (
        <Text size="sm" c="dimmed">
          {t("dashboard.noAmounts")}
        </Text>
      ) : null}
      <div ref={box} style={{ width: "100%" }}>
        <svg
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          width="100%"
          role="img"
          aria-labelledby={`${titleId} ${descId}`}
          data-testid="amounts-chart"
        >
          <title id={titleId}>{t("dashboard.chart")}</title>
          <desc id={descId}>{summary}</desc>
          {ticks.map((v) => (
            <g key={v} data-testid="chart-tick">
              <line x1={LEFT} y1={y(v)} x2={WIDTH} y2={y(v)} stroke="var(--mantine-color-gray-3)" strokeDasharray={v ? "3 3" : undefined} />
              <text x={LEFT - 6} y={y(v) + 4} fontSize="11" textAnchor="end" fill="var(--mantine-color-dimmed)">
                {money(v, currency)}
              </text>
            </g>
          ))}
          {days.map((d, i) => {
            const c = amount(d.collected);
            const r = amount(d.rejected);
            const x = LEFT + i * slot + 1;
            return (
              <g key={d.date}>
                <title>
                  {`${date(d.date)} · ${t("dashboard.collected")}: ${money(c, currency)} · ${t("dashboard.rejected")}: ${money(r, currency)}`}
                </title>
                {/* A transparent band the whole day high, so the tooltip shows on empty days too. */}
                <rect x={x - 1} y={TOP} width={slot} height={plot} fill="transparent" />
                <rect x={x} y={y(c)} width={bar} height={TOP + plot - y(c)} fill="var(--mantine-color-teal-6)" />
                <rect x={x + bar + 1} y={y(r)} width={bar} height={TOP + plot - y(r)} fill="var(--mantine-color-red-6)" />
                {(i % Math.max(5, labelEvery) === 0 && i + labelEvery <= days.length - 1) || i === days.length - 1 ? (
                  <text
                    className="chart-day"
                    x={i === days.length - 1 ? x + slot - 2 : x}
                    y={HEIGHT - 6}
                    fontSize="10"
                    textAnchor={i === days.length - 1 ? "end" : "start"}
                    fill="var(--mantine-color-dimmed)"
                  >
                    {lang === "es" ? date(d.date).slice(0, 5) : d.date.slice(5)}
                  </text>
                ) : null}
              </g>
            );
          })}
        </svg>
      </div>
      <details>
        <summary>
          <Text span size="xs" c="dimmed">
            {t("dashboard.chartTable")}
          </Text>
        </summary>
        <Table striped data-testid="chart-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>{t("common.date")}</Table.Th>
              <Table.Th ta="right">{t("dashboard.collected")}</Table.Th>
              <Table.Th ta="right">{t("dashboard.rejected")}</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {days.map((d) => (
              <Table.Tr key={d.date}>
                <Table.Td>{date(d.date)}</Table.Td>
                <Table.Td ta="right">{money(amount(d.collected), currency)}</Table.Td>
                <Table.Td ta="right">{money(amount(d.rejected), currency)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </details>
    </Stack>
  );
}
