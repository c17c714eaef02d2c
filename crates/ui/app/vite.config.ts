import { defineConfig } from "vite";
import preact from "@preact/preset-vite";
import { pagePaths } from "./src/pages";

// Asset URLs are relative: the server writes a <base href> for the path
// prefix the UI is reached under (`/`, `/prometheus`, --web.route-prefix or
// the path of --web.external-url), so one build works under any prefix.
export default defineConfig({
  base: "./",
  plugins: [
    preact(),
    {
      name: "cairn-routes",
      generateBundle() {
        this.emitFile({ type: "asset", fileName: "routes.json", source: JSON.stringify(pagePaths()) });
      },
    },
  ],
  build: {
    outDir: "../dist",
    emptyOutDir: true,
    target: "es2022",
    chunkSizeWarningLimit: 1200,
  },
});
