// The hosted preference page, as plain HTML (no script, no outside resource): readable on a phone, usable
// without JavaScript, every value escaped. Pure functions from what the services answer to a document.
import type { PreferenceView } from '../../../services/audience/index.js';
import { escapeHtml, htmlPage } from '../../html-page.js';

const STYLE = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:1rem;background:#f6f7f9;color:#1d232b;line-height:1.5}
main{max-width:34rem;margin:0 auto;background:#fff;border-radius:.5rem;padding:1.25rem 1.25rem 1.5rem;box-shadow:0 1px 3px rgba(0,0,0,.08)}
h1{font-size:1.35rem;margin:.25rem 0 1rem}p{margin:.5rem 0}.note{background:#eef6ee;border-left:4px solid #3a8a3a;padding:.5rem .75rem}
.warn{background:#fdf3e7;border-left:4px solid #c77b15;padding:.5rem .75rem}fieldset{border:0;padding:0;margin:1rem 0}
label{display:flex;gap:.75rem;align-items:flex-start;padding:.6rem 0;border-top:1px solid #e6e8eb;font-size:1.05rem}
input[type=checkbox]{width:1.35rem;height:1.35rem;flex:none;margin-top:.15rem}small{display:block;color:#5b6470;font-size:.9rem}
button{font:inherit;font-size:1.05rem;padding:.7rem 1rem;border-radius:.4rem;border:1px solid #1d5fbf;background:#1d5fbf;color:#fff;width:100%;margin-top:.5rem;cursor:pointer}
button.secondary{background:#fff;color:#a12d2d;border-color:#a12d2d}`;

function document(title: string, body: string): string {
  return htmlPage(title, body, STYLE);
}

export type PageNotice = 'unsubscribed' | 'already' | 'saved' | null;

/** The preference page for a valid link: `action` is where its form posts. */
export function preferencePage(view: PreferenceView, action: string, notice: PageNotice): string {
  const notes: string[] = [];
  if (notice === 'unsubscribed') {
    notes.push(`<p class="note" role="status">${view.topic ? `You will no longer receive “${escapeHtml(view.topic.name)}”.` : 'You are unsubscribed: no more mail from this list.'}</p>`);
  } else if (notice === 'already') {
    notes.push('<p class="note" role="status">You were unsubscribed already.</p>');
  } else if (notice === 'saved') {
    notes.push('<p class="note" role="status">Your preferences are saved.</p>');
  }
  if (view.unsubscribed) notes.push('<p class="warn">You are unsubscribed from everything: none of the topics below reaches you.</p>');

  const topics = view.topics
    .map(
      (t) =>
        `<label><input type="checkbox" name="topic" value="${escapeHtml(t.id)}"${t.subscribed ? ' checked' : ''}><span>${escapeHtml(t.name)}${t.description ? `<small>${escapeHtml(t.description)}</small>` : ''}</span></label>`,
    )
    .join('\n');
  const form = `<form method="post" action="${escapeHtml(action)}">
${
  view.topics.length > 0
    ? `<fieldset><legend>Choose what you receive:</legend>
${topics}
</fieldset>
<button type="submit" name="action" value="save">Save preferences</button>`
    : ''
}
${
  view.unsubscribed
    ? '<button type="submit" name="action" value="resubscribe" class="secondary">Subscribe again</button>'
    : '<button type="submit" name="action" value="unsubscribe_all" class="secondary">Unsubscribe from everything</button>'
}
</form>`;
  return document('Email preferences', `<h1>Email preferences</h1>
<p>For <strong>${escapeHtml(view.email)}</strong></p>
${notes.join('\n')}
${form}`);
}

/** The page for a link that cannot be used: altered, unknown, or expired. */
export function badLinkPage(reason: 'invalid' | 'expired' | 'not_one_click' | 'bad_form' | 'error'): string {
  switch (reason) {
    case 'invalid':
      return document(
        'Link not valid',
        '<h1>This link is not valid</h1><p>It may have been copied incompletely, or the address it was sent to is no longer on the list (then you will not receive its mail anyway).</p><p>Use the unsubscribe link of a recent message, or reply to the sender.</p>',
      );
    case 'expired':
      return document('Link expired', '<h1>This link has expired</h1><p>Unsubscribe links work for a year after their message was sent. Use the link in a more recent message, or reply to the sender.</p>');
    case 'not_one_click':
      return document('Not a one-click request', '<h1>Nothing was changed</h1><p>This address takes the one-click unsubscribe of RFC 8058 (a body of <code>List-Unsubscribe=One-Click</code>). Open the link in a browser to see your preferences.</p>');
    case 'bad_form':
      return document('Not understood', '<h1>Nothing was changed</h1><p>The form was not understood. Go back to the page and try again.</p>');
    case 'error':
      return document('Something went wrong', '<h1>Something went wrong on our side</h1><p>Nothing was changed. Please try again in a few minutes.</p>');
  }
}
