import { defineConfig } from "vitest/config";
import react from "@vitejs/plugin-react";

// The engine serves the build at / (embedded in the binary). `npm run dev` proxies the APIs
// to a running `mandato serve` on the default port.
export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    emptyOutDir: true,
    chunkSizeWarningLimit: 1200,
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
