// The document around each page the box serves (preference page, signup pages, OAuth consent): plain HTML,
// readable on a phone, its own inline style, no script and no outside resource.
import { escapeHtml } from '../core/html.js';

export { escapeHtml };

/** A whole document: `body` goes inside `<main>`; `noindex` (the default) keeps search engines away. */
export function htmlPage(title: string, body: string, style: string, opts: { noindex?: boolean } = {}): string {
  const robots = opts.noindex === false ? '' : '<meta name="robots" content="noindex">\n';
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${robots}<title>${escapeHtml(title)}</title>
<style>${style}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}
