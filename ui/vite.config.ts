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
        // React and the router change less often than the app: in their own chunk they stay
        // cached across releases. Screens are split by route (App.tsx), and the rest is left to
        // the bundler, which keeps what only some screens use (most Mantine inputs, forms) out
        // of the first page; a chunk of all of Mantine made the first page 30 kB (gzip) heavier.
        codeSplitting: {
          groups: [
            { name: "react", test: /node_modules[\\/](react|react-dom|scheduler|react-router)[\\/]/, priority: 3 },
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
