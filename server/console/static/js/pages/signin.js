// Sign-in: an API key or the operator key, checked with one call before it
// is kept (sessionStorage: this tab only, gone when it closes).
import {api, session} from '../api.js';
import {h, replace} from '../dom.js';
import {errorBox} from '../errors.js';
import {sso, loginURL} from '../sso.js';

export function render(main, {message, onSignedIn}) {
  document.title = 'Sign in · seatd console';
  const input = h('input', {
    id: 'key', name: 'key', type: 'password', required: true, autocomplete: 'off',
    spellcheck: 'false', 'aria-describedby': 'key-help',
  });
  const status = h('div', {id: 'signin-status', 'aria-live': 'polite'});
  if (message) replace(status, errorBox(message));
  const button = h('button', {type: 'submit'}, 'Sign in');
  const form = h('form', {id: 'signin', class: 'card narrow', novalidate: true},
    h('h1', {tabindex: -1}, 'Sign in to seatd'),
    h('p', {}, 'Manage licenses and see who holds their seats.'),
    h('label', {for: 'key'}, 'API key or operator key'),
    input,
    h('p', {id: 'key-help', class: 'help'},
      'Sent as the bearer key to seatd’s REST API; kept in this browser tab only, until it closes or you sign out.'),
    button,
    status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (!key) {
      replace(status, errorBox(new Error('Enter a key.')));
      input.focus();
      return;
    }
    button.disabled = true;
    replace(status, h('p', {}, 'Checking the key…'));
    try {
      await api('GET', '/v1/admin/licenses?pageSize=1', {key});
      session.set(key);
      onSignedIn();
    } catch (err) {
      replace(status, errorBox(err));
      button.disabled = false;
      input.focus();
    }
  });
  main.append(form);
  // Single sign-on: one link per issuer seatd offers (a navigation to
  // the identity provider, not a call).
  if (sso.issuers.length) {
    const list = h('ul', {class: 'sso'});
    for (const is of sso.issuers) {
      list.append(h('li', {}, h('a', {class: 'button', href: loginURL(is.name), 'data-issuer': is.name},
        `Sign in with ${is.label || is.name}`)));
    }
    form.insertBefore(h('div', {id: 'sso-signin'}, list, h('p', {class: 'help'}, 'or with a key:')), form.querySelector('label'));
  }
  input.focus();
}
