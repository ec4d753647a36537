// New license: the license form; once created, its page.
import {createLicense} from '../api.js';
import {h} from '../dom.js';
import {showError} from '../form.js';
import {licenseForm} from '../licenseform.js';

export function render(main, _params, page) {
  page.title('New license');
  main.append(
    h('p', {class: 'crumbs'}, h('a', {href: '#/'}, 'Overview'), ' › ', h('span', {}, 'New license')),
    h('h1', {tabindex: -1}, 'New license'),
    h('p', {class: 'lead'}, 'Its key, which clients send to take a seat, is made by seatd and shown on the license\'s page.'),
    licenseForm({
      prefix: 'new', submitText: 'Create the license',
      async submit(fields, form, status) {
        try {
          const made = await createLicense(fields);
          location.hash = `#/licenses/${encodeURIComponent(made.id)}`;
        } catch (err) {
          showError(form, status, err, page);
        }
      },
    }));
}
