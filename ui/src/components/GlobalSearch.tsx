import { Button, Loader, Modal, Paper, Text, TextInput } from "@mantine/core";
import { useDebouncedValue } from "@mantine/hooks";
import { useQuery } from "@tanstack/react-query";
import { useId, useState, type KeyboardEvent } from "react";
import { useNavigate } from "react-router";
import { api, payload, type Schemas } from "../api/client";
import { useI18n } from "../lib/context";
import type { Key } from "../lib/i18n";
import { formatRut } from "../lib/rut";

type Result = Schemas["GlobalSearchResult"];

/** The shortest text searched: one character finds too much to be worth a request. */
const MIN_CHARS = 2;
/** The server's bound (`GET /search`): longer texts are not sent. */
const MAX_CHARS = 100;

interface Hit {
  kind: "customers" | "mandates" | "installments" | "events";
  key: string;
  href: string;
  primary: string;
  secondary: string;
}

const KINDS: { kind: Hit["kind"]; heading: Key }[] = [
  { kind: "customers", heading: "search.customers" },
  { kind: "mandates", heading: "search.mandates" },
  { kind: "installments", heading: "search.installments" },
  { kind: "events", heading: "search.events" },
];

/** Every result as one line to show and the page it opens, grouped in the order of `KINDS`. */
function useHits(result: Result | undefined): Hit[] {
  const { t, money, date, dateTime, label } = useI18n();
  if (!result) return [];
  const customers = result.customers.map((c): Hit => {
    const p = c.customer.personalInformation;
    return {
      kind: "customers",
      key: c.customer.internalUserId,
      href: `/customers/${encodeURIComponent(c.customer.internalUserId)}`,
      primary: [p.firstName, p.lastName, p.secondLastName].filter(Boolean).join(" "),
      secondary: `RUT ${formatRut(c.customer.identificationDocument.number)} · ${c.customer.userId} · ${formatRut(c.commerce)}`,
    };
  });
  const mandates = result.mandates.map(
    (m): Hit => ({
      kind: "mandates",
      key: m.internalId,
      href: `/mandates/${encodeURIComponent(m.internalId)}`,
      primary: `${m.id} · ${m.name}`,
      secondary: `${m.customer.name} · ${label(m.state.name)} · ${formatRut(m.commerce)}`,
    }),
  );
  const installments = result.installments.map(
    (i): Hit => ({
      kind: "installments",
      key: i.internalId,
      href: `/mandates/${encodeURIComponent(i.mandateInternalId)}?installment=${encodeURIComponent(i.internalId)}`,
      primary: `${i.id} · ${money(i.amount, i.currencyId)}`,
      secondary: `${t("search.ofMandate", { id: i.mandateId })} · ${t("search.due", { date: date(i.dueDate) })} · ${label(i.state.name)}`,
    }),
  );
  const events = result.events.map(
    (e): Hit => ({
      kind: "events",
      key: e.eventId,
      href: `/notifications?event=${encodeURIComponent(e.eventId)}`,
      primary: e.eventId,
      secondary: [label(e.kind.toUpperCase()), label(e.deliveryState), e.mandateId ?? null, dateTime(e.createdAt)]
        .filter(Boolean)
        .join(" · "),
    }),
  );
  return [...customers, ...mandates, ...installments, ...events];
}

/**
 * The search box: a combobox whose list groups what the text found by kind. Arrow keys move
 * through the results, Enter opens the one chosen (the first when none is), Escape closes the
 * list. `floating` shows the list over the page under the box (the header); otherwise it
 * follows the box (the search dialog of narrow screens).
 */
