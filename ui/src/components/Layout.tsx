import { AppShell, Badge, Burger, Group, NavLink, SegmentedControl, Text, Button, Title } from "@mantine/core";
import { useDisclosure } from "@mantine/hooks";
import type { ReactNode } from "react";
import { NavLink as RouterLink, useLocation } from "react-router";
import { useI18n, useSession } from "../lib/context";
import type { Key } from "../lib/i18n";
import type { Lang } from "../lib/money";

const NAV: { to: string; key: Key }[] = [
  { to: "/", key: "nav.dashboard" },
  { to: "/customers", key: "nav.customers" },
  { to: "/mandates", key: "nav.mandates" },
  { to: "/signatures", key: "nav.signatures" },
  { to: "/notifications", key: "nav.notifications" },
  { to: "/charging", key: "nav.charging" },
  { to: "/ledger", key: "nav.ledger" },
  { to: "/settings", key: "nav.settings" },
  { to: "/audit", key: "nav.audit" },
];

export function Layout({ environment, children }: { environment: string | undefined; children: ReactNode }) {
  const [opened, { toggle }] = useDisclosure();
  const { t, lang, setLang } = useI18n();
  const session = useSession();
  const location = useLocation();
  const active = (to: string) => (to === "/" ? location.pathname === "/" : location.pathname.startsWith(to));
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: "sm", collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between">
          <Group gap="sm">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" />
            <Title order={4}>{t("app.name")}</Title>
            {environment && (
              <Badge color={environment === "production" ? "red" : "yellow"} variant="filled" data-testid="environment">
                {environment === "production" ? t("app.production") : t("app.sandbox")}
              </Badge>
            )}
          </Group>
          <Group gap="sm">
            <SegmentedControl
              size="xs"
              aria-label={t("app.language")}
              value={lang}
              onChange={(v) => setLang(v as Lang)}
              data={[
                { value: "es", label: "ES" },
                { value: "en", label: "EN" },
              ]}
            />
            <Text size="sm" data-testid="signed-in-as">
              {session.info.email} · {t(`role.${session.info.role}` as Key)}
            </Text>
            <Button size="xs" variant="default" onClick={() => void session.signOut()}>
              {t("app.signOut")}
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs">
        {NAV.map((item) => (
          <NavLink
            key={item.to}
            component={RouterLink}
            to={item.to}
            label={t(item.key)}
            active={active(item.to)}
            onClick={() => opened && toggle()}
          />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>{children}</AppShell.Main>
    </AppShell>
  );
}
