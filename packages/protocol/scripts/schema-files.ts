// What `pnpm --filter @forkd/protocol schema` writes: docs/schema/<name>.schema.json for every entry
// of protocolJsonSchemas(), and the generated field tables inside docs/protocol.md. Shared by the
// script that writes them and by the test that fails when the committed files are stale.
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { protocolJsonSchemas } from "../src/json-schema.js";

/** Root of the repository. */
export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** Where the JSON Schema files live. */
export const SCHEMA_DIR = join(REPO_ROOT, "docs", "schema");
/** The protocol reference, with generated field tables. */
export const PROTOCOL_DOC = join(REPO_ROOT, "docs", "protocol.md");
/** What to run when a generated file is stale. */
export const REGENERATE = "pnpm --filter @forkd/protocol schema";

/** File name to content: pretty JSON, two-space indent, trailing newline. */
export function schemaFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const [name, schema] of Object.entries(protocolJsonSchemas())) {
    files.set(`${name}.schema.json`, `${JSON.stringify(schema, null, 2)}\n`);
  }
  return files;
}

type JsonSchema = {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  default?: unknown;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: unknown;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  pattern?: string;
  minimum?: number;
  exclusiveMinimum?: number;
  maximum?: number;
};

const code = (text: string) => `\`${text}\``;
const cell = (text: string) => text.replaceAll("|", "\\|").replaceAll("\n", " ");

function discriminator(variants: JsonSchema[]): string | undefined {
  const first = variants[0]?.properties;
  if (!first) return undefined;
  return Object.keys(first).find((key) =>
    variants.every((v) => v.type === "object" && v.properties?.[key]?.const !== undefined),
  );
}

function typeOf(s: JsonSchema): string {
  if (s.const !== undefined) return code(JSON.stringify(s.const));
  if (s.enum) return s.enum.map((v) => code(JSON.stringify(v))).join(" | ");
  const union = s.oneOf ?? s.anyOf;
  if (union) {
    const key = discriminator(union);
    if (key)
      return `object, by ${code(key)}: ${union.map((v) => code(JSON.stringify(v.properties?.[key]?.const))).join(" | ")}`;
    return union.map(typeOf).join(" | ");
  }
  if (Array.isArray(s.type)) return s.type.map((type) => typeOf({ ...s, type })).join(" | ");
  switch (s.type) {
    case "array":
      return `array of ${s.items ? typeOf(s.items) : "any JSON"}${s.maxItems === undefined ? "" : ` (at most ${s.maxItems})`}`;
    case "object":
      return s.additionalProperties !== undefined && s.properties
        ? "object (open: unknown fields kept)"
        : "object";
    case "string": {
      const parts = ["string"];
      const min = s.minLength ?? 0;
      if (s.maxLength !== undefined)
        parts.push(min > 0 ? `${min}–${s.maxLength} chars` : `at most ${s.maxLength} chars`);
      else if (min === 1) parts.push("non-empty");
      else if (min > 1) parts.push(`at least ${min} chars`);
      if (s.pattern) parts.push(code(s.pattern));
      return parts.join(", ");
    }
    case "integer":
    case "number": {
      let text = s.type;
      if (s.exclusiveMinimum !== undefined) text += ` > ${s.exclusiveMinimum}`;
      else if (s.minimum !== undefined && s.minimum > Number.MIN_SAFE_INTEGER) text += ` ≥ ${s.minimum}`;
      if (s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER) text += `, ≤ ${s.maximum}`;
      return text;
    }
    case undefined:
      return "any JSON";
    default:
      return s.type;
  }
}

interface Row {
  field: string;
  type: string;
  required: boolean;
  default?: unknown;
  description: string;
}

