// The consent page of the OAuth authorization endpoint, as plain HTML (no script, no outside resource): the app's
// name, what it asks for in plain words, the login of the person approving, approve and deny. Every value escaped.
import { SCOPE_WORDS, type AuthorizationRequest } from '../../../services/platform/index.js';
import { escapeHtml, htmlPage } from '../../html-page.js';

const STYLE = `body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:1rem;background:#f6f7f9;color:#1d232b;line-height:1.5}
main{max-width:30rem;margin:0 auto;background:#fff;border-radius:.5rem;padding:1.25rem 1.25rem 1.5rem;box-shadow:0 1px 3px rgba(0,0,0,.08)}
h1{font-size:1.35rem;margin:.25rem 0 1rem}p{margin:.5rem 0}ul{padding-left:1.2rem}li{margin:.3rem 0}code{font-size:.85rem;color:#5b6470}
.warn{background:#fdf3e7;border-left:4px solid #c77b15;padding:.5rem .75rem}label{display:block;margin:.75rem 0 .25rem;font-weight:600}
input[type=email],input[type=password]{font:inherit;width:100%;box-sizing:border-box;padding:.55rem;border:1px solid #c4c9d0;border-radius:.4rem}
.buttons{display:flex;gap:.75rem;margin-top:1.25rem}
button{font:inherit;font-size:1.05rem;padding:.7rem 1rem;border-radius:.4rem;border:1px solid #1d5fbf;background:#1d5fbf;color:#fff;flex:1;cursor:pointer}
button.secondary{background:#fff;color:#a12d2d;border-color:#a12d2d}`;

function page(title: string, body: string): string {
  return htmlPage(title, body, STYLE);
}

/** The parameters the form carries back to POST /oauth/authorize, as they came. */
export type HiddenParams = Record<string, string>;

export function consentPage(request: AuthorizationRequest, hidden: HiddenParams, problem: string | null, email: string): string {
  const scopes = request.scopes.map((s) => `<li>${escapeHtml(SCOPE_WORDS[s])} <code>${escapeHtml(s)}</code></li>`).join('\n');
  const fields = Object.entries(hidden)
    .map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`)
    .join('\n');
  const host = new URL(request.redirectUri).host;
  return page(
    `Authorize ${request.client.client_name}`,
    `<h1><span id="app-name">${escapeHtml(request.client.client_name)}</span> wants to use your mail account</h1>
${problem ? `<p class="warn" id="problem">${escapeHtml(problem)}</p>` : ''}
<p>If you approve, it may:</p>
<ul id="scopes">
${scopes}
</ul>
<p>You will be sent back to <strong>${escapeHtml(host)}</strong>. Access lasts until you or the operator revoke it.</p>
<form method="post" action="/oauth/authorize">
${fields}
<label for="email">Your login (e-mail)</label>
<input type="email" id="email" name="email" autocomplete="username" value="${escapeHtml(email)}">
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password">
<div class="buttons">
<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny" class="secondary">Deny</button>
</div>
</form>`,
  );
}

/** A request that cannot be sent back to the app (unknown client, unregistered redirect URI). */
export function errorPage(description: string): string {
  return page('Authorization failed', `<h1>This authorization request cannot be completed</h1>\n<p class="warn" id="problem">${escapeHtml(description)}</p>`);
}
