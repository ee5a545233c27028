/**
 * The shape of a JSON body checked while its bytes arrive, before anything is parsed: how deep its
 * arrays and objects nest and how many members and items they hold together. A body past either
 * bound is refused at the byte that crosses it, so the cost of a hostile body (2 million members,
 * 16 MB of `[`) is the cost of its first few thousand tokens, not of parsing, validating and
 * reporting all of it. Strings are skipped with native searches (a 27 MB base64 member costs two
 * indexOf calls); only structure outside strings is walked byte by byte.
 *
 * The count is of structure, not of validity: whatever is not JSON passes through for JSON.parse
 * to refuse.
 */

export interface JsonShapeLimits {
  /** Arrays and objects nested inside each other, the outermost counted. */
  maxDepth: number;
  /** Members of objects and items of arrays, together, in the whole body. */
  maxMembers: number;
}

/** Both interfaces' bodies (specs/openapi.yaml, specs/openrpc.json): their deepest schema nests a few levels, a batch of 100 calls holds some 2,000 members. */
export const JSON_SHAPE_LIMITS: JsonShapeLimits = { maxDepth: 32, maxMembers: 10_000 };

/** Thrown by JsonShapeGuard.feed at the byte that crosses a limit. */
export class JsonShapeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JsonShapeError';
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;

const isWhitespace = (byte: number) => byte === SPACE || byte === TAB || byte === LF || byte === CR;

/**
 * Fed a body's chunks in order; throws JsonShapeError from `feed` at the first chunk that makes the
 * body nest deeper than `maxDepth` or hold more than `maxMembers` members and items.
 */
export class JsonShapeGuard {
  private depth = 0;
  private members = 0;
  private inString = false;
  /** The chunk ended right after a backslash inside a string: the next byte is escaped. */
  private escaped = false;
  /** A container just opened: its first non-blank byte tells whether it holds a first member. */
  private opened = false;

  constructor(private readonly limits: JsonShapeLimits = JSON_SHAPE_LIMITS) {}

  feed(chunk: Uint8Array): void {
    let at = 0;
    const length = chunk.length;
    while (at < length) {
      if (this.inString) {
        at = this.skipString(chunk, at);
        continue;
      }
      const byte = chunk[at]!;
      if (this.opened && !isWhitespace(byte)) {
        this.opened = false;
        if (byte !== RBRACE && byte !== RBRACKET) this.countMember();
      }
      if (byte === QUOTE) this.inString = true;
      else if (byte === LBRACE || byte === LBRACKET) {
        this.depth += 1;
        if (this.depth > this.limits.maxDepth)
          throw new JsonShapeError(`the body nests arrays and objects deeper than ${this.limits.maxDepth} levels, the limit`);
        this.opened = true;
      } else if (byte === RBRACE || byte === RBRACKET) {
        if (this.depth > 0) this.depth -= 1;
      } else if (byte === COMMA) this.countMember();
      at += 1;
    }
  }

  private countMember(): void {
    this.members += 1;
    if (this.members > this.limits.maxMembers) throw new JsonShapeError(`the body holds more than ${this.limits.maxMembers} members and items, the limit`);
  }

  /**
   * Inside a string from `at`: the index after its closing quote (and inString false), or the
   * chunk's end. Each search is bounded by the next quote, and the quote is searched again only once
   * passed (an escaped one), so a string of many escapes costs what its length does.
   */
  private skipString(chunk: Uint8Array, at: number): number {
    if (this.escaped) {
      this.escaped = false;
      at += 1;
    }
    // The next quote, searched again only once passed; the chunk's length when it holds none.
    let quote = -1;
    for (;;) {
      if (quote < at) {
        quote = chunk.indexOf(QUOTE, at);
        if (quote < 0) quote = chunk.length;
      }
      const backslash = at < quote ? chunk.subarray(at, quote).indexOf(BACKSLASH) : -1;
      if (backslash < 0) {
        if (quote >= chunk.length) return chunk.length;
        this.inString = false;
        return quote + 1;
      }
      at += backslash + 2;
      if (at > chunk.length) {
        this.escaped = true;
        return chunk.length;
      }
    }
  }
}

/** A whole body checked at once (JsonShapeGuard on one chunk). */
export function checkJsonShape(body: Uint8Array, limits: JsonShapeLimits = JSON_SHAPE_LIMITS): void {
  new JsonShapeGuard(limits).feed(body);
}