function rows(s: JsonSchema, path: string, depth: number, omit: Set<string>, note = ""): Row[] {
  const out: Row[] = [];
  for (const [key, prop] of Object.entries(s.properties ?? {})) {
    if (path === "" && omit.has(key)) continue;
    const field = `${path}${key}`;
    const row: Row = {
      field,
      type: typeOf(prop),
      required: s.required?.includes(key) ?? false,
      description: `${note}${prop.description ?? ""}`.trim(),
    };
    if (prop.default !== undefined) row.default = prop.default;
    out.push(row);
    if (depth <= 1) continue;
    const union = prop.oneOf ?? prop.anyOf;
    const key2 = union && discriminator(union);
    if (union && key2) {
      for (const variant of union) {
        const tag = JSON.stringify(variant.properties?.[key2]?.const);
        const rest = { ...variant, properties: { ...variant.properties } };
        delete rest.properties[key2];
        out.push(...rows(rest, `${field}.`, depth - 1, omit, `(${key2} = ${tag}) `));
      }
    } else if (prop.type === "object" && prop.properties && prop.additionalProperties === undefined) {
      out.push(...rows(prop, `${field}.`, depth - 1, omit));
    }
  }
  return out;
}

/** A markdown table of one schema's fields. */
export function fieldTable(
  schema: object,
  options: { at?: string; depth?: number; omit?: string[] } = {},
): string {
  let s = schema as JsonSchema;
  for (const key of options.at ? options.at.split(".") : []) {
    const next = s.properties?.[key];
    if (!next) throw new Error(`no field ${options.at}`);
    s = next.anyOf?.find((v) => v.type === "object") ?? next;
  }
  const table = [["Field", "Type", "Req.", "Default", "Description"]];
  for (const row of rows(s, "", options.depth ?? 2, new Set(options.omit ?? []))) {
    const def = row.default === undefined ? "" : code(JSON.stringify(row.default));
    table.push([code(row.field), row.type, row.required ? "yes" : "", def, row.description].map(cell));
  }
  return formatTable(table);
}

// Pads the columns the way Biome formats markdown tables, so `biome check --write docs` leaves them alone.
function formatTable(table: string[][]): string {
  const width = (text: string) => [...text].length;
  const widths = table[0]!.map((_, i) => Math.max(3, ...table.map((row) => width(row[i]!))));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => c + " ".repeat(widths[i]! - width(c))).join(" | ")} |`;
  const [head, ...body] = table;
  return [line(head!), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}

/** Collapses the padding of markdown table rows, to compare tables whatever their formatting. */
export function normaliseTables(markdown: string): string {
  return markdown
    .split("\n")
    .map((l) =>
      l.startsWith("|") ? l.replace(/ {2,}/g, " ").replace(/-{3,}/g, "---").replace(/ +\|/g, " |") : l,
    )
    .join("\n");
}

const MARKER = /<!-- fields: ([a-z0-9-]+)((?: [a-z]+=[^ ]+)*) -->\n[\s\S]*?<!-- \/fields -->/g;

/**
 * Fills every `<!-- fields: <schema> [at=a.b] [depth=N] [omit=x,y] -->` … `<!-- /fields -->` block of
 * `markdown` with the field table of that schema.
 */
export function renderDoc(markdown: string, schemas: Record<string, object> = protocolJsonSchemas()): string {
  return markdown.replace(MARKER, (_all, name: string, args: string) => {
    const schema = schemas[name];
    if (!schema) throw new Error(`docs/protocol.md names an unknown schema ${name}`);
    const options: { at?: string; depth?: number; omit?: string[] } = {};
    for (const arg of args.trim().split(" ").filter(Boolean)) {
      const [key, value = ""] = arg.split("=");
      if (key === "at") options.at = value;
      else if (key === "depth") options.depth = Number(value);
      else if (key === "omit") options.omit = value.split(",");
      else throw new Error(`unknown option ${arg} in the fields marker of ${name}`);
    }
    return `<!-- fields: ${name}${args} -->\n${fieldTable(schema, options)}\n<!-- /fields -->`;
  });
}
