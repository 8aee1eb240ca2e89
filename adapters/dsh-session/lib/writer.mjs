// Answer lines: compact JSON, lone surrogates escaped (as JSON.stringify writes them), any depth.
//
// JSON.stringify is used for the common answer; the walk below writes what it cannot: numbers
// beyond 2**53 (see numberText) and values too deep for its recursion.
//
// JSON.stringify recurses: a value a few thousand levels deep overflows the stack (and on a
// larger stack its cycle check makes deep values cost time quadratic in their depth: 100,000
// levels take seconds). An answer too deep for it is written by the walk below, which iterates
// over containers and leaves every scalar, key included, to JSON.stringify, so the text is
// byte for byte what JSON.stringify would write.

function writeIterative(value) {
  const parts = [];
  // Frames: [container, keys or null for arrays, next index].
  const stack = [];
  const open = (node) => {
    if (typeof node === "number") {
      parts.push(numberText(node));
      return;
    }
    if (node === null || typeof node !== "object") {
      const text = JSON.stringify(node);
      parts.push(text === undefined ? "null" : text);
      return;
    }
    if (Array.isArray(node)) {
      parts.push("[");
      stack.push([node, null, 0]);
    } else {
      parts.push("{");
      stack.push([node, Object.keys(node).filter((key) => writable(node[key])), 0]);
    }
  };
  open(value);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    const [node, keys, index] = frame;
    const length = keys === null ? node.length : keys.length;
    if (index >= length) {
      parts.push(keys === null ? "]" : "}");
      stack.pop();
      continue;
    }
    frame[2] = index + 1;
    if (index > 0) parts.push(",");
    if (keys === null) {
      open(node[index]);
    } else {
      parts.push(JSON.stringify(keys[index]), ":");
      open(node[keys[index]]);
    }
  }
  return parts.join("");
}

/**
 * A number as JSON text that every reader maps back to this double. JSON.stringify writes an
 * integral double between 2**53 and 1e21 in plain digits, shortest round trip: 9.007199254740993e17
 * becomes "900719925474099300", which a reader of integers (the runner's) takes for an integer that
 * is not this double (900719925474099328). Such a number is written in exponent form instead
 * ("9.007199254740993e+17"), which reads back as exactly this double everywhere.
 */
function numberText(value) {
  if (Number.isInteger(value) && !Number.isSafeInteger(value) && Math.abs(value) < 1e21) return value.toExponential();
  return JSON.stringify(value) ?? "null";
}

function writable(value) {
  return value !== undefined && typeof value !== "function" && typeof value !== "symbol";
}

/** One answer as one line of JSON text (without its newline). */
export function writeAnswer(answer) {
  let text;
  try {
    text = JSON.stringify(answer);
  } catch (error) {
    // Too deep for JSON.stringify's recursion (it fails fast, at a few thousand levels).
    if (!(error instanceof RangeError)) throw error;
    return writeIterative(answer);
  }
  // Only a number beyond 2**53 has 16 or more digits in a row outside a string; a text without
  // such a run needs no second look (one with a long digit run in a string is merely rewritten).
  return /\d{16}/.test(text) ? writeIterative(answer) : text;
}