function SearchBox({ floating, autoFocus, onOpened }: { floating: boolean; autoFocus?: boolean; onOpened?: () => void }) {
  const { t } = useI18n();
  const navigate = useNavigate();
  const id = useId();
  const listId = `${id}-results`;
  const [text, setText] = useState("");
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const trimmed = text.trim();
  const [searched] = useDebouncedValue(trimmed, 250);
  const enabled = searched.length >= MIN_CHARS && searched.length <= MAX_CHARS;
  const query = useQuery({
    queryKey: ["global-search", searched],
    queryFn: () => payload(api.GET("/search", { params: { query: { q: searched, limit: 5 } } })),
    enabled,
    staleTime: 10_000,
  });
  const hits = useHits(enabled ? query.data : undefined);
  const showing = open && trimmed.length >= MIN_CHARS;
  const settled = enabled && searched === trimmed && !query.isFetching;
  const optionId = (index: number) => `${id}-option-${index}`;

  const go = (hit: Hit) => {
    setOpen(false);
    setActive(-1);
    setText("");
    onOpened?.();
    void navigate(hit.href);
  };

  const onKeyDown = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      setOpen(true);
      if (hits.length === 0) return;
      const step = event.key === "ArrowDown" ? 1 : -1;
      setActive((current) => (current < 0 && step < 0 ? hits.length - 1 : (current + step + hits.length) % hits.length));
    } else if (event.key === "Home" && showing && hits.length > 0 && active >= 0) {
      event.preventDefault();
      setActive(0);
    } else if (event.key === "End" && showing && hits.length > 0 && active >= 0) {
      event.preventDefault();
      setActive(hits.length - 1);
    } else if (event.key === "Enter") {
      const hit = hits[active >= 0 ? active : 0];
      if (showing && hit) {
        event.preventDefault();
        go(hit);
      }
    } else if (event.key === "Escape") {
      if (showing) {
        event.preventDefault();
        event.stopPropagation();
        setOpen(false);
        setActive(-1);
      } else if (text) {
        event.preventDefault();
        setText("");
      }
    }
  };

  let index = -1;
  const list = (
    <Paper
      withBorder
      shadow={floating ? "md" : undefined}
      p={4}
      data-testid="global-search-results"
      style={
        floating
          ? { position: "absolute", top: "calc(100% + 4px)", right: 0, width: "min(440px, calc(100vw - 32px))", zIndex: 300 }
          : { marginTop: 8 }
      }
    >
      <div
        role="listbox"
        id={listId}
        aria-label={t("search.results")}
        style={{ maxHeight: floating ? "min(70vh, 520px)" : undefined, overflowY: "auto" }}
      >
        {KINDS.map(({ kind, heading }) => {
          const group = hits.filter((h) => h.kind === kind);
          if (group.length === 0) return null;
          const headingId = `${id}-${kind}`;
          return (
            <div role="group" aria-labelledby={headingId} key={kind} data-testid={`global-search-${kind}`}>
              <Text id={headingId} role="presentation" size="xs" fw={700} tt="uppercase" c="dimmed" px="xs" pt={6} pb={2}>
                {t(heading)}
              </Text>
              {group.map((hit) => {
                index += 1;
                const mine = index;
                const selected = mine === active;
                return (
                  <div
                    role="option"
                    id={optionId(mine)}
                    key={hit.key}
                    aria-selected={selected}
                    data-href={hit.href}
                    onMouseDown={(e) => e.preventDefault()}
                    onMouseEnter={() => setActive(mine)}
                    onClick={() => go(hit)}
                    style={{
                      cursor: "pointer",
                      padding: "6px 8px",
                      borderRadius: 4,
                      background: selected ? "var(--mantine-color-blue-light)" : undefined,
                    }}
                  >
                    <Text size="sm" fw={600} style={{ overflowWrap: "anywhere" }}>
                      {hit.primary}
                    </Text>
                    <Text size="xs" c="dimmed" style={{ overflowWrap: "anywhere" }}>
                      {hit.secondary}
                    </Text>
                  </div>
                );
              })}
            </div>
          );
        })}
      </div>
      <Text size="sm" px="xs" py={4} role="status" data-testid="global-search-status" c={hits.length ? "dimmed" : undefined}>
        {!settled ? (
          <>
            <Loader size="xs" mr={6} aria-hidden />
            {t("search.searching")}
          </>
        ) : query.isError ? (
          t("search.failed")
        ) : hits.length === 0 ? (
          t("search.none", { text: searched })
        ) : (
          t(hits.length === 1 ? "search.countOne" : "search.count", { count: hits.length })
        )}
      </Text>
    </Paper>
  );

  return (
    <div style={{ position: "relative", width: floating ? "clamp(180px, 22vw, 300px)" : "100%" }}>
      <TextInput
        type="search"
        size={floating ? "xs" : "sm"}
        // The dialog's focus trap starts on the element marked so (Mantine), not on `autoFocus`.
        data-autofocus={autoFocus || undefined}
        value={text}
        maxLength={MAX_CHARS}
        placeholder={t("search.placeholder")}
        aria-label={t("search.label")}
        role="combobox"
        aria-autocomplete="list"
        aria-expanded={showing}
        aria-controls={listId}
        aria-activedescendant={showing && active >= 0 && active < hits.length ? optionId(active) : undefined}
        data-testid="global-search"
        onChange={(e) => {
          setText(e.currentTarget.value);
          setOpen(true);
          setActive(-1);
        }}
        onFocus={() => setOpen(true)}
        onBlur={() => setOpen(false)}
        onKeyDown={onKeyDown}
      />
      {showing ? list : <div id={listId} role="listbox" aria-label={t("search.results")} hidden />}
    </div>
  );
}

/** A magnifying glass, drawn here: the UI has no icon set. */
function SearchIcon() {
  return (
    <svg width="16" height="16" viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="2.2" aria-hidden="true">
      <circle cx="11" cy="11" r="7" />
      <path d="m20 20-3.5-3.5" strokeLinecap="round" />
    </svg>
  );
}

/**
 * The global search of the header: the box itself where the header has room; on narrow screens
 * a button that opens it in a full-screen dialog.
 */
export function GlobalSearch({ compact }: { compact: boolean }) {
  const { t } = useI18n();
  const [opened, setOpened] = useState(false);
  if (!compact) return <SearchBox floating />;
  return (
    <>
      <Button
        variant="default"
        size="xs"
        px={8}
        aria-label={t("search.open")}
        aria-haspopup="dialog"
        onClick={() => setOpened(true)}
        data-testid="global-search-open"
      >
        <SearchIcon />
      </Button>
      {opened && (
        <Modal opened onClose={() => setOpened(false)} title={t("search.title")} fullScreen closeButtonProps={{ "aria-label": t("app.close") }}>
          <SearchBox floating={false} autoFocus onOpened={() => setOpened(false)} />
        </Modal>
      )}
    </>
  );
}
