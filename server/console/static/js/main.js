// The console's shell: the router (#/ paths), sign-in state and the
// navigation. Each page module exports render(main, params, page) and may
// return a function that stops it (its refresh timer) when the admin
// leaves the page.
import {session, ApiError} from './api.js';
import {allows, forget, learn, SESSION} from './can.js';
import {sso, loadSession, signOut, signInError} from './sso.js';
import {h, replace} from './dom.js';
import {errorBox} from './errors.js';
import * as signin from './pages/signin.js';
import * as overview from './pages/overview.js';
import * as license from './pages/license.js';
import * as usage from './pages/usage.js';
import * as zombies from './pages/zombies.js';
import * as newLicense from './pages/newlicense.js';
import * as tenants from './pages/tenants.js';
import * as audit from './pages/audit.js';
import * as webhooks from './pages/webhooks.js';

const routes = [
  {pattern: /^\/$/, page: overview, nav: 'overview'},
  {pattern: /^\/licenses\/new$/, page: newLicense, nav: 'overview', action: 'license.create'},
  {pattern: /^\/licenses\/([^/]+)$/, page: license, nav: 'overview'},
  {pattern: /^\/usage(?:\/([^/]+))?$/, page: usage, nav: 'usage'},
  {pattern: /^\/zombies$/, page: zombies, nav: 'zombies'},
  {pattern: /^\/audit$/, page: audit, nav: 'audit', action: 'audit.read'},
  {pattern: /^\/webhooks$/, page: webhooks, nav: 'webhooks', action: 'webhook.read'},
  {pattern: /^\/tenants$/, page: tenants, nav: 'tenants', action: 'tenant.read'},
  {pattern: /^\/tenants\/([^/]+)$/, page: tenants, nav: 'tenants', action: 'tenant.read'},
];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const signout = document.getElementById('signout');
let current = null; // {stop, controller} of the page shown
let shows = 0; // show() calls: a later one wins
let flashText = ''; // a line for the next page: what the last one did

// route is the #/ path, "/" when there is none.
function route() {
  const hash = location.hash;
  return hash.startsWith('#/') ? decodeURI(hash.slice(1)) : '/';
}

// page is what a page module gets to work with.
function pageContext(controller) {
  return {
    signal: controller.signal,
    // failed handles an error of a call: AbortError (the admin left) is
    // ignored; a refused key goes back to sign-in; any other error is
    // shown as the API stated it and returned for the page to place.
    failed(err) {
      if (err && err.name === 'AbortError') return null;
      if (err instanceof ApiError && err.unauthenticated) {
        session.clear();
        sso.signedIn = false;
        show({message: err});
        return null;
      }
      return errorBox(err);
    },
    // flash leaves a line for the next page shown (a deleted license's
    // page is gone: the overview says it went).
    flash(text) {
      flashText = text;
    },
    // title sets the page's title and heading.
    title(text) {
      document.title = `${text} · seatd console`;
    },
  };
}

async function show(state = {}) {
  const mine = ++shows;
  if (current) {
    current.controller.abort();
    if (current.stop) current.stop();
    current = null;
  }
  const signedIn = Boolean(session.key) || sso.signedIn;
  nav.hidden = !signedIn;
  signout.hidden = !signedIn;
  // Who a single sign-on session is, as text.
  signout.textContent = (!session.key && sso.signedIn) ?
    `Sign out ${sso.email || sso.subject} (${sso.role})` : 'Sign out';
  if (!signedIn) {
    replace(main);
    signin.render(main, {message: state.message, onSignedIn: () => show()});
    return;
  }
  // What this key may do, asked once per key (can.js); the navigation
  // offers only that.
  const key = session.key;
  try {
    await learn(key || SESSION, key ? 'admin' : sso.role);
  } catch (err) {
    if (mine !== shows) return;
    if (err instanceof ApiError && err.unauthenticated) {
      session.clear();
      show({message: err});
      return;
    }
    replace(main, errorBox(err));
    return;
  }
  if (mine !== shows) return; // another show (a sign-out, a new route) came meanwhile
  for (const a of nav.querySelectorAll('a[data-action]')) a.parentElement.hidden = !allows(a.dataset.action);
  const path = route();
  const match = routes.map((r) => ({r, m: r.pattern.exec(path)})).find((x) => x.m);
  for (const a of nav.querySelectorAll('a')) {
    if (match && a.dataset.page === match.r.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  replace(main);
  if (flashText) {
    main.append(h('p', {class: 'ok flash', role: 'status', id: 'flash'}, flashText));
    flashText = '';
  }
  if (!match || (match.r.action && !allows(match.r.action))) {
    main.append(h('h1', {}, 'Not found'), h('p', {}, 'No console page at ', h('code', {}, path), '. ',
      h('a', {href: '#/'}, 'Back to the overview')));
    return;
  }
  const controller = new AbortController();
  current = {controller, stop: null};
  const stop = match.r.page.render(main, match.m.slice(1).map((p) => p && decodeURIComponent(p)), pageContext(controller));
  if (current && current.controller === controller) current.stop = stop || null;
  if (state.focus) main.focus();
}

window.addEventListener('hashchange', () => {
  if (location.hash.startsWith('#/') || location.hash === '') show({focus: true});
});
signout.addEventListener('click', async () => {
  if (!session.key && sso.signedIn) await signOut();
  session.clear();
  forget();
  if (route() === '/') show({focus: true});
  else location.hash = '#/'; // hashchange shows the sign-in
});
// The skip link moves focus without touching the #/ route.
document.getElementById('skip').addEventListener('click', (ev) => {
  ev.preventDefault();
  main.focus();
});
const failed = signInError();
loadSession().then(() => show(failed ? {message: new Error(`Single sign-on refused: ${failed}`)} : {}));
