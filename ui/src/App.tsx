import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Suspense, lazy, useEffect, useMemo } from "react";
import { Route, Routes } from "react-router";
import { ApiError, api, payload, setCsrfToken } from "./api/client";
import { Layout } from "./components/Layout";
import { QueryState } from "./components/QueryState";
import { SessionContext, roleAllows, useI18n, type Session } from "./lib/context";
import { setErrorLanguage } from "./lib/errors";
import { Login, PasswordRequired, Setup } from "./screens/SignIn";

// Each screen is its own chunk, loaded when first visited: the first page loads only its own.
const Audit = lazy(() => import("./screens/Audit").then((m) => ({ default: m.Audit })));
const Charging = lazy(() => import("./screens/Charging").then((m) => ({ default: m.Charging })));
const ChargingRun = lazy(() => import("./screens/Charging").then((m) => ({ default: m.ChargingRun })));
const PastDue = lazy(() => import("./screens/PastDue").then((m) => ({ default: m.PastDue })));
const Customers = lazy(() => import("./screens/Customers").then((m) => ({ default: m.Customers })));
const CustomerDetail = lazy(() => import("./screens/Customers").then((m) => ({ default: m.CustomerDetail })));
const Dashboard = lazy(() => import("./screens/Dashboard").then((m) => ({ default: m.Dashboard })));
const Ledger = lazy(() => import("./screens/Ledger").then((m) => ({ default: m.Ledger })));
const MandateDetail = lazy(() => import("./screens/MandateDetail").then((m) => ({ default: m.MandateDetail })));
const Mandates = lazy(() => import("./screens/Mandates").then((m) => ({ default: m.Mandates })));
const Notifications = lazy(() => import("./screens/Notifications").then((m) => ({ default: m.Notifications })));
const Settings = lazy(() => import("./screens/Settings").then((m) => ({ default: m.Settings })));
const Signatures = lazy(() => import("./screens/Signatures").then((m) => ({ default: m.Signatures })));
const SignatureDetail = lazy(() => import("./screens/Signatures").then((m) => ({ default: m.SignatureDetail })));

/** The page's language follows the switch: `<html lang>` for screen readers, and errors. */
function useDocumentLanguage() {
  const { lang } = useI18n();
  useEffect(() => {
    document.documentElement.lang = lang === "es" ? "es-CL" : "en";
    setErrorLanguage(lang);
  }, [lang]);
}

/** First start, sign-in, or the screens of a signed-in staff member. */
export function App() {
  useDocumentLanguage();
  const queryClient = useQueryClient();
  const setup = useQuery({ queryKey: ["setup"], queryFn: () => payload(api.GET("/setup")) });
  const session = useQuery({
    queryKey: ["session"],
    enabled: setup.data?.needsSetup === false,
    retry: false,
    queryFn: async () => {
      try {
        const info = await payload(api.GET("/session"));
        setCsrfToken(info.csrfToken);
        return info;
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) {
          setCsrfToken(null);
          return null;
        }
        throw e;
      }
    },
  });
  const environment = useQuery({
    queryKey: ["environment"],
    enabled: !!session.data,
    queryFn: () => payload(api.GET("/environment")),
    staleTime: 60_000,
  });
  const value = useMemo<Session | null>(() => {
    const info = session.data;
    if (!info) return null;
    return {
      info,
      can: (needed) => roleAllows(info.role, needed),
      signOut: async () => {
        await api.DELETE("/session");
        setCsrfToken(null);
        // Nothing of this member's stays in memory for the next one.
        queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== "session" && q.queryKey[0] !== "setup" });
        queryClient.setQueryData(["session"], null);
      },
    };
  }, [session.data, queryClient]);

  if (setup.data?.needsSetup) return <Setup />;
  if (setup.isLoading || setup.error || session.isLoading || session.error) {
    return (
      <QueryState
        loading={setup.isLoading || session.isLoading}
        error={setup.error ?? session.error}
        retry={() => void setup.refetch()}
      />
    );
  }
  if (!value) return <Login />;
  if (session.data?.passwordChangeRequired) return <PasswordRequired email={value.info.email} onSignOut={() => void value.signOut()} />;
  return (
    <SessionContext.Provider value={value}>
      <Layout environment={environment.data?.environment}>
        <Suspense fallback={<QueryState loading error={null} />}>
          <Routes>
            <Route path="/" element={<Dashboard />} />
            <Route path="/customers" element={<Customers />} />
            <Route path="/customers/:id" element={<CustomerDetail />} />
            <Route path="/mandates" element={<Mandates />} />
            <Route path="/mandates/:id" element={<MandateDetail />} />
            <Route path="/notifications" element={<Notifications />} />
            <Route path="/charging" element={<Charging />} />
            <Route path="/charging/runs/:id" element={<ChargingRun />} />
            <Route path="/past-due" element={<PastDue />} />
            <Route path="/ledger" element={<Ledger />} />
            <Route path="/settings" element={<Settings />} />
            <Route path="/audit" element={<Audit />} />
            <Route path="/signatures" element={<Signatures />} />
            <Route path="/signatures/:id" element={<SignatureDetail />} />
            <Route path="*" element={<Dashboard />} />
          </Routes>
        </Suspense>
      </Layout>
    </SessionContext.Provider>
  );
}
