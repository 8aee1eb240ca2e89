// The lossless reader of request lines (spec/01-json.md, SESSION-LOSSLESS-TEXT.1-.6).
//
// A request line is read to one JSON value or refused with the rule it breaks, the same rule the
// reference reader (`sessionspec.storage.losslessparse.parse`) names, so that a fault of this
// adapter's reading is never reported as a fault of the upstream. `JSON.parse` would not do:
// it rounds `-18446744073709551616`, keeps the last of two equal keys, and reads `-0` as -0.
//
// The grammar is @streamparser/json's: its Tokenizer is a byte-level state machine and its
// TokenParser assembles values on an explicit stack, so a value 100,000 (or 10,000,000) deep is
// read without recursion. This module only adds the decisions RFC 8259 leaves open:
//   .1 strict UTF-8 (a fatal TextDecoder, before anything else),
//   .2 a byte-order mark is not JSON text (the tokenizer would skip one),
//   .3 NaN/Infinity and numbers overflowing to infinity,
//   .4 integers beyond +-(2**53-1), by their length first,
//   .5 -0 in every spelling,
//   .6 a key named twice, even with equal values,
// and checks them in the order the reference does: a number when the parser takes it as a value
// (document order), a duplicate key when its object closes (after its values), so the first
// fault in the text wins.

import Tokenizer, { TokenizerError } from "@streamparser/json/tokenizer.js";
import TokenParser from "@streamparser/json/tokenparser.js";
import TokenType from "@streamparser/json/utils/types/tokenType.js";

export const UTF8 = "SESSION-LOSSLESS-TEXT.1";
export const SYNTAX = "SESSION-LOSSLESS-TEXT.2";
export const NON_FINITE = "SESSION-LOSSLESS-TEXT.3";
export const UNSAFE_INT = "SESSION-LOSSLESS-TEXT.4";
export const NEGATIVE_ZERO = "SESSION-LOSSLESS-TEXT.5";
export const DUPLICATE_KEY = "SESSION-LOSSLESS-TEXT.6";

/** 2**53-1 has 16 digits and JSON allows no leading zeros: a longer integer is out of range by its length. */
const MAX_INT_DIGITS = 16;

/** A line this reader refuses, with the SESSION-LOSSLESS-TEXT rule it breaks. */
export class JsonRefusal extends Error {
  constructor(rule, message) {
    super(message);
    this.rule = rule;
  }
}

const START_STATE = 0; // Tokenizer's state between tokens
const VALUE_STATE = 0; // TokenParser's state while it waits for a value
const KEY_STATE = 1; // ... while it waits for an object key

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A JSON number's text as a JavaScript number, or the refusal the reference gives it. */
export function readNumber(text) {
  const integer = !/[.eE]/.test(text);
  if (integer) {
    if (text === "-0") throw new JsonRefusal(NEGATIVE_ZERO, "negative zero (-0)");
    const digits = text.length - (text.startsWith("-") ? 1 : 0);
    if (digits > MAX_INT_DIGITS) {
      throw new JsonRefusal(UNSAFE_INT, `integer of ${digits} digits is outside +-(2**53-1) (at most ${MAX_INT_DIGITS} digits)`);
    }
    const value = Number(text);
    if (!Number.isSafeInteger(value)) throw new JsonRefusal(UNSAFE_INT, `integer ${text} is outside +-(2**53-1)`);
    return value;
  }
  const value = Number(text);
  if (!Number.isFinite(value)) throw new JsonRefusal(NON_FINITE, `number ${text.slice(0, 40)} overflows to infinity`);
  if (Object.is(value, -0)) throw new JsonRefusal(NEGATIVE_ZERO, `negative zero (${text.slice(0, 40)})`);
  return value;
}

/** Numbers stay text until the parser takes them as a value (a number where none may stand is syntax, as in the reference). */
class TextNumberTokenizer extends Tokenizer {
  constructor() {
    super();
    // The tokenizer starts in a state that skips a byte-order mark, and stays in it through
    // punctuation and whitespace until the first scalar ("[\uFEFF1]" would read as [1]). A BOM
    // is never JSON text here (.2), so it starts where a BOM is just an unexpected byte.
    this.state = START_STATE;
    // Its string accumulator decodes each run of non-ASCII bytes with a TextDecoder that drops a
    // leading U+FEFF ("\uFEFF" in a string read as ""): strings are decoded keeping it.
    this.bufferedString.decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  }

  parseNumber(text) {
    return text;
  }
}


