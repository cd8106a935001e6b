import { readLines } from "./lines.js";

/** A server-sent event: `event` defaults to `message`; `data` lines are joined with `\n`. */
export interface SseEvent {
  event: string;
  data: string;
}

/** A comment line between two events (`: alive`, a server's keep-alive), its text after the colon. */
export interface SseComment {
  comment: string;
}

/**
 * Parses a `text/event-stream` body (WHATWG rules: `field: value` lines, a blank line ends an event,
 * `:` starts a comment, CRLF or LF line ends). Chunks may split lines or characters anywhere.
 */
export async function* parseSse(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<SseEvent> {
  for await (const part of parseSseParts(chunks)) if (!("comment" in part)) yield part;
}

/**
 * {@link parseSse}, with each comment line that stands between events as it comes (one inside an event,
 * among its fields, is skipped): for a reader that passes a stream on as it reads it.
 */
export async function* parseSseParts(
  chunks: AsyncIterable<Uint8Array | string>,
): AsyncGenerator<SseEvent | SseComment> {
  let event = "";
  let data: string[] = [];

  function* takeLine(line: string): Generator<SseEvent | SseComment> {
    if (line === "") {
      if (data.length > 0) yield { event: event || "message", data: data.join("\n") };
      event = "";
      data = [];
      return;
    }
    if (line.startsWith(":")) {
      if (event === "" && data.length === 0) yield { comment: line.slice(1).trimStart() };
      return;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    // `id` and `retry` do not matter to a client that does not reconnect.
  }

  // CRLF or LF line ends; bytes through one streaming decoder (a character split across chunks stays whole).
  for await (const line of readLines(chunks, { crlf: true })) yield* takeLine(line);
  // A last event the server did not end with a blank line is still delivered.
  yield* takeLine("");
}
