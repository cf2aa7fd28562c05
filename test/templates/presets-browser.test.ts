// Each preset's compiled HTML in a real browser (Debian's chromium, driven by playwright-core): at 375 px (a
// phone) and 600 px wide nothing overflows, the container takes the phone's width, columns stack on the phone;
// in light and in dark mode every text stands out from what is behind it. Screenshots are kept under the OS
// temp dir (the path is printed), not in the repository.
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { compileBlocks } from '../../src/services/templates/blocks.js';
import { PRESETS } from '../../src/services/templates/presets.js';

const CHROMIUM = '/usr/bin/chromium';
const WIDTHS = [375, 600] as const;
const ARTEFACTS = path.join(os.tmpdir(), 'mail-appliance-test-artefacts', 'template-presets');

/** Sample values, some long on purpose: a URL with nowhere to break, a name that fills a line. */
const SAMPLES: Record<string, string> = {
  product_name: 'Northwind Analytics Cloud',
  first_name: 'Maximiliana',
  dashboard_url: 'https://app.northwind.example/dashboard',
  reset_url: `https://app.northwind.example/account/password/reset?token=${'Zx9'.repeat(40)}`,
  expires_in: '30 minutes',
  customer_name: 'Maximiliana Fernández-Oyelaran',
  order_number: 'NW-2025-000418',
  order_date: '14 March 2025',
  item_description: 'Northwind Analytics Cloud, Team plan (12 seats, billed yearly)',
  amount: '€1,188.00',
  tax: '€237.60',
  total: '€1,425.60',
  payment_method: 'Visa ending in 4242',
  receipt_url: 'https://billing.northwind.example/receipts/NW-2025-000418',
  'contact.first_name': 'Maximiliana',
  unsubscribe_url: 'https://mail.northwind.example/unsubscribe/eyJ0ZWFtIjoxLCJjb250YWN0Ijo0Mn0',
};

/** The merge tags filled in as the send would, by simple substitution: a sample, else the tag's default. */
function fill(html: string): string {
  return html.replace(/\{\{\s*([\w.]+)\s*(?:\|\s*default:\s*["']([^"']*)["']\s*)?\}\}/g, (tag, name: string, fallback?: string) => {
    const value = SAMPLES[name] ?? fallback;
    if (value === undefined) throw new Error(`no sample for ${tag}`);
    return value.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('"', '&quot;');
  });
}

/** A stand-in for every image the presets name: an SVG of the size an email image usually has. */
const IMAGE = `<svg xmlns="http://www.w3.org/2000/svg" width="1200" height="600"><rect width="1200" height="600" fill="#93c5fd"/></svg>`;

interface Layout {
  viewport: number;
  scrollWidth: number;
  overflowing: string[];
  container: number[];
  columns: Array<{ left: number; top: number; width: number }>;
}

// The scripts that run in the page are plain JavaScript text: the tests' own TypeScript knows no DOM, and a
// function handed over would carry the helpers tsx compiles into it.

/** What is wider than the viewport, the container's widths, where the columns stand. */
const LAYOUT_JS = `(() => {
  const viewport = document.documentElement.clientWidth;
  const name = (e) => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).trim().replace(/\\s+/g, '.') : '') +
    ' "' + (e.textContent || '').trim().slice(0, 40) + '"';
  const overflowing = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > viewport + 0.5).map(name);
  const container = [...document.querySelectorAll('div[style*="max-width:600px"]')].map((e) => e.getBoundingClientRect().width);
  const columns = [...document.querySelectorAll('[class*="mj-column-per-"]')].map((e) => {
    const r = e.getBoundingClientRect();
    return { left: r.left, top: r.top, width: r.width };
  });
  return { viewport, scrollWidth: document.documentElement.scrollWidth, overflowing, container, columns };
})()`;

