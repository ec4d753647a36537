// Single sign-on: the console session seatd keeps in an HttpOnly cookie
// (server/sso). The page cannot read the cookie; it asks /ui/auth/session
// who is signed in and for the CSRF token that every call changing state
// must send (X-CSRF-Token).

// state is the last answer of /ui/auth/session.
export const sso = {
  signedIn: false,
  csrfToken: '',
  email: '',
  subject: '',
  issuer: '',
  role: '',
  tenant: '',
  issuers: [], // [{name, label}] to offer on the sign-in page
};

// loadSession asks seatd who is signed in (never throws: without an
// answer the console offers key sign-in only).
export async function loadSession() {
  try {
    const resp = await fetch('/ui/auth/session', {cache: 'no-store', credentials: 'same-origin'});
    if (!resp.ok) return sso;
    const s = await resp.json();
    sso.signedIn = s.signedIn === true;
    sso.csrfToken = typeof s.csrfToken === 'string' ? s.csrfToken : '';
    sso.email = typeof s.email === 'string' ? s.email : '';
    sso.subject = typeof s.subject === 'string' ? s.subject : '';
    sso.issuer = typeof s.issuer === 'string' ? s.issuer : '';
    sso.role = typeof s.role === 'string' ? s.role : '';
    sso.tenant = typeof s.tenant === 'string' ? s.tenant : '';
    sso.issuers = Array.isArray(s.issuers) ? s.issuers.filter((i) => i && typeof i.name === 'string') : [];
  } catch {
    // seatd without single sign-on, or unreachable: keys only
  }
  return sso;
}

// signOut ends the session (the cookie is cleared by seatd).
export async function signOut() {
  try {
    await fetch('/ui/auth/logout', {
      method: 'POST', cache: 'no-store', credentials: 'same-origin',
      headers: {'X-CSRF-Token': sso.csrfToken},
    });
  } finally {
    sso.signedIn = false;
    sso.csrfToken = '';
  }
}

// loginURL is where a sign-in through an issuer starts.
export const loginURL = (issuer) => `/ui/auth/login?issuer=${encodeURIComponent(issuer)}`;

// signInError is the reason seatd sent the browser back with after a
// failed sign-in (?signin_error=REASON), "" if none; it is taken off the
// address so that a reload does not show it again.
export function signInError() {
  const params = new URLSearchParams(location.search);
  const reason = params.get('signin_error') || '';
  if (reason) history.replaceState(null, '', location.pathname + location.hash);
  return reason;
}
