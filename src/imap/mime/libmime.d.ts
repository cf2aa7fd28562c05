// The parts of libmime (a dependency of mailparser, used directly here) that the IMAP server calls.
declare module 'libmime' {
  interface ParsedHeaderValue {
    value: string;
    params: Record<string, string>;
  }
  const libmime: {
    parseHeaderValue(str: string): ParsedHeaderValue;
    decodeWords(str: string): string;
  };
  export default libmime;
}

declare module 'libmime/lib/charset.js' {
  const charset: { decode(buf: Buffer, fromCharset?: string): string };
  export default charset;
}
