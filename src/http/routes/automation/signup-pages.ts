// The hosted signup form, its success page and the confirmation pages: plain HTML (no script, no outside
// resource), usable without JavaScript, every value escaped. Pure functions from what the services answer.
import type { FormField } from '../../../services/automation/index.js';
import { escapeHtml, htmlPage } from '../../html-page.js';

const STYLE = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:1rem;background:#f6f7f9;color:#1d232b;line-height:1.5}
main{max-width:30rem;margin:0 auto;background:#fff;border-radius:.5rem;padding:1.25rem 1.25rem 1.5rem;box-shadow:0 1px 3px rgba(0,0,0,.08)}
h1{font-size:1.35rem;margin:.25rem 0 1rem}label{display:block;margin:.75rem 0 .25rem;font-weight:600}
input{font:inherit;width:100%;box-sizing:border-box;padding:.6rem;border:1px solid #b8bec6;border-radius:.35rem}
.hp{position:absolute;left:-10000px;width:1px;height:1px;overflow:hidden}.note{background:#eef6ee;border-left:4px solid #3a8a3a;padding:.5rem .75rem}
.warn{background:#fdf3e7;border-left:4px solid #c77b15;padding:.5rem .75rem}
button{font:inherit;font-size:1.05rem;padding:.7rem 1rem;border-radius:.4rem;border:1px solid #1d5fbf;background:#1d5fbf;color:#fff;width:100%;margin-top:1rem;cursor:pointer}`;

export function page(title: string, body: string): string {
  return htmlPage(title, body, STYLE, { noindex: false });
}

export function formPage(form: { id: string; name: string; fields: FormField[] }, action: string): string {
  const inputs = form.fields
    .map((f, i) => `<label for="f${i}">${escapeHtml(f.label)}</label><input id="f${i}" type="text" name="${escapeHtml(f.property)}"${f.required ? ' required' : ''}>`)
    .join('\n');
  return page(
    form.name,
    `<h1>${escapeHtml(form.name)}</h1>
<form method="post" action="${escapeHtml(action)}" accept-charset="utf-8">
<label for="email">Email</label><input id="email" type="email" name="email" required autocomplete="email">
${inputs}
<div class="hp" aria-hidden="true"><label for="hp">Leave this empty</label><input id="hp" type="text" name="website_url" tabindex="-1" autocomplete="off"></div>
<button type="submit">Subscribe</button>
</form>`,
  );
}

export function successPage(name: string, message: string | null, pending: boolean): string {
  const text = message ?? (pending ? 'Almost done: we sent you an email. Open the link in it to confirm your subscription.' : 'Thank you: you are subscribed.');
  return page(name, `<h1>${escapeHtml(name)}</h1><p class="note" role="status">${escapeHtml(text)}</p>`);
}

export function errorPage(name: string, message: string): string {
  return page(name, `<h1>${escapeHtml(name)}</h1><p class="warn" role="alert">${escapeHtml(message)}</p><p>Go back and try again.</p>`);
}

export function confirmPage(name: string, email: string, action: string): string {
  return page(
    'Confirm your subscription',
    `<h1>Confirm your subscription</h1><p>To <strong>${escapeHtml(name)}</strong>, for <strong>${escapeHtml(email)}</strong>.</p>
<form method="post" action="${escapeHtml(action)}"><button type="submit">Confirm my subscription</button></form>`,
  );
}

export function confirmedPage(name: string, already: boolean): string {
  return page('Subscription confirmed', `<h1>Subscription confirmed</h1><p class="note" role="status">${already ? 'You had confirmed already: ' : ''}You are subscribed to ${escapeHtml(name)}.</p>`);
}

export function badConfirmPage(reason: 'invalid' | 'expired'): string {
  return reason === 'expired'
    ? page('Link expired', '<h1>This link has expired</h1><p>Sign up again to get a new confirmation email.</p>')
    : page('Link not valid', '<h1>This link is not valid</h1><p>It may have been copied incompletely, or the signup no longer exists.</p>');
}
