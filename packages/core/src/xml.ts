// XML text escaping for the envelopes and attributes core writes into conversations.

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
};

const UNESCAPES: Record<string, string> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&apos;": "'",
};

/** Escapes all five XML entities (`& < > " '`), so text can stand in an element or an attribute. */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

/** Undoes {@link escapeXml}. Only the five entities it writes are decoded; anything else stays as is. */
export function unescapeXml(text: string): string {
  return text.replace(/&(?:amp|lt|gt|quot|apos);/g, (entity) => UNESCAPES[entity] ?? entity);
}
