import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// The engine serves the build at / (embedded in the binary). `npm run dev` proxies the APIs
// to a running `mandato serve` on the default port.
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    chunkSizeWarningLimit: 400,
    rolldownOptions: {
      output: {
        // Libraries change less often than the screens: in their own chunks they stay cached
        // across releases that change only the app. Screens are split by route (App.tsx).
        codeSplitting: {
          groups: [
            { name: "react", test: /node_modules[\\/](react|react-dom|scheduler|react-router)[\\/]/, priority: 3 },
            { name: "mantine", test: /node_modules[\\/](@mantine|@floating-ui|react-remove-scroll|react-textarea-autosize|clsx|tabbable|use-sidecar|use-callback-ref|react-style-singleton|get-nonce|detect-node-es|tslib)[\\/]/, priority: 2 },
            { name: "vendor", test: /node_modules[\\/]/, priority: 1 },
          ],
        },
      },
    },
  },
  server: {
    proxy: {
      "/admin/api": "http://127.0.0.1:7420",
      "/api": "http://127.0.0.1:7420",
      "/openapi.json": "http://127.0.0.1:7420",
    },
  },
  test: {
    include: ["src/**/*.test.ts", "src/**/*.test.tsx"],
    environment: "node",
  },
});
