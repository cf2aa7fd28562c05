// HTML text the box writes itself (its hosted pages, a signup form's snippet): every value escaped.

/** Escapes the five characters that matter in HTML text and attribute values, as numeric references. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
