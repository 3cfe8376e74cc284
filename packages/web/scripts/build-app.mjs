// Builds the page into dist/public: app/main.ts bundled with esbuild (the NATS v3 browser client
// included, so the page needs no CDN and works offline), index.html, app.css and the icon copied.
import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "dist", "public");
await mkdir(out, { recursive: true });

// The page shares the CLI's run tracker and the pricing table, whose packages import Node built-ins
// for parts the page never calls (hashing, pricing files). Those imports resolve to a stub that
// throws if ever called, instead of failing the build or shipping Node code.
const nodeBuiltinsStub = {
  name: "node-builtins-stub",
  setup(plugin) {
    plugin.onResolve({ filter: /^node:/ }, (args) => ({ path: args.path, namespace: "node-stub" }));
    plugin.onLoad({ filter: /.*/, namespace: "node-stub" }, (args) => ({
      contents: `module.exports = new Proxy({}, { get: (_, name) => () => { throw new Error(${JSON.stringify(args.path)} + "." + String(name) + " is not available in the browser"); } });`,
      loader: "js",
    }));
  },
};

const result = await build({
  entryPoints: [join(root, "app", "main.ts")],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022"],
  minify: true,
  sourcemap: "linked",
  conditions: ["@forkd/source"],
  define: { "process.env.FORKD_PRICES": "undefined", "process.env.NODE_ENV": '"production"' },
  plugins: [nodeBuiltinsStub],
  legalComments: "linked",
  metafile: true,
  logLevel: "warning",
});
for (const file of ["index.html", "app.css", "favicon.svg"]) {
  await copyFile(join(root, "app", file), join(out, file));
}
const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0);
process.stdout.write(`@forkd/web: page built into ${out} (${Math.round(bytes / 1024)} KiB)\n`);
