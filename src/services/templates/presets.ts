// The visual builder's presets (`GET /templates/presets`, in this order): starting points built from blocks.
// The transactional ones (welcome, password reset, receipt) take their data as variables, each listed in
// `variables` (every variable used without a `default`); the broadcast ones (newsletter, announcement) use
// only the contact's fields, with defaults, and the unsubscribe link, so a broadcast needs no variables.
// Their example.com links and images are placeholders to replace in the builder.
import type { BlockInput } from './block-schema.js';

export interface Preset {
  id: string;
  name: string;
  description: string;
  subject: string;
  variables: readonly string[];
  blocks: readonly BlockInput[];
}

const BRAND = '#1e3a8a';
const BRAND_TINT = '#dbeafe';

const welcome: Preset = {
  id: 'welcome',
  name: 'Welcome',
  description: 'Greets a new user by name and sends them to their dashboard, with three first steps.',
  subject: 'Welcome to {{ product_name }}, {{ first_name | default: "friend" }}!',
  variables: ['product_name', 'dashboard_url'],
  blocks: [
    { type: 'text', variant: 'heading', text: 'Welcome to {{ product_name }}' },
    {
      type: 'text',
      text: 'Hi {{ first_name | default: "there" }},\n\nThanks for signing up. Your account is ready, and everything you need to get going is one click away.',
    },
    { type: 'button', label: 'Open your dashboard', url: '{{ dashboard_url }}' },
    {
      type: 'text',
      text: '**Three things to try first**\n• Complete your profile\n• Invite your teammates\n• Set up your first project',
    },
    { type: 'divider' },
    { type: 'text', variant: 'small', text: 'Questions? Reply to this email: a person reads every message.' },
    { type: 'footer', unsubscribe: false, text: 'You are receiving this email because you created an account with {{ product_name }}.' },
  ],
};

const passwordReset: Preset = {
  id: 'password-reset',
  name: 'Password reset',
  description: 'A reset link that expires, its URL spelt out for clients that block buttons, and what to do if the reader did not ask.',
  subject: 'Reset your {{ product_name }} password',
  variables: ['product_name', 'reset_url', 'expires_in'],
  blocks: [
    { type: 'text', variant: 'heading', text: 'Reset your password' },
    {
      type: 'text',
      text: 'We received a request to reset the password of your {{ product_name }} account. Choose a new one with the button below; the link expires in **{{ expires_in }}**.',
    },
    { type: 'button', label: 'Choose a new password', url: '{{ reset_url }}' },
    { type: 'text', variant: 'small', text: 'If the button does not work, paste this link into your browser:\n{{ reset_url }}' },
    { type: 'divider' },
    {
      type: 'text',
      variant: 'small',
      text: 'If you did not ask to reset your password, you can ignore this email: your password stays as it is.',
    },
    { type: 'footer', unsubscribe: false, text: 'Sent by {{ product_name }} to keep your account secure.' },
  ],
};

/** A receipt's row: a label on the left, its value on the right (stacked on a phone). */
const row = (label: string, value: string, width = 60): BlockInput => ({
  type: 'section',
  padding: 0,
  columns: [
    { width, blocks: [{ type: 'text', text: label }] },
    { width: 100 - width, blocks: [{ type: 'text', text: value, align: 'right' }] },
  ],
});

const receipt: Preset = {
  id: 'receipt',
  name: 'Receipt',
  description: 'An order receipt: number and date, the item, tax and total, the payment method and a link to the receipt online.',
  subject: 'Your {{ product_name }} receipt for order {{ order_number }}',
  variables: ['product_name', 'customer_name', 'order_number', 'order_date', 'item_description', 'amount', 'tax', 'total', 'payment_method', 'receipt_url'],
  blocks: [
    { type: 'text', variant: 'heading', text: 'Thanks for your order' },
    { type: 'text', text: 'Hi {{ customer_name }}, here is your receipt. Keep it for your records.' },
    {
      type: 'section',
      columns: [
        { blocks: [{ type: 'text', variant: 'small', text: 'Order number' }, { type: 'text', text: '**{{ order_number }}**' }] },
        { blocks: [{ type: 'text', variant: 'small', text: 'Date' }, { type: 'text', text: '**{{ order_date }}**' }] },
      ],
    },
    { type: 'divider' },
    row('{{ item_description }}', '{{ amount }}'),
    row('Tax', '{{ tax }}'),
    { type: 'divider' },
    row('**Total**', '**{{ total }}**'),
    { type: 'text', variant: 'small', text: 'Paid with {{ payment_method }} on {{ order_date }}.' },
    { type: 'button', label: 'View your receipt online', url: '{{ receipt_url }}' },
    { type: 'footer', unsubscribe: false, text: 'Questions about this charge? Reply to this email and we will sort it out.' },
  ],
};

