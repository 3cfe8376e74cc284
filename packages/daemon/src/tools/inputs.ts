// The built-in tools' inputs, with the names Claude Code's tools use, checked before anything runs.
// Lenient where models are sloppy: numbers and booleans given as strings, and `null` for "not given".
import { z } from "zod";

const count = z
  .union([
    z.number(),
    z
      .string()
      .regex(/^\s*\d+\s*$/, "expected a whole number")
      .transform(Number),
  ])
  .pipe(z.number().int().nonnegative());
const positive = count.pipe(z.number().positive());
const flag = z.union([z.boolean(), z.enum(["true", "false"]).transform((v) => v === "true")]);

export const ReadInputSchema = z.object({
  file_path: z.string().min(1),
  offset: count.optional(),
  limit: positive.optional(),
});

export const GlobInputSchema = z.object({
  pattern: z.string().min(1),
  path: z.string().optional(),
});

export const GrepInputSchema = z.object({
  pattern: z.string().min(1),
  path: z.string().optional(),
  glob: z.string().optional(),
  type: z.string().optional(),
  output_mode: z.enum(["content", "files_with_matches", "count"]).optional(),
  "-i": flag.optional(),
  "-n": flag.optional(),
  "-A": count.optional(),
  "-B": count.optional(),
  "-C": count.optional(),
  context: count.optional(),
  head_limit: count.optional(),
  offset: count.optional(),
  multiline: flag.optional(),
});

export const BashInputSchema = z.object({
  command: z.string().min(1),
  timeout: positive.optional(),
  description: z.string().optional(),
  run_in_background: flag.optional(),
});

export const WriteInputSchema = z.object({
  file_path: z.string().min(1),
  content: z.string(),
});

export const EditInputSchema = z.object({
  file_path: z.string().min(1),
  old_string: z.string(),
  new_string: z.string(),
  replace_all: flag.optional(),
});

/** The parsed input, or a message the model can act on. */
export type ParsedInput<T> = { ok: true; value: T } | { ok: false; message: string };

/** Checks a tool call's input against `schema`; `null` fields count as absent. */
export function parseToolInput<T>(tool: string, schema: z.ZodType<T>, input: unknown): ParsedInput<T> {
  const cleaned =
    typeof input === "object" && input !== null && !Array.isArray(input)
      ? Object.fromEntries(Object.entries(input).filter(([, value]) => value !== null))
      : input;
  const result = schema.safeParse(cleaned);
  if (result.success) return { ok: true, value: result.data };
  const problems = result.error.issues.map((issue) => {
    const where = issue.path.length === 0 ? "input" : issue.path.map(String).join(".");
    return `${where}: ${issue.message}`;
  });
  return {
    ok: false,
    message: `Invalid input for ${tool}: ${problems.join("; ")}. Fix the input and call ${tool} again.`,
  };
}
