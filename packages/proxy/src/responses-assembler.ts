// Rebuilds the output items a streamed Responses API reply carried, from its typed events: the
// items an agent sends back in the next request's `input`.
import { parseJsonText } from "@forkd/protocol/internal";
import { StreamAssemblyError } from "./errors.js";
import { SseAssembler } from "./sse.js";

/** An output item of a Responses reply (`message`, `function_call`, `reasoning`…), as the API gave it. */
export type ResponsesItem = Record<string, unknown> & { type: string };

/**
 * Parses a Responses event stream incrementally. Each `response.output_item.done` gives an item
 * whole; `response.completed` (or `response.incomplete`) ends the reply, with the response's own
 * `output` when it lists one.
 */
export class ResponsesAssembler extends SseAssembler<ResponsesItem[]> {
  readonly #items: ResponsesItem[] = [];

  protected onData(data: string): ResponsesItem[] | undefined {
    const event = parseJsonText(data) as {
      type?: string;
      output_index?: number;
      item?: ResponsesItem;
      response?: { output?: ResponsesItem[] };
    };
    switch (event.type) {
      case "response.output_item.done":
        if (event.item === undefined) throw new StreamAssemblyError("output_item.done without an item");
        this.#items[event.output_index ?? this.#items.length] = event.item;
        return undefined;
      case "response.completed":
      case "response.incomplete": {
        const output = event.response?.output;
        return Array.isArray(output) && output.length > 0 ? output : this.#items.filter(Boolean);
      }
      case "response.failed":
      case "error":
        throw new StreamAssemblyError(`the stream carried an error: ${data.slice(0, 500)}`);
      default:
        // Deltas and the like: the item's `done` event repeats them whole.
        return undefined;
    }
  }
}
