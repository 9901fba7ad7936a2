import { SCOPE_WORDS } from '../../identity/scopes.js';

/** Where the pages' own stylesheet is served (no CDN, no fonts, no scripts). */
export const STYLESHEET_PATH = '/oauth/assets/oauth.css';

export interface Page {
  status: number;
  html: string;
  headers: Record<string, string>;
}

function escapeHtml(value: string | number | undefined): string {
  return String(value ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/**
 * The pages' headers: a strict CSP (own stylesheet only, no scripts, never framed; images from
 * the page itself or any `https` address: a partner app's logo) and no Referer leaks. `formTargets` are the origins a form may end up at: Chrome applies form-action to
 * the redirects that follow a submission, which end at the partner's redirect URI.
 */
function pageHeaders(formTargets: string[] = []): Record<string, string> {
  const formAction = ["'self'", ...formTargets].join(' ');
  return {
    'Content-Security-Policy': `default-src 'none'; style-src 'self'; img-src 'self' https:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-store',
    'Content-Type': 'text/html; charset=utf-8',
  };
}

function layout(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · Atrium</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
<main class="card">
<p class="brand">Atrium</p>
${body}
</main>
</body>
</html>`;
}

export interface LoginView {
  uid: string;
  csrf: string;
  clientName: string;
  email?: string;
  error?: string;
  status?: number;
  formTargets: string[];
}

/**
 * After a failed sign-in both fields are marked `aria-invalid` and described by the error (which of
 * the two was wrong is not said, on purpose), and focus goes where the user types next: the password
 * (cleared) when an email was given, else the email. `autofocus` rather than a script: the page runs
 * none (its policy allows none). A refusal for too many attempts (429) marks nothing invalid but
 * still moves focus past the message.
 */
function fieldState(view: LoginView, field: 'email' | 'password'): string {
  if (!view.error) {
    return '';
  }
  const invalid = view.status !== 429 ? ' aria-invalid="true"' : '';
  const focusHere = (field === 'password') === Boolean(view.email);
  return `${invalid} aria-describedby="login-error"${focusHere ? ' autofocus' : ''}`;
}

export function loginPage(view: LoginView): Page {
  const error = view.error
    ? `<p class="error" role="alert" id="login-error">${escapeHtml(view.error)}</p>`
    : '';
  const body = `<h1>Sign in</h1>
<p class="lead">to continue to <strong>${escapeHtml(view.clientName)}</strong></p>
${error}
<form method="post" action="/oauth/interaction/${escapeHtml(view.uid)}/login" novalidate>
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escapeHtml(view.email ?? '')}"${fieldState(view, 'email')}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${fieldState(view, 'password')}>
<button type="submit" class="primary">Sign in</button>
</form>
<form method="post" action="/oauth/interaction/${escapeHtml(view.uid)}/abort">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">
<button type="submit" class="link">Cancel and go back to ${escapeHtml(view.clientName)}</button>
</form>`;
  return {
    status: view.status ?? 200,
    html: layout('Sign in', body),
    headers: pageHeaders(view.formTargets),
  };
}

export interface ConsentView {
  uid: string;
  csrf: string;
  clientName: string;
  clientId: string;
  userLabel: string;
  scopes: string[];
  formTargets: string[];
  /** The app's registered branding: an `https` logo and links (all optional). */
  logoUri?: string | null;
  clientUri?: string | null;
  policyUri?: string | null;
  tosUri?: string | null;
}

/** The app's links under its name, each opened in place of the page (no Referer is sent). */
function brandLinks(view: ConsentView): string {
  const candidates: [string | null | undefined, string][] = [
    [view.clientUri, 'Website'],
    [view.policyUri, 'Privacy policy'],
    [view.tosUri, 'Terms of service'],
  ];
  const links = candidates
    .filter((l): l is [string, string] => typeof l[0] === 'string' && l[0] !== '')
    .map(([href, words]) => `<a href="${escapeHtml(href)}" rel="noopener noreferrer">${words}</a>`);
  return links.length ? `<p class="app-links">${links.join(' · ')}</p>` : '';
}

export function consentPage(view: ConsentView): Page {
  const items = view.scopes
    .map((s) =>
      s === 'admin'
        ? `<li class="warning" role="alert"><span class="scope-words"><strong>Warning:</strong> ${escapeHtml(SCOPE_WORDS[s])}</span> <code>${escapeHtml(s)}</code></li>`
        : `<li><span class="scope-words">${escapeHtml(SCOPE_WORDS[s] ?? s)}</span> <code>${escapeHtml(s)}</code></li>`,
    )
    .join('\n');
  const logo = view.logoUri
    ? `<img class="app-logo" src="${escapeHtml(view.logoUri)}" alt="${escapeHtml(view.clientName)} logo" width="64" height="64">\n`
    : '';
  const body = `${logo}<h1>Allow ${escapeHtml(view.clientName)}?</h1>
${brandLinks(view)}
<p class="lead"><strong>${escapeHtml(view.clientName)}</strong> wants to use your Atrium account
<span class="who">(${escapeHtml(view.userLabel)})</span> to:</p>
<ul class="scopes">
${items}
</ul>
<p class="note">You can revoke this access at any time. The app never sees your password.</p>
<div class="actions">
<form method="post" action="/oauth/interaction/${escapeHtml(view.uid)}/abort">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">
<button type="submit" class="secondary" name="decision" value="deny">Deny</button>
</form>
<form method="post" action="/oauth/interaction/${escapeHtml(view.uid)}/confirm">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">
<button type="submit" class="primary" name="decision" value="allow">Allow</button>
</form>
</div>
<p class="fine">App id: <code>${escapeHtml(view.clientId)}</code></p>`;
  return { status: 200, html: layout('Authorize', body), headers: pageHeaders(view.formTargets) };
}

const ERROR_WORDS: Record<string, string> = {
  invalid_redirect_uri:
    'The app sent an address to return to that is not registered for it, so you were not sent back. Tell the app\u2019s developer.',
  invalid_client: 'This app is not registered with Atrium.',
  invalid_request: 'The app sent an invalid request.',
  rate_limited: 'Too many requests from your network. Wait a moment, then try again.',
  session_not_found:
    'This sign-in link has expired or was already used. Go back to the app and start again.',
};

export function errorPage(error: string, description?: string, status = 400): Page {
  const words = ERROR_WORDS[error] ?? 'Something went wrong with this request.';
  const body = `<h1>Cannot continue</h1>
<p class="lead">${escapeHtml(words)}</p>
<p class="fine"><code>${escapeHtml(error)}</code>${description ? `: ${escapeHtml(description)}` : ''}</p>`;
  return { status, html: layout('Error', body), headers: pageHeaders() };
}

/** The pages' stylesheet: system fonts, one column, large touch targets, readable on a phone. */
export const STYLESHEET = `*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;min-height:100vh;display:flex;align-items:flex-start;justify-content:center;padding:24px 16px;
font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#1b1f24;background:#eef1f5}
.card{width:100%;max-width:420px;background:#fff;border-radius:12px;padding:28px 24px;box-shadow:0 1px 3px rgba(0,0,0,.12),0 8px 24px rgba(0,0,0,.06)}
.brand{margin:0 0 8px;font-weight:700;letter-spacing:.04em;color:#3451b2;text-transform:uppercase;font-size:.8rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 8px;overflow-wrap:anywhere}
.lead{margin:0 0 20px;color:#3d4650;overflow-wrap:anywhere}
.who{color:#5b6570}
label{display:block;font-weight:600;margin:16px 0 6px}
input[type=email],input[type=password]{display:block;width:100%;font:inherit;padding:12px;border:1px solid #9aa4ae;border-radius:8px;background:#fff;color:inherit}
input:focus,button:focus{outline:3px solid #8fa8ff;outline-offset:1px}
button{font:inherit;cursor:pointer;border-radius:8px;min-height:48px;padding:10px 18px;width:100%}
.primary{background:#3451b2;color:#fff;border:1px solid #3451b2;font-weight:600;margin-top:24px}
.primary:hover{background:#2a4396}
.secondary{background:#fff;color:#1b1f24;border:1px solid #9aa4ae;font-weight:600;margin-top:24px}
.link{background:none;border:none;color:#3451b2;text-decoration:underline;margin-top:8px;min-height:44px}
.error{background:#fdecec;color:#8a1c1c;border:1px solid #f3b4b4;border-radius:8px;padding:10px 12px;margin:0 0 8px}
.scopes{list-style:none;padding:0;margin:0 0 16px}
.scopes li{padding:10px 0;border-bottom:1px solid #e3e7ec;overflow-wrap:anywhere}
.scopes li:last-child{border-bottom:none}
.scopes code{display:block;font-size:.8rem;color:#5b6570}
.scope-words{display:block}
.scopes li.warning{background:#fff4e5;border-left:4px solid #c25e00;padding-left:10px;color:#7a3b00}
.app-logo{display:block;width:64px;height:64px;object-fit:contain;border-radius:12px;margin:0 0 8px}
.app-links{margin:-4px 0 12px;font-size:.9rem}
.note{font-size:.9rem;color:#3d4650;margin:0}
.actions{display:flex;gap:12px}
.actions form{flex:1}
.fine{font-size:.8rem;color:#5b6570;margin:20px 0 0;overflow-wrap:anywhere}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
@media (max-width:360px){.actions{flex-direction:column-reverse;gap:0}.card{padding:20px 16px}}
`;