/** Texts whose colour stands out less than 3:1 from the first background behind them (WCAG 2 contrast). */
const FAINT_JS = `(() => {
  const rgb = (css) => (css.match(/[\\d.]+/g) || []).map(Number);
  const channel = (c) => (c / 255 <= 0.04045 ? c / 255 / 12.92 : ((c / 255 + 0.055) / 1.055) ** 2.4);
  const lum = ([r, g, b]) => 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const behind = (e) => {
    for (let at = e; at; at = at.parentElement) {
      const bg = getComputedStyle(at).backgroundColor;
      if (!/^rgba\\(.*, 0\\)$/.test(bg) && bg !== 'transparent') return bg;
    }
    return 'rgb(255, 255, 255)';
  };
  const out = [];
  for (const e of document.querySelectorAll('h1, h2, p, a, strong, em')) {
    if (!(e.textContent || '').trim()) continue;
    const fg = getComputedStyle(e).color;
    const bg = behind(e);
    const [hi, lo] = [lum(rgb(fg)), lum(rgb(bg))].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    if (ratio < 3) out.push(e.tagName.toLowerCase() + ' "' + (e.textContent || '').trim().slice(0, 30) + '": ' + fg + ' on ' + bg + ' (' + ratio.toFixed(2) + ':1)');
  }
  return out;
})()`;

const layoutOf = (page: Page) => page.evaluate<Layout>(LAYOUT_JS);
const faintTexts = (page: Page) => page.evaluate<string[]>(FAINT_JS);

if (!existsSync(CHROMIUM)) {
  t.plan(0, `${CHROMIUM} is absent (apt-get install chromium; .ci/run installs it): the presets were not checked in a browser`);
} else {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'presets-chromium-'));
  await mkdir(ARTEFACTS, { recursive: true });
  const context: BrowserContext = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  t.teardown(async () => {
    await context.close();
    await rm(profile, { recursive: true, force: true });
  });
  // Nothing leaves the machine: images get the stand-in, anything else is refused.
  await context.route('**/*', (route) =>
    route.request().resourceType() === 'image' ? route.fulfill({ status: 200, contentType: 'image/svg+xml', body: IMAGE }) : route.abort(),
  );
  const page = await context.newPage();
  t.comment(`screenshots: ${ARTEFACTS}`);

  for (const preset of PRESETS) {
    t.test(preset.id, async (t) => {
      const { html } = await compileBlocks(preset.blocks);
      const filled = fill(html);
      t.notMatch(filled, /\{\{|\{%/, 'every merge tag filled');
      await writeFile(path.join(ARTEFACTS, `${preset.id}.html`), filled);

      for (const width of WIDTHS) {
        await page.emulateMedia({ colorScheme: 'light' });
        await page.setViewportSize({ width, height: 900 });
        await page.setContent(filled, { waitUntil: 'load' });
        const layout = await layoutOf(page);
        t.equal(layout.viewport, width, `${width} px: the viewport`);
        t.ok(layout.scrollWidth <= width, `${width} px: no horizontal scroll (scrollWidth ${layout.scrollWidth})`);
        t.same(layout.overflowing, [], `${width} px: no element's right edge past the viewport`);
        t.ok(layout.container.length > 0, 'the 600 px container is there');
        t.ok(
          layout.container.every((w) => Math.abs(w - Math.min(width, 600)) < 1),
          `${width} px: the container is ${Math.min(width, 600)} px wide (${[...new Set(layout.container)].join(', ')})`,
        );
        if (width === 375) {
          t.ok(layout.columns.every((c) => Math.abs(c.width - 375) < 1), 'on a phone every column takes the whole width (stacked)');
        } else if (layout.columns.some((c) => c.width < 590)) {
          const tops = layout.columns.filter((c) => c.width < 590).map((c) => c.top);
          t.ok(new Set(tops.map(Math.round)).size < tops.length, 'at 600 px columns stand side by side (some share a top)');
        }
        t.same(await faintTexts(page), [], `${width} px, light: every text stands out from its background`);
        await page.screenshot({ path: path.join(ARTEFACTS, `${preset.id}-${width}.png`), fullPage: true });
      }

      await page.emulateMedia({ colorScheme: 'dark' });
      await page.setViewportSize({ width: 375, height: 900 });
      await page.setContent(filled, { waitUntil: 'load' });
      const page_ = await page.evaluate<string>('getComputedStyle(document.body).backgroundColor');
      t.equal(page_, 'rgb(17, 24, 39)', 'dark: the page is dark');
      t.same(await faintTexts(page), [], 'dark: every text stands out from its background');
      await page.screenshot({ path: path.join(ARTEFACTS, `${preset.id}-375-dark.png`), fullPage: true });
    });
  }
}
