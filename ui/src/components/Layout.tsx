import { AppShell, Badge, Burger, Button, Group, NavLink, SegmentedControl, Stack, Text, Title, useMantineTheme } from "@mantine/core";
import { useDisclosure, useMediaQuery } from "@mantine/hooks";
import { useEffect, type ReactNode } from "react";
import { NavLink as RouterLink, useLocation } from "react-router";
import { useI18n, useSession } from "../lib/context";
import type { Key } from "../lib/i18n";
import { GlobalSearch } from "./GlobalSearch";
import type { Lang } from "../lib/money";

const NAV: { to: string; key: Key }[] = [
  { to: "/", key: "nav.dashboard" },
  { to: "/customers", key: "nav.customers" },
  { to: "/mandates", key: "nav.mandates" },
  { to: "/past-due", key: "nav.pastDue" },
  { to: "/signatures", key: "nav.signatures" },
  { to: "/notifications", key: "nav.notifications" },
  { to: "/charging", key: "nav.charging" },
  { to: "/ledger", key: "nav.ledger" },
  { to: "/settings", key: "nav.settings" },
  { to: "/audit", key: "nav.audit" },
];

const APP_NAME = "Mandato Desk";

/** The browser tab names the page, so history, tabs and screen readers tell pages apart. */
export function usePageTitle(title: string | null | undefined) {
  useEffect(() => {
    document.title = title ? `${title} · ${APP_NAME}` : APP_NAME;
  }, [title]);
}

/** The one `h1` of a page, which also names the browser tab. */
export function PageTitle({ title }: { title: string }) {
  usePageTitle(title);
  return (
    <Title order={1} size="h2">
      {title}
    </Title>
  );
}

/**
 * Puts focus back on the control that opened a dialog once it closes. Mantine returns focus
 * only for a dialog that stays mounted; the screens mount theirs while open, so the focus of a
 * closed one would fall to the page's start.
 */
function useFocusReturnAfterDialogs() {
  useEffect(() => {
    let lastOutside: HTMLElement | null = null;
    let opener: HTMLElement | null = null;
    const inDialog = (node: EventTarget | null) => node instanceof Element && !!node.closest('[role="dialog"]');
    const onFocusIn = (event: FocusEvent) => {
      if (!inDialog(event.target)) {
        lastOutside = event.target instanceof HTMLElement ? event.target : null;
      } else if (!opener) {
        opener = lastOutside;
      }
    };
    const observer = new MutationObserver(() => {
      if (!opener || document.querySelector('[role="dialog"]')) return;
      const active = document.activeElement;
      if ((!active || active === document.body) && opener.isConnected) opener.focus({ preventScroll: true });
      opener = null;
    });
    document.addEventListener("focusin", onFocusIn);
    observer.observe(document.body, { childList: true, subtree: true });
    return () => {
      document.removeEventListener("focusin", onFocusIn);
      observer.disconnect();
    };
  }, []);
}

/**
 * Spanish or English, remembered by the browser; `long` names the languages in full (the
 * sign-in page, where there is room and nobody has chosen yet).
 */
export function LanguageSwitch({ long = false }: { long?: boolean }) {
  const { t, lang, setLang } = useI18n();
  return (
    <SegmentedControl
      size="xs"
      aria-label={t("app.language")}
      value={lang}
      onChange={(v) => setLang(v as Lang)}
      data={[
        { value: "es", label: long ? "Español" : "ES" },
        { value: "en", label: long ? "English" : "EN" },
      ]}
      data-testid="language-switch"
    />
  );
}

function Account() {
  const { t } = useI18n();
  const session = useSession();
  return (
    <>
      <Text size="sm" data-testid="signed-in-as">
        {session.info.email} · {t(`role.${session.info.role}` as Key)}
      </Text>
      <Button size="xs" variant="default" onClick={() => void session.signOut()}>
        {t("app.signOut")}
      </Button>
    </>
  );
}

/**
 * The frame of every signed-in page. From the `sm` breakpoint the navigation is a sidebar and
 * the header holds the language and the account; below it the header keeps one line (name,
 * environment, menu button) and the rest moves into the navigation the button opens.
 */
export function Layout({ environment, children }: { environment: string | undefined; children: ReactNode }) {
  const [opened, { toggle, close }] = useDisclosure();
  const { t } = useI18n();
  // One language switch and one account block on the page, wherever the width puts them.
  const theme = useMantineTheme();
  const wide = useMediaQuery(`(min-width: ${theme.breakpoints.sm})`, true, { getInitialValueInEffect: false });
  // The search box itself where the header has room for it beside the account; a button that
  // opens it full-screen otherwise.
  const roomy = useMediaQuery(`(min-width: ${theme.breakpoints.md})`, true, { getInitialValueInEffect: false });
  const location = useLocation();
  useFocusReturnAfterDialogs();
  const active = (to: string) => (to === "/" ? location.pathname === "/" : location.pathname.startsWith(to));
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: "sm", collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group gap="sm" wrap="nowrap">
            <Burger
              opened={opened}
              onClick={toggle}
              hiddenFrom="sm"
              size="sm"
              aria-label={t("app.menu")}
              aria-expanded={opened}
              aria-controls="main-navigation"
            />
            <Text fw={700} size="lg" component="span">
              {t("app.name")}
            </Text>
            {environment && (
              <Badge color={environment === "production" ? "red" : "yellow.4"} autoContrast variant="filled" data-testid="environment">
                {environment === "production" ? t("app.production") : t("app.sandbox")}
              </Badge>
            )}
          </Group>
          <Group gap="sm" wrap="nowrap">
            <GlobalSearch compact={!roomy} />
            {wide && (
              <>
                <LanguageSwitch />
                <Account />
              </>
            )}
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" id="main-navigation" component="nav" aria-label={t("app.navigation")}>
        <AppShell.Section grow>
          {NAV.map((item) => (
            <NavLink
              key={item.to}
              component={RouterLink}
              to={item.to}
              label={t(item.key)}
              active={active(item.to)}
              aria-current={active(item.to) ? "page" : undefined}
              onClick={close}
            />
          ))}
        </AppShell.Section>
        {!wide && (
          <AppShell.Section pt="sm">
            <Stack gap="xs" align="flex-start">
              <LanguageSwitch />
              <Account />
            </Stack>
          </AppShell.Section>
        )}
      </AppShell.Navbar>
      <AppShell.Main>{children}</AppShell.Main>
    </AppShell>
  );
}
