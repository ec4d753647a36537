import {ApiError} from './api.js';
import {h} from './dom.js';

// errorBox shows an error as the API stated it (its message, verbatim),
// with the HTTP status, gRPC code and ErrorInfo reason beneath.
export function errorBox(err) {
  const facts = [];
  if (err instanceof ApiError) {
    if (err.status) facts.push(`HTTP ${err.status}`);
    if (err.code) facts.push(err.code);
    if (err.reason && err.reason !== err.code) facts.push(err.reason);
  }
  return h('div', {class: 'error', role: 'alert'},
    h('p', {class: 'error-message'}, err instanceof Error ? err.message : String(err)),
    facts.length ? h('p', {class: 'error-facts'}, facts.join(' · ')) : null);
}
