// RFC 5322 §2.1.1: a line of a message MUST be at most 998 characters, CRLF excluded. A header field is
// folded at whitespace only, so its longest run without any decides whether it can be made to fit.

export const MAX_LINE = 998;

/** The longest run of characters in `value` without a space, tab or line break. */
export function longestUnbrokenRun(value: string): number {
  let run = 0;
  let longest = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    run = c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d ? 0 : run + 1;
    if (run > longest) longest = run;
  }
  return longest;
}

/** Whether `Name: value` folds into lines of at most 998 characters (the name and ': ' share the first). */
export function headerFolds(name: string, value: string): boolean {
  return name.length + 2 + value.length <= MAX_LINE || name.length + 2 + longestUnbrokenRun(value) <= MAX_LINE;
}

/**
 * Whether a display name can go in an address header (From, To, Cc, Reply-To) within the line limit. The
 * name is written as a quoted string, which folds only at its spaces, after up to `Reply-To: ` and before a
 * comma: its longest run without spaces, quotes and escapes included, must leave room for them.
 */
export function displayNameFolds(name: string): boolean {
  const quoted = `"${name.replace(/[\\"]/g, '\\$&')}",`;
  return 'Reply-To: '.length + longestUnbrokenRun(quoted) <= MAX_LINE;
}

/**
 * Header fields whose value is unstructured text (RFC 5322 §3.6.5 Subject and Comments; X- fields by
 * convention), so that RFC 2047 encoded words may stand for it: one that would not fold is written so.
 */
export const isUnstructuredHeader = (name: string): boolean => /^(x-|subject$|comments$)/i.test(name);
