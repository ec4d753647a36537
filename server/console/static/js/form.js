// Forms: a labelled field with its help and its own error line, durations
// entered and shown in one unit, an API refusal placed next to the field
// it names, and the confirmation every destructive action asks first.
import {ApiError} from './api.js';
import {h, replace, seconds} from './dom.js';
import {errorBox} from './errors.js';

// field is a labelled control: the label, the control (its id and
// data-field set), a help line and an error line, which showError fills.
// apiField is the API's path of what the control edits ("license.seats",
// "rules[0].count"), matched against a refusal's field.
export function field({id, label, control, help, apiField, check = false}) {
  control.id = id;
  if (apiField) control.dataset.field = apiField;
  const describedBy = [];
  const helpEl = help ? h('p', {class: 'help', id: `${id}-help`}, help) : null;
  if (helpEl) describedBy.push(helpEl.id);
  const errorEl = h('p', {class: 'field-error', id: `${id}-error`, hidden: true});
  describedBy.push(errorEl.id);
  control.setAttribute('aria-describedby', describedBy.join(' '));
  const labelEl = h('label', {for: id}, label);
  return h('div', {class: check ? 'field check' : 'field', dataset: {fieldOf: id}},
    check ? [control, labelEl] : [labelEl, control], helpEl, errorEl);
}

// UNITS are the units a duration is entered in, largest first.
const UNITS = [['d', 86400, 'days'], ['h', 3600, 'hours'], ['min', 60, 'minutes'], ['s', 1, 'seconds']];

// unitOf is the largest unit sec is a whole number of ('s' for 0).
function unitOf(sec) {
  const u = UNITS.find(([, n]) => sec > 0 && sec % n === 0);
  return u ? u[0] : 's';
}

// durationText shows sec in the unit it would be entered in: "10 min",
// "90 s", "2 d" (what the form says is what the pages show).
export function durationText(sec) {
  sec = Math.round(sec);
  const [u, n] = UNITS.find(([name]) => name === unitOf(sec));
  return `${sec / n} ${u}`;
}

// durationInput is a number and its unit, read as a protobuf JSON
// Duration ("600s"); value is one (or '' for none).
export function durationInput({id, value, min = 0, required = true}) {
  const sec = Math.round(seconds(value));
  const unit = unitOf(sec);
  const n = UNITS.find(([u]) => u === unit)[1];
  const number = h('input', {type: 'number', min, step: 1, required, value: value ? sec / n : ''});
  const select = h('select', {id: `${id}-unit`, 'aria-label': 'Unit'},
    UNITS.map(([u, , name]) => h('option', {value: u, selected: u === unit}, name)));
  const box = h('span', {class: 'duration'}, number, ' ', select);
  return {
    number, select, box,
    // duration is the protobuf JSON Duration entered, '' when empty.
    duration() {
      if (number.value.trim() === '') return '';
      const mult = UNITS.find(([u]) => u === select.value)[1];
      return `${Math.round(Number(number.value) * mult)}s`;
    },
  };
}

// durationField is field() for a durationInput: the number is the
// labelled control.
export function durationField({id, label, value, help, apiField, required = true}) {
  const d = durationInput({id, value, required});
  const f = field({id, label, control: d.number, help, apiField});
  f.querySelector('input').after(' ', d.select);
  d.select.id = `${id}-unit`;
  d.select.setAttribute('aria-label', `${label}: unit`);
  return {el: f, duration: d.duration};
}

// localInput is a timestamp as a datetime-local input's value, in the
// browser's time zone ('' for none).
export function localInput(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// fromLocalInput is a datetime-local value as an RFC 3339 instant (null
// for empty).
export function fromLocalInput(v) {
  return v ? new Date(v).toISOString() : null;
}

// clearErrors empties every field's error line in form and its status.
export function clearErrors(form) {
  for (const el of form.querySelectorAll('.field-error')) {
    el.hidden = true;
    el.replaceChildren();
  }
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

// controlFor finds form's control for an API field path: the path itself,
// then with its leading segments dropped ("policy.rules[2].count" →
// "rules[2].count"), then the first control under it ("rules[2]" → that
// rule's first control).
export function controlFor(form, path) {
  if (!path) return null;
  const controls = [...form.querySelectorAll('[data-field]')];
  const parts = path.split('.');
  for (let i = 0; i < parts.length; i++) {
    const p = parts.slice(i).join('.');
    const exact = controls.find((c) => c.dataset.field === p || c.dataset.field.endsWith(`.${p}`));
    if (exact) return exact;
    const under = controls.find((c) => c.dataset.field.startsWith(`${p}.`) || c.dataset.field.startsWith(`${p}[`));
    if (under) return under;
  }
  return null;
}

// showError places err: next to the control of the field it names (the
// message in the field's error line, the control marked invalid and
// focused), and in status as the API stated it. page.failed handles what
// is not the form's (a refused key goes back to sign-in).
export function showError(form, status, err, page) {
  clearErrors(form);
  const box = page.failed(err);
  if (!box) return;
  replace(status, box);
  if (!(err instanceof ApiError)) return;
  const control = controlFor(form, err.field);
  if (!control) return;
  const line = form.querySelector(`#${CSS.escape(control.id)}-error`);
  if (line) {
    replace(line, err.message);
    line.hidden = false;
  }
  control.setAttribute('aria-invalid', 'true');
  control.focus();
}

// confirm asks before a destructive action: a modal dialog, Cancel first
// and focused, the action's button red. It answers whether the admin
// confirmed. id names the dialog (its confirm button is id-confirm).
export function confirm({id, title, body, action}) {
  return new Promise((resolve) => {
    const dialog = h('dialog', {id, 'aria-labelledby': `${id}-h`},
      h('form', {method: 'dialog'},
        h('h2', {id: `${id}-h`}, title),
        body,
        h('div', {class: 'buttons'},
          h('button', {type: 'submit', value: 'cancel', autofocus: true, class: 'quiet'}, 'Cancel'),
          h('button', {type: 'submit', value: 'yes', class: 'danger', id: `${id}-confirm`}, action))));
    dialog.addEventListener('close', () => {
      const yes = dialog.returnValue === 'yes';
      dialog.remove();
      resolve(yes);
    });
    document.getElementById('main').append(dialog);
    dialog.showModal();
  });
}

// formStatus is the line under a form that says what happened.
export const formStatus = (id) => h('div', {id, class: 'form-status', 'aria-live': 'polite'});

// saved says a change went through.
export const saved = (text) => h('p', {class: 'ok', role: 'status'}, text);

export {errorBox};