const ADDRESS = 'Example Inc · 1 Example Street · Example City';

const newsletter: Preset = {
  id: 'newsletter',
  name: 'Newsletter',
  description: 'A monthly newsletter: a banner, a lead story with its image, two stories side by side, and the unsubscribe link.',
  subject: 'What is new this month',
  variables: [],
  blocks: [
    {
      type: 'section',
      background_color: BRAND,
      padding: 24,
      columns: [
        {
          blocks: [
            { type: 'text', variant: 'heading', color: '#ffffff', text: 'The Monthly Update' },
            { type: 'text', variant: 'small', color: BRAND_TINT, text: 'News, tips and what we shipped this month' },
          ],
        },
      ],
    },
    { type: 'text', text: 'Hi {{ contact.first_name | default: "there" }}, here is what happened this month.' },
    { type: 'image', src: 'https://example.com/newsletter/lead-story.png', alt: 'The lead story: our new dashboard', href: 'https://example.com/blog/lead-story' },
    { type: 'text', variant: 'subheading', text: 'A faster, clearer dashboard' },
    {
      type: 'text',
      text: 'Tell the month\'s main story in two or three sentences, then send readers to the full article. [Read the full story](https://example.com/blog/lead-story)',
    },
    { type: 'divider' },
    {
      type: 'section',
      columns: [
        {
          blocks: [
            { type: 'image', src: 'https://example.com/newsletter/story-2.png', alt: 'Second story', href: 'https://example.com/blog/story-2' },
            { type: 'text', variant: 'subheading', text: 'Tips from the team' },
            { type: 'text', text: 'A short summary of the second story. [Read more](https://example.com/blog/story-2)' },
          ],
        },
        {
          blocks: [
            { type: 'image', src: 'https://example.com/newsletter/story-3.png', alt: 'Third story', href: 'https://example.com/blog/story-3' },
            { type: 'text', variant: 'subheading', text: 'From our customers' },
            { type: 'text', text: 'A short summary of the third story. [Read more](https://example.com/blog/story-3)' },
          ],
        },
      ],
    },
    {
      type: 'social',
      links: [
        { network: 'website', url: 'https://example.com' },
        { network: 'linkedin', url: 'https://www.linkedin.com/company/example' },
        { network: 'x', url: 'https://x.com/example' },
      ],
    },
    { type: 'footer', text: `You are receiving this because you subscribed to our newsletter.\n${ADDRESS}` },
  ],
};

const announcement: Preset = {
  id: 'announcement',
  name: 'Announcement',
  description: 'One piece of news: an image, what changed and why it matters, a button to try it, and the unsubscribe link.',
  subject: 'Something new for you, {{ contact.first_name | default: "friend" }}',
  variables: [],
  blocks: [
    { type: 'image', src: 'https://example.com/announcement/hero.png', alt: 'Introducing our newest feature', width: 552 },
    { type: 'text', variant: 'heading', align: 'center', text: 'Introducing our newest feature' },
    {
      type: 'text',
      align: 'center',
      text: 'Hi {{ contact.first_name | default: "there" }}, say in a sentence what is new, and in another why it matters to the reader.',
    },
    { type: 'button', label: 'See what is new', url: 'https://example.com/whats-new' },
    { type: 'spacer', height: 16 },
    {
      type: 'section',
      background_color: '#f8fafc',
      columns: [
        { blocks: [{ type: 'text', variant: 'subheading', text: 'Faster' }, { type: 'text', text: 'One benefit, in a line or two.' }] },
        { blocks: [{ type: 'text', variant: 'subheading', text: 'Simpler' }, { type: 'text', text: 'A second benefit, in a line or two.' }] },
        { blocks: [{ type: 'text', variant: 'subheading', text: 'Safer' }, { type: 'text', text: 'A third benefit, in a line or two.' }] },
      ],
    },
    {
      type: 'social',
      links: [
        { network: 'website', url: 'https://example.com' },
        { network: 'github', url: 'https://github.com/example' },
        { network: 'mastodon', url: 'https://mastodon.social/@example' },
      ],
    },
    { type: 'footer', text: `You are receiving this because you signed up for product news.\n${ADDRESS}` },
  ],
};

/** The presets, in the order `GET /templates/presets` lists them. */
export const PRESETS: readonly Preset[] = [welcome, passwordReset, receipt, newsletter, announcement];
