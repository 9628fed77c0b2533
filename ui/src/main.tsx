import "@mantine/core/styles.css";
import "@mantine/notifications/styles.css";
import "./styles.css";
import { DEFAULT_THEME, MantineProvider, createTheme, type CSSVariablesResolver } from "@mantine/core";
import { ModalsProvider } from "@mantine/modals";
import { Notifications } from "@mantine/notifications";
import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { BrowserRouter } from "react-router";
import { ApiError } from "./api/client";
import { App } from "./App";
import { I18nProvider } from "./lib/context";

// Contrast (WCAG AA, 4.5:1 for text) is settled here rather than screen by screen. Filled
// colors use shade 8, and their text turns black or white by luminance (0.179 is where both
// give the same contrast). Mantine's defaults for gray "dimmed" text and for colored text
// (`c="red"`, light badges, the active navigation link) are too pale on a white page, so in the
// light scheme they are darkened; the dark scheme's lighter shades already read well.
const theme = createTheme({
  primaryColor: "blue",
  primaryShade: { light: 8, dark: 8 },
  autoContrast: true,
  luminanceThreshold: 0.179,
  defaultRadius: "sm",
  components: {
    // A table wider than the screen scrolls in its container, which keyboards must reach too.
    TableScrollContainer: { defaultProps: { scrollAreaProps: { viewportProps: { tabIndex: 0 } } } },
    // A dialog's header is a plain block: as <header> beside the page's own it would be a
    // second banner landmark.
    ModalHeader: { defaultProps: { component: "div" } },
    DrawerHeader: { defaultProps: { component: "div" } },
  },
});

const darkened = (color: string) => `color-mix(in srgb, var(--mantine-color-${color}-9) 70%, black)`;

const readableColors: CSSVariablesResolver = () => ({
  variables: {},
  light: {
    "--mantine-color-dimmed": "var(--mantine-color-gray-7)",
    "--mantine-color-placeholder": "var(--mantine-color-gray-6)",
    ...Object.fromEntries(
      Object.keys(DEFAULT_THEME.colors).flatMap((color) => [
        [`--mantine-color-${color}-text`, darkened(color)],
        [`--mantine-color-${color}-light-color`, darkened(color)],
      ]),
    ),
  },
  dark: {
    "--mantine-color-dimmed": "var(--mantine-color-dark-1)",
  },
});

// A 401 anywhere means the session ended (expiry, sign-out elsewhere): ask again who we are.
const onError = (error: unknown) => {
  if (error instanceof ApiError && error.status === 401) {
    void queryClient.invalidateQueries({ queryKey: ["session"] });
  }
};

const queryClient = new QueryClient({
  queryCache: new QueryCache({ onError }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    queries: {
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
      staleTime: 5_000,
    },
  },
});

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <MantineProvider theme={theme} defaultColorScheme="auto" cssVariablesResolver={readableColors}>
      <I18nProvider>
        <QueryClientProvider client={queryClient}>
          <ModalsProvider>
            <Notifications position="bottom-right" autoClose={3000} />
            <BrowserRouter>
              <App />
            </BrowserRouter>
          </ModalsProvider>
        </QueryClientProvider>
      </I18nProvider>
    </MantineProvider>
  </StrictMode>,
);
