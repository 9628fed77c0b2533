import { createContext, useCallback, useContext, useMemo, useState, type ReactNode } from "react";
import { formatDate, formatDateTime, formatNumber } from "./format";
import { LANG_STORAGE_KEY, initialLang, label, translate, type Key } from "./i18n";
import { formatMoney, type Lang } from "./money";

export interface I18n {
  lang: Lang;
  setLang: (lang: Lang) => void;
  t: (key: Key, vars?: Record<string, string | number>) => string;
  money: (amount: number | null | undefined, currency: string | null | undefined) => string;
  dateTime: (value: string | null | undefined) => string;
  date: (value: string | null | undefined) => string;
  number: (value: number) => string;
  label: (name: string | null | undefined) => string;
}

const I18nContext = createContext<I18n | null>(null);

function storedLang(): string | null {
  try {
    return localStorage.getItem(LANG_STORAGE_KEY);
  } catch {
    return null;
  }
}

export function I18nProvider({ children }: { children: ReactNode }) {
  const [lang, setLangState] = useState<Lang>(() => initialLang(storedLang()));
  const setLang = useCallback((next: Lang) => {
    setLangState(next);
    try {
      localStorage.setItem(LANG_STORAGE_KEY, next);
    } catch {
      // Private mode: the choice lasts for this page only.
    }
    document.documentElement.lang = next === "es" ? "es-CL" : "en";
  }, []);
  const value = useMemo<I18n>(
    () => ({
      lang,
      setLang,
      t: (key, vars) => translate(lang, key, vars),
      money: (amount, currency) => formatMoney(amount, currency, lang),
      dateTime: (value) => formatDateTime(value, lang),
      date: (value) => formatDate(value, lang),
      number: (value) => formatNumber(value, lang),
      label: (name) => label(lang, name),
    }),
    [lang, setLang],
  );
  return <I18nContext.Provider value={value}>{children}</I18nContext.Provider>;
}

export function useI18n(): I18n {
  const value = useContext(I18nContext);
  if (!value) throw new Error("useI18n outside I18nProvider");
  return value;
}

export type Role = "viewer" | "operator" | "admin";

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };

/** Whether `role` reaches `needed` (admin > operator > viewer), as the server decides. */
export function roleAllows(role: string | null | undefined, needed: Role): boolean {
  if (!role || !(role in RANK)) return false;
  return RANK[role as Role] >= RANK[needed];
}

export interface SessionInfo {
  email: string;
  role: string;
  csrfToken: string;
  expiresAt: string;
}

export interface Session {
  info: SessionInfo;
  can: (needed: Role) => boolean;
  signOut: () => Promise<void>;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const value = useContext(SessionContext);
  if (!value) throw new Error("useSession outside a signed-in page");
  return value;
}
