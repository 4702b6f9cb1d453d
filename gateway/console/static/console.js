// The Inrun console: a page over the gateway's JSON API (/v1), nothing
// else. The token lives in this tab's sessionStorage and goes out only as
// an Authorization header. Every text from the API is set with
// textContent, never as HTML.
'use strict';

const TOKEN_KEY = 'inrun.token';
const SETTLED = new Set(['ready', 'failed', 'deleted']);

const state = {
  targets: [],         // TargetInfo, as GET /v1/targets answers
  watching: new Map(), // intent key -> AbortController of its watch
  editing: null,       // the View being edited, or null for a new intent
  armed: new Map(),    // intent key -> until when (ms) its Delete button asks to confirm
};

// A delete asks once: the first click arms the intent's button for a few
// seconds, a second click deletes. Not a native dialog: it would stop the
// page, its watches with it, until answered.
const ARMED_MS = 5000;

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) {
    if (c !== null && c !== undefined) e.append(c);
  }
  return e;
}

function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

function setStatus(msg) { $('status').textContent = msg; }

// api sends one request and returns {status, body}: body is the decoded
// JSON (a View, a list, or a problem+json Problem).
async function api(method, path, body) {
  const headers = { Authorization: 'Bearer ' + token() };
  const init = { method, headers, cache: 'no-store', referrerPolicy: 'no-referrer' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  let data = null;
  try { data = await res.json(); } catch (_) { /* an empty body */ }
  if (res.status === 401) {
    setStatus('The token is refused: ' + describe(data) + ' Enter another.');
  }
  return { status: res.status, body: data };
}

function describe(p) {
  if (!p) return '';
  return [p.detail, p.fix].filter(Boolean).join(' — ');
}

function target(name) { return state.targets.find((t) => t.name === name); }

function intentKey(v) {
  const t = target(v.target);
  const env = t && t.environmentField ? (v.intent || {})[t.environmentField] : '';
  return v.target + '/' + (env ? env + '/' : '') + v.name;
}

// ---- token ----

async function useToken(tok) {
  sessionStorage.setItem(TOKEN_KEY, tok);
  $('token').value = '';
  const r = await api('GET', '/v1/targets');
  if (r.status !== 200) {
    if (r.status !== 401) setStatus('Could not list the targets: ' + describe(r.body));
    showSections(false);
    return;
  }
  state.targets = r.body.items || [];
  setStatus(state.targets.length + ' target(s) this token may use.');
  showSections(true);
  renderTargets();
  renderTargetSelect();
  newIntent();
  await loadIntents();
}

function forget() {
  sessionStorage.removeItem(TOKEN_KEY);
  for (const c of state.watching.values()) c.abort();
  state.watching.clear();
  state.targets = [];
  $('intents').replaceChildren();
  showSections(false);
  setStatus('The token is forgotten.');
}

function showSections(on) {
  for (const id of ['targets-section', 'form-section', 'intents-section']) $(id).hidden = !on;
  if (!on) $('play-section').hidden = true;
}

// ---- targets ----

function renderTargets() {
  const list = $('targets');
  list.replaceChildren();
  for (const t of state.targets) {
    const rows = t.fields.map((f) => el('tr', { 'data-field': f.name },
      el('th', { scope: 'row', text: f.name }),
      el('td', { text: f.type }),
      el('td', { text: f.required ? 'required' : '' }),
      el('td', { text: f.default !== undefined ? JSON.stringify(f.default) : '' }),
      el('td', { text: f.enum ? f.enum.map((e) => JSON.stringify(e)).join(', ') : (f.pattern ? 'matches ' + f.pattern : '') }),
      el('td', { text: f.description || '' })));
    const allowed = Object.entries(t.allowed || {})
      .map(([verb, envs]) => verb + (envs && envs.length ? ' (' + envs.join(', ') + ')' : '')).join('; ');
    list.append(el('li', { 'data-target': t.name },
      el('h3', { text: t.name }),
      t.description ? el('p', { text: t.description }) : null,
      el('p', { class: 'hint', text: 'Your token may: ' + allowed }),
      el('table', {},
        el('caption', { class: 'hint', text: 'Fields of ' + t.name }),
        el('thead', {}, el('tr', {}, ...['field', 'type', '', 'default', 'values', 'description'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, ...rows))));
  }
}

function renderTargetSelect() {
  const sel = $('form-target');
  sel.replaceChildren(...state.targets
    .filter((t) => t.allowed && t.allowed.create)
    .map((t) => el('option', { value: t.name, text: t.name })));
}

// ---- the intent form ----

// control builds the input of one field: a select for an enum or a
// boolean, a text box otherwise, so that the gateway, not the browser,
// judges every value and names the field at fault.
function control(f, value) {
  const id = 'field-' + f.name;
  const described = ['problem-' + f.name];
  if (f.description || f.pattern) described.unshift('hint-' + f.name);
  const common = { id, name: f.name, 'aria-describedby': described.join(' '), 'aria-required': f.required ? 'true' : null };
  let input;
  const choices = f.enum || (f.type === 'boolean' ? [true, false] : null);
  if (choices) {
    const opts = [el('option', { value: '', text: f.required ? '(choose)' : '(leave out' + (f.default !== undefined ? ': ' + JSON.stringify(f.default) : '') + ')' })];
    for (const c of choices) {
      const v = JSON.stringify(c);
      opts.push(el('option', { value: v, text: typeof c === 'string' ? c : v, selected: value !== undefined ? JSON.stringify(value) === v : false }));
    }
    input = el('select', common, ...opts);
  } else {
    input = el('input', Object.assign({
      type: 'text',
      inputmode: f.type === 'integer' ? 'numeric' : (f.type === 'number' ? 'decimal' : null),
      pattern: f.pattern || null,
      placeholder: f.default !== undefined ? String(f.default) : null,
      spellcheck: 'false',
    }, common));
    if (value !== undefined) input.value = String(value);
  }
  input.dataset.type = f.type;
  input.dataset.choice = choices ? 'true' : 'false';
  const hint = [f.description, f.pattern ? 'Matches ' + f.pattern + '.' : '', f.default !== undefined ? 'Default ' + JSON.stringify(f.default) + '.' : '']
    .filter(Boolean).join(' ');
  return el('div', { class: 'field', 'data-field': f.name },
    el('label', { for: id, text: f.name + (f.required ? ' (required)' : '') + ' — ' + f.type }),
    input,
    hint ? el('p', { id: 'hint-' + f.name, class: 'hint', text: hint }) : null,
    el('p', { id: 'problem-' + f.name, class: 'field-problem', hidden: true }));
}

function renderFields(values) {
  const t = target($('form-target').value);
  const fs = $('fields');
  fs.replaceChildren(el('legend', { text: t ? 'Fields of ' + t.name : 'Fields' }));
  if (!t) return;
  for (const f of t.fields) fs.append(control(f, values ? values[f.name] : undefined));
  clearProblems();
}

function newIntent() {
  state.editing = null;
  $('form-target').disabled = false;
  $('editing').hidden = true;
  $('submit').textContent = 'Create';
  renderFields();
}

function edit(v) {
  state.editing = v;
  $('form-target').value = v.target;
  $('form-target').disabled = true;
  $('editing').hidden = false;
  $('editing').textContent = 'Changing intent ' + v.name + ' of ' + v.target + '.';
  $('submit').textContent = 'Update';
  renderFields(v.intent);
  $('form-heading').scrollIntoView();
}

// draft reads the form as an intent: a field left empty is left out, so
// that its default applies; a number that does not parse is sent as typed,
// for the gateway to refuse by name.
function draft() {
  const body = {};
  for (const input of $('fields').querySelectorAll('input, select')) {
    const raw = input.value.trim();
    if (raw === '') continue;
    if (input.dataset.choice === 'true') {
      body[input.name] = JSON.parse(raw);
    } else if ((input.dataset.type === 'integer' || input.dataset.type === 'number') && raw !== '' && !isNaN(Number(raw))) {
      body[input.name] = Number(raw);
    } else {
      body[input.name] = raw;
    }
  }
  return body;
}

function clearProblems() {
  for (const p of $('fields').querySelectorAll('.field-problem')) { p.hidden = true; p.textContent = ''; }
  for (const i of $('fields').querySelectorAll('[aria-invalid]')) i.removeAttribute('aria-invalid');
  $('form-problem').hidden = true;
  $('form-problem').replaceChildren();
}

// showProblem puts each field's problem next to its field, and the rest
// (detail and fix) above the buttons.
function showProblem(p) {
  clearProblems();
  const box = $('form-problem');
  box.hidden = false;
  box.append(el('p', { text: p.detail || 'The gateway refused the intent.' }), p.fix ? el('p', { class: 'hint', text: 'Fix: ' + p.fix }) : null);
  box.dataset.code = p.code || '';
  for (const fp of p.fields || []) {
    const msg = $('problem-' + fp.field);
    const input = $('field-' + fp.field);
    if (!msg || !input) {
      box.append(el('p', { text: fp.field + ': ' + fp.message }));
      continue;
    }
    msg.hidden = false;
    msg.textContent = msg.textContent ? msg.textContent + ' ' + fp.message : fp.message;
    input.setAttribute('aria-invalid', 'true');
  }
  // The first field at fault, in the form's order, gets the focus.
  const first = $('fields').querySelector('[aria-invalid=true]');
  if (first) first.focus();
}

async function submit(ev) {
  ev.preventDefault();
  const t = $('form-target').value;
  const body = draft();
  const r = state.editing
    ? await api('PUT', '/v1/targets/' + encodeURIComponent(t) + '/intents/' + encodeURIComponent(state.editing.name), body)
    : await api('POST', '/v1/targets/' + encodeURIComponent(t) + '/intents', body);
  if (r.status >= 400) {
    showProblem(r.body || {});
    setStatus('The gateway refused the intent (' + r.status + ').');
    return;
  }
  clearProblems();
  setStatus((state.editing ? 'Updated' : 'Created') + ' intent ' + r.body.name + ' of ' + r.body.target + '.');
  showIntent(r.body);
  watch(r.body, true);
  newIntent();
}

// ---- play ----

async function play() {
  const t = $('form-target').value;
  let path = '/v1/targets/' + encodeURIComponent(t) + '/play';
  if (state.editing) path += '?name=' + encodeURIComponent(state.editing.name);
  const out = $('play-result');
  $('play-section').hidden = false;
  out.removeAttribute('data-accepted');
  out.replaceChildren(el('p', { text: 'Playing…' }));
  const r = await api('POST', path, draft());
  if (r.status !== 200) {
    out.replaceChildren(el('p', { class: 'problem', role: 'alert', text: 'Play failed (' + r.status + '): ' + describe(r.body) }));
    return;
  }
  const a = r.body;
  out.dataset.accepted = String(a.accepted);
  out.replaceChildren(
    el('p', { class: 'verdict', text: a.accepted ? 'The gateway would accept this intent.' : 'The gateway would refuse this intent: ' + describe(a.problem) }),
    el('ol', { class: 'stages' }, ...a.stages.map((s) => el('li', { class: 'stage' },
      el('details', { open: true }, el('summary', { text: s.title }), el('pre', { text: s.text }))))));
  $('play-heading').scrollIntoView();
}

// ---- intents ----

async function loadIntents() {
  const seen = new Set();
  for (const t of state.targets) {
    if (!t.allowed || !t.allowed.list) continue;
    const r = await api('GET', t.links.intents);
    if (r.status !== 200) {
      setStatus('Could not list the intents of ' + t.name + ': ' + describe(r.body));
      continue;
    }
    for (const v of r.body.items) {
      seen.add(intentKey(v));
      showIntent(v);
      watch(v, false);
    }
  }
  for (const li of [...$('intents').children]) {
    if (!seen.has(li.dataset.intent)) li.remove();
  }
  updateEmpty();
}

function updateEmpty() { $('intents-empty').hidden = $('intents').children.length > 0; }

function showIntent(v) {
  const key = intentKey(v);
  let li = [...$('intents').children].find((e) => e.dataset.intent === key);
  if (v.state === 'deleted') {
    if (li) li.remove();
    updateEmpty();
    setStatus('Intent ' + v.name + ' of ' + v.target + ' is deleted.');
    return;
  }
  const fresh = el('li', { 'data-intent': key, 'data-state': v.state, 'aria-labelledby': 'intent-' + key },
    el('h3', { id: 'intent-' + key },
      document.createTextNode(v.name + ' '),
      el('span', { class: 'hint', text: '(' + v.target + ') ' }),
      el('span', { class: 'state', 'data-state': v.state, text: v.state })),
    v.message ? el('p', { class: 'message', text: v.message }) : null,
    dl('Intent', v.intent),
    dl('View', v.view),
    problems(v.problems),
    el('p', { class: 'hint', text: [v.createdBy ? 'made by ' + v.createdBy : '', v.created ? 'at ' + v.created : ''].filter(Boolean).join(' ') }),
    el('p', { class: 'actions' },
      el('button', { type: 'button', class: 'edit', 'aria-label': 'Change intent ' + v.name, onclick: () => edit(v), text: 'Change' }),
      deleteButton(v)));
  if (li) li.replaceWith(fresh); else $('intents').append(fresh);
  updateEmpty();
}

function dl(title, obj) {
  const keys = Object.keys(obj || {}).sort();
  if (!keys.length) return null;
  return el('div', { class: title.toLowerCase() },
    el('h4', { class: 'hint', text: title }),
    el('dl', {}, ...keys.flatMap((k) => [el('dt', { text: k }), el('dd', { 'data-key': k, text: typeof obj[k] === 'string' ? obj[k] : JSON.stringify(obj[k]) })])));
}

function problems(list) {
  if (!list || !list.length) return null;
  return el('ul', { class: 'problems', 'aria-label': 'Problems' }, ...list.map((p) => el('li', { class: 'problem',
    text: (p.fields && p.fields.length ? p.fields.join(', ') + ': ' : '') + p.message })));
}

// watch follows an intent's view over the watch endpoint (server-sent
// events, read with fetch so that the token goes in a header) until it
// settles; restart follows it again after a change.
async function watch(v, restart) {
  const key = intentKey(v);
  if (state.watching.has(key)) {
    if (!restart) return;
    state.watching.get(key).abort();
  }
  if (!restart && SETTLED.has(v.state)) return;
  const ctl = new AbortController();
  state.watching.set(key, ctl);
  let last = v;
  try {
    const res = await fetch(v.links.watch, { headers: { Authorization: 'Bearer ' + token() }, signal: ctl.signal, cache: 'no-store' });
    if (res.status === 404) {
      // Gone before the watch began: a delete that finished quickly.
      last = Object.assign({}, v, { state: 'deleted' });
      showIntent(last);
      return;
    }
    if (!res.ok) {
      let p = null;
      try { p = await res.json(); } catch (_) { /* not a problem body */ }
      setStatus('Cannot follow ' + v.name + ' (' + res.status + '): ' + describe(p));
      return;
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const chunk = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let event = 'message';
        let data = '';
        for (const line of chunk.split('\n')) {
          if (line.startsWith('event: ')) event = line.slice(7);
          else if (line.startsWith('data: ')) data += line.slice(6);
        }
        if (event === 'view') {
          last = JSON.parse(data);
          showIntent(last);
        }
      }
    }
  } catch (e) {
    if (e.name === 'AbortError') return;
    setStatus('Lost the watch of ' + v.name + ': ' + e.message);
  } finally {
    if (state.watching.get(key) === ctl) state.watching.delete(key);
  }
  // The watch ends when the view settles, or at the gateway's --max-wait:
  // then follow it again.
  if (!SETTLED.has(last.state) && token()) setTimeout(() => watch(last, false), 1000);
}

function deleteButton(v) {
  const key = intentKey(v);
  const armed = (state.armed.get(key) || 0) > Date.now();
  const button = el('button', {
    type: 'button', class: armed ? 'delete armed' : 'delete',
    'aria-label': (armed ? 'Confirm: delete intent ' : 'Delete intent ') + v.name,
    text: armed ? 'Confirm delete' : 'Delete',
  });
  button.onclick = () => {
    if ((state.armed.get(key) || 0) > Date.now()) {
      state.armed.delete(key);
      remove(v);
      return;
    }
    state.armed.set(key, Date.now() + ARMED_MS);
    button.replaceWith(deleteButton(v));
    setStatus('Click "Confirm delete" to delete intent ' + v.name + ' of ' + v.target + ', and everything made for it.');
    setTimeout(() => {
      const li = [...$('intents').children].find((e) => e.dataset.intent === key);
      const b = li && li.querySelector('button.delete.armed');
      if (b && (state.armed.get(key) || 0) <= Date.now()) b.replaceWith(deleteButton(v));
    }, ARMED_MS + 50);
  };
  return button;
}

async function remove(v) {
  const r = await api('DELETE', v.links.self);
  if (r.status >= 400) {
    setStatus('Could not delete ' + v.name + ': ' + describe(r.body));
    return;
  }
  setStatus('Deleting intent ' + v.name + ' of ' + v.target + '…');
  showIntent(r.body);
  if (r.body.state !== 'deleted') watch(Object.assign({}, r.body, { links: v.links }), true);
}

// ---- start ----

document.addEventListener('DOMContentLoaded', () => {
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const tok = $('token').value.trim();
    if (tok) useToken(tok);
  });
  $('forget').addEventListener('click', forget);
  $('form-target').addEventListener('change', () => renderFields());
  $('intent-form').addEventListener('submit', submit);
  $('play-button').addEventListener('click', play);
  $('new-intent').addEventListener('click', newIntent);
  $('refresh').addEventListener('click', loadIntents);
  if (token()) useToken(token());
});
