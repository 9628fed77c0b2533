import { useQuery, useQueryClient } from "@tanstack/react-query";
import { useMemo } from "react";
import { Route, Routes } from "react-router";
import { ApiError, api, payload, setCsrfToken } from "./api/client";
import { Layout } from "./components/Layout";
import { QueryState } from "./components/QueryState";
import { SessionContext, roleAllows, type Session } from "./lib/context";
import { Audit } from "./screens/Audit";
import { Charging } from "./screens/Charging";
import { CustomerDetail, Customers } from "./screens/Customers";
import { Dashboard } from "./screens/Dashboard";
import { Ledger } from "./screens/Ledger";
import { Login, PasswordRequired, Setup } from "./screens/SignIn";
import { MandateDetail } from "./screens/MandateDetail";
import { Mandates } from "./screens/Mandates";
import { Notifications } from "./screens/Notifications";
import { Settings } from "./screens/Settings";

/** First start, sign-in, or the screens of a signed-in staff member. */
export function App() {
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
        <Routes>
          <Route path="/" element={<Dashboard />} />
          <Route path="/customers" element={<Customers />} />
          <Route path="/customers/:id" element={<CustomerDetail />} />
          <Route path="/mandates" element={<Mandates />} />
          <Route path="/mandates/:id" element={<MandateDetail />} />
          <Route path="/notifications" element={<Notifications />} />
          <Route path="/charging" element={<Charging />} />
          <Route path="/ledger" element={<Ledger />} />
          <Route path="/settings" element={<Settings />} />
          <Route path="/audit" element={<Audit />} />
          <Route path="*" element={<Dashboard />} />
        </Routes>
      </Layout>
    </SessionContext.Provider>
  );
}
