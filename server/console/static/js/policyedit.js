// The site policy editor: the policy's rules, priorities and lingers as
// rows of controls, saved as one document (SetLicensePolicy replaces the
// whole policy; no rows removes it). Each control names its API field
// ("rules[1].count"), so a refusal shows next to it (form.js).
import {setPolicy} from './api.js';
import {h, replace} from './dom.js';
import {field, durationField, formStatus, showError, saved, clearErrors} from './form.js';

const RULE_KINDS = [['KIND_RESERVE', 'reserve'], ['KIND_MAX', 'max'], ['KIND_INCLUDE', 'include'], ['KIND_EXCLUDE', 'exclude']];
const SUBJECT_KINDS = [['KIND_USER', 'user'], ['KIND_HOST', 'host'], ['KIND_GROUP', 'group of users'], ['KIND_HOST_GROUP', 'group of hosts']];

const select = (options, value) => h('select', {}, options.map(([v, text]) => h('option', {value: v, selected: v === value}, text)));

// policyEditor builds the editor for policy and calls onSaved(policy) once
// the API took it.
export function policyEditor({licenseId, policy, page, onSaved}) {
  const rows = {rules: [], priorities: [], linger: []};
  const lists = {
    rules: h('ol', {class: 'edit-rows', id: 'policy-rules'}),
    priorities: h('ol', {class: 'edit-rows', id: 'policy-priorities'}),
    linger: h('ol', {class: 'edit-rows', id: 'policy-linger'}),
  };
  const status = formStatus('policy-status');
  const save = h('button', {type: 'submit', id: 'policy-save'}, 'Save the policy');

  // renumber gives each row's controls their index: ids and API fields
  // follow the row's place in the list as rows come and go.
  const renumber = (kind) => rows[kind].forEach((r, i) => r.number(i));

  function addRow(kind, make) {
    const row = make();
    const remove = h('button', {type: 'button', class: 'quiet small', 'aria-label': ''}, 'Remove');
    const li = h('li', {class: 'edit-row', dataset: {kind}}, row.el, remove);
    row.li = li;
    rows[kind].push(row);
    remove.addEventListener('click', () => {
      rows[kind].splice(rows[kind].indexOf(row), 1);
      li.remove();
      renumber(kind);
    });
    row.remove = remove;
    lists[kind].append(li);
    renumber(kind);
    return row;
  }

  // A row's controls: built once, then numbered (id, label target and
  // data-field) by number(i).
  function controls(kind, spec) {
    const built = spec.map(([key, label, control, help]) => ({key, label, control, help}));
    const el = h('div', {class: 'row'});
    return {
      el, built,
      number(i) {
        replace(el);
        for (const c of built) {
          const id = `policy-${kind}-${i}-${c.key.replace(/\./g, '-')}`;
          if (c.control.duration) {
            const f = durationField({id, label: c.label, value: c.control.value(), apiField: `${kind}[${i}].${c.key}`});
            c.control.duration = f.duration;
            c.control.value = () => f.duration();
            el.append(f.el);
          } else {
            el.append(field({id, label: c.label, control: c.control, help: c.help, apiField: `${kind}[${i}].${c.key}`,
              check: c.control.type === 'checkbox'}));
          }
        }
        this.remove.setAttribute('aria-label', `Remove ${kind === 'rules' ? 'rule' : kind === 'linger' ? 'linger' : 'priority'} ${i + 1}`);
      },
    };
  }

  const ruleRow = (r = {kind: 'KIND_RESERVE', count: 1, subject: {kind: 'KIND_USER'}}) => {
    const kind = select(RULE_KINDS, r.kind);
    const count = h('input', {type: 'number', min: 0, step: 1, value: r.count || 0});
    const feature = h('input', {type: 'text', value: r.feature || '', placeholder: 'base pool'});
    const subjectKind = select(SUBJECT_KINDS, (r.subject || {}).kind);
    const subjectName = h('input', {type: 'text', value: (r.subject || {}).name || ''});
    const each = h('input', {type: 'checkbox', checked: Boolean(r.eachMember)});
    const row = controls('rules', [
      ['kind', 'Rule', kind], ['count', 'Count', count, 'reserve, max: 1 or more; include, exclude: 0'],
      ['subject.kind', 'Of', subjectKind], ['subject.name', 'Name', subjectName],
      ['feature', 'Feature', feature, 'empty: the base pool'], ['each_member', 'Each member (max on a group)', each]]);
    row.value = () => ({
      kind: kind.value, feature: feature.value.trim(), count: Number(count.value || 0),
      subject: {kind: subjectKind.value, name: subjectName.value.trim()}, eachMember: each.checked,
    });
    return row;
  };
  const priorityRow = (p = {level: 1, subject: {kind: 'KIND_GROUP'}}) => {
    const level = h('input', {type: 'number', min: -1000, max: 1000, step: 1, value: p.level || 0});
    const feature = h('input', {type: 'text', value: p.feature || '', placeholder: 'base pool'});
    const subjectKind = select(SUBJECT_KINDS, (p.subject || {}).kind);
    const subjectName = h('input', {type: 'text', value: (p.subject || {}).name || ''});
    const row = controls('priorities', [
      ['level', 'Level', level, 'higher waits less; -1000 to 1000'],
      ['subject.kind', 'Of', subjectKind], ['subject.name', 'Name', subjectName],
      ['feature', 'Feature', feature, 'empty: the base pool']]);
    row.value = () => ({level: Number(level.value || 0), feature: feature.value.trim(),
      subject: {kind: subjectKind.value, name: subjectName.value.trim()}});
    return row;
  };
  const lingerRow = (l = {duration: '300s'}) => {
    let current = l.duration;
    const duration = {duration: true, value: () => current};
    const feature = h('input', {type: 'text', value: l.feature || '', placeholder: 'base pool'});
    const row = controls('linger', [['duration', 'Released seats stay counted for', duration], ['feature', 'Feature', feature, 'empty: the base pool']]);
    row.value = () => {
      current = duration.value();
      return {feature: feature.value.trim(), duration: current || '0s'};
    };
    return row;
  };

  for (const r of policy.rules || []) addRow('rules', () => ruleRow(r));
  for (const p of policy.priorities || []) addRow('priorities', () => priorityRow(p));
  for (const l of policy.linger || []) addRow('linger', () => lingerRow(l));

  const adder = (id, text, kind, make) => h('button', {type: 'button', class: 'quiet', id, onclick: () => {
    const row = addRow(kind, make);
    row.el.querySelector('input, select').focus();
  }}, text);

  const form = h('form', {id: 'policy-form', class: 'card', novalidate: true},
    h('h3', {id: 'policy-rules-h'}, 'Rules'),
    h('p', {class: 'help'}, 'Reserve keeps seats for someone; max caps what someone holds; include lets only those named take a feature; exclude refuses someone.'),
    lists.rules, adder('policy-add-rule', 'Add a rule', 'rules', () => ruleRow()),
    h('h3', {id: 'policy-priorities-h'}, 'Priorities in the queue'),
    lists.priorities, adder('policy-add-priority', 'Add a priority', 'priorities', () => priorityRow()),
    h('h3', {id: 'policy-linger-h'}, 'Linger'),
    lists.linger, adder('policy-add-linger', 'Add a linger', 'linger', () => lingerRow()),
    h('div', {}, save), status);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    save.disabled = true;
    clearErrors(form);
    replace(status, h('p', {}, 'Saving…'));
    try {
      const body = {
        rules: rows.rules.map((r) => r.value()),
        priorities: rows.priorities.map((r) => r.value()),
        linger: rows.linger.map((r) => r.value()),
      };
      const set = await setPolicy(licenseId, body);
      replace(status, saved(`Saved: ${(set.rules || []).length} rules, ${(set.priorities || []).length} priorities, ` +
        `${(set.linger || []).length} lingers.`));
      onSaved(set);
    } catch (err) {
      showError(form, status, err, page);
    } finally {
      save.disabled = false;
    }
  });
  return form;
}
