// The license form, to create a license or edit one: name, seats,
// overdraft, lease TTL, active, expiry and borrowing. Each control names
// the API field it edits, so a refusal shows next to it (form.js).
import {h, seconds} from './dom.js';
import {field, durationField, durationText, localInput, fromLocalInput, formStatus} from './form.js';

// licenseForm builds the form for license (null: a new one) and calls
// submit(fields, form, status) with the fields as the REST API takes them.
export function licenseForm({license, prefix, submitText, submit}) {
  const l = license || {seats: 1, leaseTtl: '360s', active: true};
  const id = (name) => `${prefix}-${name}`;
  const name = h('input', {type: 'text', value: l.name || '', maxlength: 256, autocomplete: 'off'});
  const seats = h('input', {type: 'number', min: 1, step: 1, required: true, value: l.seats});
  const overdraft = h('input', {type: 'number', min: 0, step: 1, value: l.overdraft || 0});
  const ttl = durationField({id: id('ttl'), label: 'Lease TTL', value: l.leaseTtl, apiField: 'license.lease_ttl',
    help: 'How long a lease lives without a heartbeat.'});
  const active = h('input', {type: 'checkbox', checked: l.active !== false});
  const expires = h('input', {type: 'datetime-local', value: localInput(l.expiresAt)});
  const borrow = durationField({id: id('borrow'), label: 'Longest borrow', value: l.maxBorrowDuration || '0s',
    apiField: 'license.max_borrow_duration', help: 'How long a seat may be taken offline; 0: no borrowing. At most 30 days.'});
  const borrowed = h('input', {type: 'number', min: 0, step: 1, value: l.maxBorrowedSeats || 0});
  const early = h('input', {type: 'checkbox', checked: Boolean(l.allowEarlyReturn)});
  const status = formStatus(id('status'));
  const button = h('button', {type: 'submit', id: id('save')}, submitText);
  const form = h('form', {id: id('form'), class: 'card', novalidate: true},
    field({id: id('name'), label: 'Name', control: name, apiField: 'license.name',
      help: 'For people, e.g. "ACME Corp — CAD Pro". Two licenses may share one: their ids tell them apart.'}),
    h('div', {class: 'row'},
      field({id: id('seats'), label: 'Seats', control: seats, apiField: 'license.seats'}),
      field({id: id('overdraft'), label: 'Overdraft', control: overdraft, apiField: 'license.overdraft',
        help: 'Extra seats beyond the seats.'})),
    ttl.el,
    field({id: id('expires'), label: 'Expires', control: expires, apiField: 'license.expires_at',
      help: 'Your time zone; empty: never. After it the license refuses new seats.'}),
    field({id: id('active'), label: 'Active', control: active, apiField: 'license.active', check: true,
      help: 'An inactive license refuses new seats; leases held run out.'}),
    h('fieldset', {},
      h('legend', {}, 'Borrowing'),
      borrow.el,
      field({id: id('borrowed'), label: 'Seats borrowed at once', control: borrowed, apiField: 'license.max_borrowed_seats',
        help: '0: as many as the seat limit.'}),
      field({id: id('early'), label: 'A borrowed seat may be returned early', control: early,
        apiField: 'license.allow_early_return', check: true})),
    button, status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const fields = {
      name: name.value.trim(),
      seats: Number(seats.value),
      overdraft: Number(overdraft.value || 0),
      leaseTtl: ttl.duration() || '0s',
      active: active.checked,
      maxBorrowDuration: borrow.duration() || '0s',
      maxBorrowedSeats: Number(borrowed.value || 0),
      allowEarlyReturn: early.checked,
    };
    const at = fromLocalInput(expires.value);
    // A new license without an expiry leaves the field out; an edit
    // clears it with null.
    if (at || license) fields.expiresAt = at;
    button.disabled = true;
    try {
      await submit(fields, form, status);
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

// savedText says what a license is now, in the units the form uses.
export function savedText(l) {
  const borrow = seconds(l.maxBorrowDuration);
  return `${l.seats} seats${l.overdraft ? ` +${l.overdraft} overdraft` : ''}, lease TTL ${durationText(seconds(l.leaseTtl))}, ` +
    `${l.active ? 'active' : 'inactive'}, ${borrow ? `borrowing up to ${durationText(borrow)}` : 'no borrowing'}.`;
}