class DuplicateCheckingParser extends TokenParser {
  constructor() {
    super();
    /** Objects that were given a key twice, with the first such key (refused when the object closes). */
    this.duplicated = new Map();
  }

  write(token) {
    if (token.token === TokenType.NUMBER && !token.partial && this.state === VALUE_STATE) {
      token = { ...token, value: readNumber(token.value) };
    }
    if (this.state === KEY_STATE && token.token === TokenType.STRING && !token.partial
        && Object.hasOwn(this.value, token.value) && !this.duplicated.has(this.value)) {
      this.duplicated.set(this.value, token.value);
    }
    super.write(token);
  }
}

/**
 * The refusal for what the tokenizer or the parser found wrong, named as the reference names it.
 * The reference reads where a value is expected (`valueExpected`) as Python's json does: the
 * longest number the grammar allows, then NaN, Infinity and -Infinity (refused by .3), and only
 * then fails as syntax. The tokenizer instead fails inside an unfinished number (`-0.x`, `1e+`)
 * or at the first letter of NaN; the number read so far, and the word, are judged here.
 */
function refusalFor(error, bytes, tokenizer, valueExpected) {
  const message = String(error?.message ?? error);
  if (valueExpected && error instanceof TokenizerError) {
    const state = /\(state: (\w+)\)|in state (\w+)/.exec(message);
    const where = /absolute position "(\d+)"/.exec(message);
    const name = state?.[1] ?? state?.[2];
    const position = where === null ? bytes.length : Number(where[1]);
    if (name === "NUMBER_AFTER_FULL_STOP" || name === "NUMBER_AFTER_E" || name === "NUMBER_AFTER_E_AND_SIGN") {
      // Python's number pattern backs off to the number before the unfinished fraction or exponent.
      readNumber(String(tokenizer.bufferedNumber.toString()).replace(/(\.|[eE][+-]?)$/, ""));
    } else if (name === "NUMBER_AFTER_INITIAL_MINUS" && startsWithAt(bytes, position - 1, "-Infinity")) {
      return new JsonRefusal(NON_FINITE, "-Infinity is not a JSON number");
    } else if (name === "START" || name === "BOM_OR_START") {
      const word = ["NaN", "Infinity"].find((candidate) => startsWithAt(bytes, position, candidate));
      if (word !== undefined) return new JsonRefusal(NON_FINITE, `${word} is not a JSON number`);
    }
  }
  return new JsonRefusal(SYNTAX, `not valid JSON: ${message}`);
}

function startsWithAt(bytes, at, word) {
  if (at < 0 || at + word.length > bytes.length) return false;
  for (let i = 0; i < word.length; i++) if (bytes[at + i] !== word.charCodeAt(i)) return false;
  return true;
}

/**
 * One request line (bytes, without its terminator) as a JSON value: plain objects (an own
 * `__proto__` key stays an own data key) and arrays, numbers only within what a double holds
 * exactly, strings with lone surrogates kept. Throws JsonRefusal.
 */
export function readLine(bytes) {
  try {
    strictUtf8.decode(bytes);
  } catch {
    throw new JsonRefusal(UTF8, "invalid UTF-8");
  }
  let first = 0;
  while (first < bytes.length && (bytes[first] === 0x20 || bytes[first] === 0x09 || bytes[first] === 0x0a || bytes[first] === 0x0d)) first++;
  // The tokenizer skips a byte-order mark before the first token (after leading whitespace too).
  if (startsWithAt(bytes, first, "\xef\xbb\xbf")) {
    throw new JsonRefusal(SYNTAX, "not valid JSON: a byte-order mark is not part of JSON text");
  }
  const tokenizer = new TextNumberTokenizer();
  const parser = new DuplicateCheckingParser();
  let root;
  let done = false;
  tokenizer.onToken = (token) => parser.write(token);
  parser.onValue = ({ value, stack }) => {
    if (value !== null && typeof value === "object" && parser.duplicated.has(value)) {
      throw new JsonRefusal(DUPLICATE_KEY, `object key ${JSON.stringify(parser.duplicated.get(value))} appears more than once`);
    }
    if (stack.length === 0) {
      root = value;
      done = true;
    }
  };
  parser.onError = (error) => {
    throw error;
  };
  tokenizer.onError = (error) => {
    throw error;
  };
  try {
    tokenizer.write(bytes);
    tokenizer.end();
  } catch (error) {
    if (error instanceof JsonRefusal) throw error;
    throw refusalFor(error, bytes, tokenizer, parser.state === VALUE_STATE && !done);
  }
  if (!done) throw new JsonRefusal(SYNTAX, "not valid JSON: no value");
  return root;
}
