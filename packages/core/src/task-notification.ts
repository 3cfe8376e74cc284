// The `<task-notification>` envelope: how a finished fork is reported into its parent's conversation,
// the same envelope in-process fork agents use. Rendered with every XML entity escaped, so no text a
// fork writes can close the envelope early; parsed back exactly.
import type { MessageParam } from "@forkd/protocol";
import { NotificationParseError } from "./errors.js";
import type { ForkOutcome } from "./fork-subagent.js";
import { totalTokensOf } from "./usage.js";
import { escapeXml, unescapeXml } from "./xml.js";

/** How the fork ended. */
export type TaskNotificationStatus = "completed" | "failed" | "killed" | "timeout";

const STATUSES: readonly TaskNotificationStatus[] = ["completed", "failed", "killed", "timeout"];

/** The usage line. */
export interface TaskNotificationUsage {
  /** Every token of every kind the fork used. */
  totalTokens: number;
  /** Tool calls the fork made. */
  toolUses: number;
  /** @unit ms */
  durationMs: number;
  /** `null` when the model could not be priced; absent when not known. @unit USD */
  costUsd?: number | null;
}

/** A fork's notification to its parent. */
export interface TaskNotification {
  /** The fork's run id. */
  taskId: string;
  /** The parent's fork call this answers, when it was started by one. */
  toolUseId?: string;
  status: TaskNotificationStatus;
  /** One line for the parent, e.g. `Fork "slice 1" completed`. */
  summary: string;
  /** The fork's final text, or what went wrong. */
  result?: string;
  usage?: TaskNotificationUsage;
}

function element(name: string, value: string): string {
  return `<${name}>${escapeXml(value)}</${name}>`;
}

function renderUsage(usage: TaskNotificationUsage): string {
  const parts = [
    `total_tokens: ${usage.totalTokens}`,
    `tool_uses: ${usage.toolUses}`,
    `duration_ms: ${Math.round(usage.durationMs)}`,
  ];
  if (usage.costUsd !== undefined)
    parts.push(`cost_usd: ${usage.costUsd === null ? "unknown" : usage.costUsd}`);
  return parts.join("; ");
}

/** Renders the envelope. Every field's text is escaped (`& < > " '`). */
export function renderTaskNotification(notification: TaskNotification): string {
  const lines = ["<task-notification>", element("task-id", notification.taskId)];
  if (notification.toolUseId !== undefined) lines.push(element("tool-use-id", notification.toolUseId));
  lines.push(element("status", notification.status), element("summary", notification.summary));
  if (notification.result !== undefined) lines.push(element("result", notification.result));
  if (notification.usage !== undefined) lines.push(element("usage", renderUsage(notification.usage)));
  lines.push("</task-notification>");
  return lines.join("\n");
}

function field(body: string, name: string): string | undefined {
  const match = new RegExp(`<${name}>([^<]*)</${name}>`).exec(body);
  return match === null ? undefined : unescapeXml(match[1] ?? "");
}

function parseUsage(text: string): TaskNotificationUsage {
  const values = new Map<string, string>();
  for (const part of text.split(/[;\n,]/)) {
    const [key, ...rest] = part.split(":");
    if (key !== undefined && rest.length > 0) values.set(key.trim().toLowerCase(), rest.join(":").trim());
  }
  const number = (key: string) => {
    const value = Number(values.get(key));
    return Number.isFinite(value) ? value : 0;
  };
  const usage: TaskNotificationUsage = {
    totalTokens: number("total_tokens"),
    toolUses: number("tool_uses"),
    durationMs: number("duration_ms"),
  };
  const cost = values.get("cost_usd");
  if (cost !== undefined) usage.costUsd = Number.isFinite(Number(cost)) ? Number(cost) : null;
  return usage;
}

/**
 * Parses the first `<task-notification>` envelope in `text` (text around it is allowed).
 * @throws {@link NotificationParseError} when there is none, or it lacks a task id, status or summary.
 */
export function parseTaskNotification(text: string): TaskNotification {
  const match = /<task-notification>([\s\S]*?)<\/task-notification>/.exec(text);
  if (match === null) throw new NotificationParseError("no <task-notification> envelope in the text");
  const body = match[1] ?? "";
  const taskId = field(body, "task-id");
  const status = field(body, "status");
  const summary = field(body, "summary");
  if (taskId === undefined || summary === undefined) {
    throw new NotificationParseError("the <task-notification> lacks its <task-id> or <summary>");
  }
  if (!STATUSES.includes(status as TaskNotificationStatus)) {
    throw new NotificationParseError(
      `the <task-notification> has an unknown status ${JSON.stringify(status)}`,
    );
  }
  const notification: TaskNotification = { taskId, status: status as TaskNotificationStatus, summary };
  const toolUseId = field(body, "tool-use-id");
  if (toolUseId !== undefined) notification.toolUseId = toolUseId;
  const result = field(body, "result");
  if (result !== undefined) notification.result = result;
  const usage = field(body, "usage");
  if (usage !== undefined) notification.usage = parseUsage(usage);
  return notification;
}

/** What a notification needs beyond the outcome. */
export interface NotificationContext {
  /** The fork's description (shown in the summary). */
  description?: string;
  toolUseId?: string;
  /** Tool calls made, when the outcome does not say (a failed run). */
  toolUses?: number;
  /** Run time, when the outcome does not say. @unit ms */
  durationMs?: number;
}

/** The notification of a finished fork. A completed run's own counts win over `context`'s. */
export function taskNotificationFromOutcome(
  outcome: ForkOutcome,
  context: NotificationContext = {},
): TaskNotification {
  const name = `Fork "${context.description ?? outcome.runId}"`;
  const usage = outcome.status === "completed" ? outcome.result.usage : outcome.usage;
  const notification: TaskNotification = {
    taskId: outcome.runId,
    status: outcome.status,
    summary: "",
    usage: {
      totalTokens: totalTokensOf(usage),
      toolUses: outcome.status === "completed" ? outcome.result.tool_uses : (context.toolUses ?? 0),
      durationMs: outcome.status === "completed" ? outcome.result.duration_ms : (context.durationMs ?? 0),
      costUsd: usage.cost_usd,
    },
  };
  if (context.toolUseId !== undefined) notification.toolUseId = context.toolUseId;
  switch (outcome.status) {
    case "completed":
      notification.summary = `${name} completed`;
      notification.result = outcome.result.final_text;
      break;
    case "failed":
      notification.summary = `${name} failed: ${outcome.error.message}`;
      notification.result = `Error ${outcome.error.code}: ${outcome.error.message}`;
      break;
    case "timeout":
      notification.summary = `${name} timed out`;
      notification.result = `Error ${outcome.error.code}: ${outcome.error.message}`;
      break;
    case "killed":
      notification.summary = `${name} was killed: ${outcome.reason}`;
      notification.result = outcome.reason;
      break;
    default: {
      const unreachable: never = outcome;
      throw new TypeError(`unknown outcome ${JSON.stringify(unreachable)}`);
    }
  }
  return notification;
}

/** The notification as a user message to append to the parent's conversation. */
export function taskNotificationMessage(notification: TaskNotification): MessageParam {
  return { role: "user", content: [{ type: "text", text: renderTaskNotification(notification) }] };
}
