// The colours and type of every compiled template, in a light and a dark scheme. A block's own colours
// override the light ones; the dark scheme recolours only what kept the page's own colours.
export const THEME = {
  font: "-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif",
  page: '#f4f4f5',
  /** Behind a section or column without a background of its own. */
  surface: '#ffffff',
  text: '#1f2937',
  muted: '#6b7280',
  link: '#2563eb',
  rule: '#e5e7eb',
  dark: { page: '#111827', surface: '#1f2937', text: '#e5e7eb', muted: '#9ca3af', link: '#93c5fd', rule: '#374151' },
} as const;

/** The least contrast (WCAG 2 ratio) between a text's colour and the colour behind it: WCAG's figure for large text. */
export const MIN_CONTRAST = 3;

/** Relative luminance of an sRGB colour written #rrggbb (WCAG 2). */
function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/** The contrast ratio of two colours, 1 to 21. */
export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}
