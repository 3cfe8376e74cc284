// Writes docs/schema/<name>.schema.json for every wire message and refreshes the generated field
// tables of docs/protocol.md. Run: pnpm --filter @forkd/protocol schema
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { PROTOCOL_DOC, REPO_ROOT, renderDoc, SCHEMA_DIR, schemaFiles } from "./schema-files.js";

const files = schemaFiles();
mkdirSync(SCHEMA_DIR, { recursive: true });
for (const name of readdirSync(SCHEMA_DIR)) {
  if (name.endsWith(".schema.json") && !files.has(name)) {
    rmSync(join(SCHEMA_DIR, name));
    console.log(`removed ${relative(REPO_ROOT, join(SCHEMA_DIR, name))}`);
  }
}
for (const [name, content] of files) writeFileSync(join(SCHEMA_DIR, name), content);
console.log(`wrote ${files.size} schemas to ${relative(REPO_ROOT, SCHEMA_DIR)}`);

const doc = readFileSync(PROTOCOL_DOC, "utf8");
const rendered = renderDoc(doc);
if (rendered !== doc) {
  writeFileSync(PROTOCOL_DOC, rendered);
  console.log(`updated the field tables of ${relative(REPO_ROOT, PROTOCOL_DOC)}`);
}
