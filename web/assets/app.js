// buzz-lite's chat client (CW-26): the web view's pages, made interactive
// once a member signs in with their own signer (NIP-07 window.nostr, or a
// NIP-46 bunker). No framework, no build step: this file is served as is.
//
// Safe by construction: event content, names and channel names reach the
// page only as text (textContent, text nodes) or as the href of an
// http(s) link made here; nothing is parsed as HTML and nothing is
// evaluated. Only a click of the member's signs: signing in (which
// authenticates the page's socket and its /query requests) and each
// write. The client trusts the relay that served it and does not verify
// overlay signatures (CL-3 is for other clients).

const meta = document.querySelector('meta[name="buzz-relay"]');
const RELAY = meta ? meta.content : '';
const QUERY_URL = RELAY.replace(/^ws/, 'http').replace(/\/+$/, '') + '/query';
const NIP46 = document.body.dataset.nip46 || '';
const ROW_TEXT = 8192; // as the server clips a row (RowTextBytes)
const PAGE_ROWS = 50;
const AUX_KINDS = [5, 7, 40003];

const state = {signer: null, pubkey: '', names: new Map(), pictures: new Map(), gen: 0, subs: 0, view: null};

// ---- small helpers ---------------------------------------------------

function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c); // strings become text nodes
  return e;
}

const now = () => Math.floor(Date.now() / 1000);
const tag = (ev, name) => (ev.tags.find((t) => t[0] === name) || [])[1];
const isHex64 = (s) => typeof s === 'string' && /^[0-9a-f]{64}$/i.test(s);

// clean is s without control and formatting characters (bidi overrides
// among them) and at most n characters, as the server shows a name.
function clean(s, n) {
  const t = String(s || '').replace(/[\p{Cc}\p{Cf}]/gu, ' ').trim();
  const chars = [...t];
  return chars.length > n ? chars.slice(0, n).join('') + '…' : t;
}

// content renders text into parent: http(s) URLs as nofollow links, the
// rest as text, at most limit characters.
function content(parent, text, limit) {
  let s = String(text);
  const clipped = s.length > limit;
  if (clipped) s = s.slice(0, limit);
  const re = /https?:\/\/[^\s\p{C}<>"']+/gu;
  let at = 0;
  for (const m of s.matchAll(re)) {
    let u = m[0].replace(/[.,;:!?)\]]+$/, '');
    let href = '';
    try {
      const p = new URL(u);
      if ((p.protocol === 'http:' || p.protocol === 'https:') && p.host) href = p.href;
    } catch { /* not a URL: text */ }
    if (!href) continue;
    parent.append(s.slice(at, m.index), el('a', {href, rel: 'nofollow noopener ugc', text: u}));
    at = m.index + u.length;
  }
  parent.append(s.slice(at) + (clipped ? '…' : ''));
  return clipped;
}

function when(ts) {
  const d = new Date(ts * 1000);
  const utc = d.toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
  return el('time', {datetime: d.toISOString().replace(/\.\d+Z$/, 'Z'), text: utc});
}

// npub is the NIP-19 form of a hex public key (bech32, an encoding).
function npub(hex) {
  const CH = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
  const data = [];
  let acc = 0, bits = 0;
  for (let i = 0; i < 64; i += 2) {
    acc = (acc << 8) | parseInt(hex.slice(i, i + 2), 16); bits += 8;
    while (bits >= 5) { bits -= 5; data.push((acc >> bits) & 31); }
  }
  if (bits) data.push((acc << (5 - bits)) & 31);
  const G = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
  const poly = (v) => {
    let c = 1;
    for (const x of v) {
      const b = c >> 25; c = ((c & 0x1ffffff) << 5) ^ x;
      for (let i = 0; i < 5; i++) if ((b >> i) & 1) c ^= G[i];
    }
    return c;
  };
  const hrp = 'npub';
  const pre = [...hrp].map((c) => c.charCodeAt(0) >> 5).concat([0], [...hrp].map((c) => c.charCodeAt(0) & 31));
  const p = poly(pre.concat(data, [0, 0, 0, 0, 0, 0])) ^ 1;
  const sum = [0, 1, 2, 3, 4, 5].map((i) => (p >> (5 * (5 - i))) & 31);
  return hrp + '1' + data.concat(sum).map((x) => CH[x]).join('');
}

function nameOf(pk) {
  const n = state.names.get(pk);
  if (n) return n;
  const s = isHex64(pk) ? npub(pk.toLowerCase()) : String(pk);
  return s.slice(0, 12) + '…';
}

// link is the page of channel ch, or of its thread ev, as the server
// links it (pageLink): `.` and `..` go in the query.
function link(ch, ev) {
  if (ch === '.' || ch === '..') return '/c/?' + new URLSearchParams(ev ? {h: ch, t: ev} : {h: ch});
  return '/c/' + encodeURIComponent(ch) + (ev ? '/t/' + ev : '');
}

function route() {
  const path = location.pathname, q = new URLSearchParams(location.search);
  if (path === '/') return {kind: 'index'};
  if (!path.startsWith('/c/')) return {kind: 'none'};
  let rest = path.slice(3), ch, ev;
  if (rest === '') { ch = q.get('h'); ev = q.has('t') ? q.get('t') : null; }
  else {
    const i = rest.indexOf('/t/');
    ch = decodeURIComponent(i < 0 ? rest : rest.slice(0, i));
    ev = i < 0 ? null : rest.slice(i + 3);
  }
  if (!ch) return {kind: 'none'};
  if (ev == null) return {kind: 'channel', ch};
  return isHex64(ev) ? {kind: 'thread', ch, ev: ev.toLowerCase()} : {kind: 'none'};
}

// status shows a line to the member: the relay's own words on a refusal.
function status(msg, error) {
  const s = document.querySelector('.status');
  if (!s) return;
  s.textContent = msg || '';
  s.classList.toggle('error', !!error);
}

// thread reads an event's NIP-10 marked e tags as the relay does (CW-10):
// the last valid `reply` is the parent, else the `root`.
function thread(ev) {
  let root = '', reply = '';
  for (const t of ev.tags) {
    if (t[0] !== 'e' || t.length < 4 || !isHex64(t[1])) continue;
    if (t[3] === 'root') root = t[1].toLowerCase();
    if (t[3] === 'reply') reply = t[1].toLowerCase();
  }
  return {root: root || reply, parent: reply || root};
}

// ---- signing, /query and the socket --------------------------------

async function sign(tmpl) {
  if (!state.signer) throw new Error('sign in first');
  return state.signer.signEvent({created_at: now(), content: '', tags: [], ...tmpl});
}

function b64(s) {
  let bin = '';
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin);
}

async function sha256hex(s) {
  if (!crypto.subtle) return ''; // insecure context: the payload tag is optional (RL-17)
  const d = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(s));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// query posts filters to the relay's /query, NIP-98 signed when signed in.
async function query(filters) {
  const body = JSON.stringify(filters);
  const headers = {'Content-Type': 'application/json'};
  if (state.signer) {
    // The nonce makes each token unique: a signer that signs
    // deterministically would sign two requests of one body in one second
    // alike, and the relay refuses a token seen before (RL-17).
    const nonce = [...crypto.getRandomValues(new Uint8Array(8))].map((b) => b.toString(16).padStart(2, '0')).join('');
    const tags = [['u', QUERY_URL], ['method', 'POST'], ['nonce', nonce]];
    const sum = await sha256hex(body);
    if (sum) tags.push(['payload', sum]);
    headers.Authorization = 'Nostr ' + b64(JSON.stringify(await sign({kind: 27235, tags})));
  }
  const res = await fetch('/query', {method: 'POST', headers, body});
  const text = await res.text();
  if (!res.ok) {
    let msg = text;
    try { msg = JSON.parse(text).error || text; } catch { /* plain text */ }
    throw new Error(String(msg).trim() || 'HTTP ' + res.status);
  }
  return JSON.parse(text);
}

// Relay is the page's one WebSocket: NIP-42 AUTH when signed in, the
// open view's subscription, and publishing with the relay's OK.
class Relay {
  constructor(url) {
    this.url = url; this.subs = new Map(); this.oks = new Map(); this.challenge = '';
    this.authed = false; this.waiters = []; this.delay = 500; this.open();
  }
  open() {
    this.ws = new WebSocket(this.url);
    this.ws.onopen = () => { this.delay = 500; if (!state.signer) this.ready(); };
    this.ws.onclose = () => {
      this.authed = false;
      setTimeout(() => this.open(), this.delay);
      this.delay = Math.min(this.delay * 2, 15000);
    };
    this.ws.onmessage = (m) => this.receive(m.data);
  }
  send(msg) { if (this.ws.readyState === 1) this.ws.send(JSON.stringify(msg)); }
  ready() {
    this.authed = true;
    for (const [id, s] of this.subs) this.send(['REQ', id, ...s.filters]);
    for (const w of this.waiters.splice(0)) w();
  }
  whenReady() { return this.authed ? Promise.resolve() : new Promise((r) => this.waiters.push(r)); }
  async auth() {
    if (!state.signer || !this.challenge || this.ws.readyState !== 1) return;
    const ev = await sign({kind: 22242, tags: [['relay', this.url], ['challenge', this.challenge]]});
    this.oks.set(ev.id, (ok, msg) => ok ? this.ready() : status('sign-in refused: ' + msg, true));
    this.send(['AUTH', ev]);
  }
  receive(data) {
    let m;
    try { m = JSON.parse(data); } catch { return; }
    if (!Array.isArray(m)) return;
    switch (m[0]) {
      case 'AUTH':
        this.challenge = String(m[1]);
        this.auth().catch((e) => status(e.message, true));
        break;
      case 'EVENT': {
        const s = this.subs.get(m[1]);
        if (s && m[2] && typeof m[2] === 'object') s.onevent(m[2]);
        break;
      }
      case 'OK': {
        const f = this.oks.get(m[1]);
        if (f) { this.oks.delete(m[1]); f(m[2] === true, String(m[3] || '')); }
        break;
      }
      case 'CLOSED':
        if (this.subs.has(m[1]) && !String(m[2]).startsWith('auth-required:')) status(String(m[2]), true);
        break;
    }
  }
  subscribe(id, filters, onevent) {
    this.subs.set(id, {filters, onevent});
    if (this.authed) this.send(['REQ', id, ...filters]);
  }
  unsubscribe(id) { if (this.subs.delete(id)) this.send(['CLOSE', id]); }
  // publish signs tmpl and sends it; it resolves with the event once the
  // relay accepted it and throws the relay's message when it refused.
  async publish(tmpl) {
    const ev = await sign(tmpl);
    await this.whenReady();
    const res = await new Promise((resolve) => {
      const timer = setTimeout(() => { this.oks.delete(ev.id); resolve([false, 'error: the relay did not answer']); }, 10000);
      this.oks.set(ev.id, (ok, msg) => { clearTimeout(timer); resolve([ok, msg]); });
      this.send(['EVENT', ev]);
    });
    if (!res[0]) throw new Error(res[1] || 'refused');
    return ev;
  }
}

let relay = null;

// ---- sign-in ---------------------------------------------------------

function account() {
  const top = document.querySelector('header.top');
  let box = top.querySelector('.account');
  if (!box) {
    box = el('div', {class: 'account'});
    top.append(box, el('p', {class: 'status', role: 'status'}));
  }
  box.replaceChildren();
  if (state.signer) {
    box.append(el('span', {class: 'me', title: npub(state.pubkey), text: nameOf(state.pubkey)}), ' ',
      el('button', {class: 'signout', type: 'button', text: 'Sign out', onclick: signOut}));
    return;
  }
  const bunker = el('input', {class: 'bunker-url', type: 'text', placeholder: 'bunker://…', 'aria-label': 'bunker URL', hidden: ''});
  const go = el('button', {class: 'bunker-go', type: 'button', text: 'Connect', hidden: '', onclick: () => signInBunker(bunker.value.trim())});
  box.append(
    el('button', {class: 'signin', type: 'button', text: 'Sign in', onclick: () => signIn(window.nostr, 'nip07')}), ' ',
    el('button', {class: 'signin-bunker', type: 'button', text: 'Sign in with bunker',
      onclick: () => { bunker.hidden = false; go.hidden = false; bunker.focus(); }}), ' ', bunker, ' ', go);
}

async function signIn(signer, how) {
  if (!signer || typeof signer.signEvent !== 'function') {
    status('No NIP-07 signer in this browser: install one (nos2x, Alby) or sign in with a bunker.', true);
    return;
  }
  try {
    const pk = await signer.getPublicKey();
    if (!isHex64(pk)) throw new Error('the signer gave no public key');
    state.signer = signer; state.pubkey = pk.toLowerCase();
  } catch (e) {
    status('sign-in failed: ' + e.message, true);
    return;
  }
  if (how === 'nip07') sessionStorage.setItem('buzz-signer', how);
  status('');
  account();
  document.querySelector('footer.bottom').textContent = 'Signed in: reading and writing as a member, through this relay.';
  if (!relay) relay = new Relay(RELAY);
  else relay.auth().catch((e) => status(e.message, true));
  loadNames([state.pubkey]).then(account);
  render();
}

async function signInBunker(url) {
  if (!url.startsWith('bunker://')) { status('A bunker URL starts with bunker://', true); return; }
  if (!NIP46.startsWith('/web/')) { status('bunker sign-in is not available here', true); return; }
  status('connecting to the bunker…');
  try {
    const mod = await import(NIP46);
    const signer = await mod.connectBunker(url, {
      timeout: 60000,
      onauth: (u) => {
        const s = document.querySelector('.status');
        let href = '';
        try { const p = new URL(u); if (p.protocol === 'https:' || p.protocol === 'http:') href = p.href; } catch { /* none */ }
        s.replaceChildren('The bunker asks you to approve: ', href ? el('a', {href, target: '_blank', rel: 'noopener noreferrer', text: href}) : String(u));
      },
    });
    await signIn(signer, 'bunker');
  } catch (e) {
    status('bunker sign-in failed: ' + e.message, true);
  }
}

function signOut() {
  sessionStorage.removeItem('buzz-signer');
  location.reload();
}

// ---- names -----------------------------------------------------------

async function loadNames(pks) {
  const want = [...new Set(pks)].filter((pk) => isHex64(pk) && !state.names.has(pk));
  if (!want.length) return;
  try {
    for (const ev of await query([{kinds: [0], authors: want, limit: want.length}])) {
      let p;
      try { p = JSON.parse(ev.content); } catch { continue; }
      const n = clean((p && (p.display_name || p.name)) || '', 48);
      if (n) state.names.set(ev.pubkey, n);
      const pic = p && pictureURL(p.picture);
      if (pic) state.pictures.set(ev.pubkey, pic);
    }
  } catch { return; }
  for (const a of document.querySelectorAll('main .author[data-pk]')) a.textContent = nameOf(a.dataset.pk);
  for (const a of document.querySelectorAll('main .avatar[data-pk]')) drawPicture(a);
}

// pictureURL is a kind 0 picture as an http(s) URL, or null.
function pictureURL(s) {
  if (typeof s !== 'string' || s.length > 2048) return null;
  try {
    const u = new URL(s);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u : null;
  } catch { return null; }
}

// drawPicture fills an author's picture slot: an image when the picture
// is on this relay's own origin (the CSP loads images from nowhere else),
// otherwise a plain link to it, which the browser fetches only if the
// reader follows it (CW-26: no third-party request).
function drawPicture(slot) {
  const u = state.pictures.get(slot.dataset.pk);
  if (!u) { slot.replaceChildren(); return; }
  slot.replaceChildren(u.origin === location.origin
    ? el('img', {src: u.href, alt: '', width: '20', height: '20', loading: 'lazy', referrerpolicy: 'no-referrer'})
    : el('a', {href: u.href, rel: 'nofollow noopener noreferrer', target: '_blank', title: 'picture', text: 'picture'}));
}

// ---- rows --------------------------------------------------------------

// A view keeps what it shows by event id, so that live events apply in
// place: rows, their reactions (by reaction id) and their newest edit.
function newView(kind, ch) {
  return {kind, ch, rows: new Map(), reactions: new Map(), edits: new Map(), sub: 'v' + (++state.subs), projection: false, pending: []};
}

function row(v, ev) {
  const r = {ev, el: null, body: null, marks: null, reactions: new Set(), replies: 0, edited: false};
  const own = ev.pubkey === state.pubkey;
  const body = el('p', {class: 'content'});
  const marks = el('div', {class: 'marks'});
  const acts = el('div', {class: 'acts'},
    el('button', {class: 'act-react', type: 'button', text: '+', title: 'react', onclick: () => react(v, r)}),
    el('button', {class: 'act-reply', type: 'button', text: 'reply', onclick: () => replyTo(v, r)}));
  if (own) {
    acts.append(el('button', {class: 'act-edit', type: 'button', text: 'edit', onclick: () => editRow(v, r)}),
      el('button', {class: 'act-delete', type: 'button', text: 'delete', onclick: (e) => deleteRow(v, r, e.target)}));
  }
  r.el = el('article', {class: 'msg', id: 'm-' + ev.id, 'data-id': ev.id},
    el('div', {class: 'meta'},
      avatar(ev.pubkey),
      el('span', {class: 'author', 'data-pk': ev.pubkey, title: isHex64(ev.pubkey) ? npub(ev.pubkey) : '', text: nameOf(ev.pubkey)}),
      el('a', {class: 'time', href: link(v.ch, ev.id)}, when(ev.created_at))),
    body, marks, acts);
  r.body = body; r.marks = marks;
  setText(v, r, ev.content);
  v.rows.set(ev.id, r);
  return r;
}

function avatar(pk) {
  const slot = el('span', {class: 'avatar', 'data-pk': pk});
  drawPicture(slot);
  return slot;
}

function setText(v, r, text) {
  r.body.replaceChildren();
  const clipped = content(r.body, text, v.kind === 'thread' && r.ev.id === v.root ? 8 * ROW_TEXT : ROW_TEXT);
  if (clipped) r.body.append(' ', el('a', {class: 'whole', href: link(v.ch, r.ev.id), text: 'the whole message'}));
}

function drawMarks(v, r) {
  const m = [];
  if (r.edited) m.push(el('span', {class: 'edited', text: 'edited'}));
  if (r.reactions.size) m.push(el('span', {class: 'reactions', text: r.reactions.size + (r.reactions.size === 1 ? ' reaction' : ' reactions')}));
  if (r.replies) m.push(el('a', {class: 'replies', href: link(v.ch, r.ev.id), text: r.replies + (r.replies === 1 ? ' reply' : ' replies')}));
  r.marks.replaceChildren(...m);
}

// applyAux applies a deletion, a reaction or an edit to what v shows.
function applyAux(v, ev) {
  const targets = ev.tags.filter((t) => t[0] === 'e' && isHex64(t[1])).map((t) => t[1].toLowerCase());
  if (ev.kind === 5) {
    for (const id of targets) {
      const r = v.rows.get(id);
      if (r && r.ev.pubkey === ev.pubkey) removeRow(v, r);
      const target = v.reactions.get(id);
      if (target && target.pk === ev.pubkey) {
        const tr = v.rows.get(target.row);
        if (tr) { tr.reactions.delete(id); drawMarks(v, tr); }
      }
    }
  } else if (ev.kind === 7) {
    const id = targets[targets.length - 1]; // NIP-25: the last e tag is the target
    const r = v.rows.get(id);
    v.reactions.set(ev.id, {row: id, pk: ev.pubkey});
    if (r) { r.reactions.add(ev.id); drawMarks(v, r); }
  } else if (ev.kind === 40003) {
    const r = v.rows.get(targets[0]);
    if (!r || r.ev.pubkey !== ev.pubkey) return;
    const last = v.edits.get(r.ev.id);
    if (last && last.created_at > ev.created_at) return;
    v.edits.set(r.ev.id, ev);
    r.edited = true;
    setText(v, r, ev.content);
    drawMarks(v, r);
  }
}

function removeRow(v, r) {
  v.rows.delete(r.ev.id);
  if (v.kind === 'thread') {
    r.body.replaceChildren('deleted message');
    r.body.classList.add('deleted');
    r.el.querySelector('.acts').remove();
  } else {
    r.el.remove();
  }
}

// ---- actions -----------------------------------------------------------

async function act(what, fn) {
  status(what + '…');
  try {
    await fn();
    status('');
  } catch (e) {
    status(e.message, true);
  }
}

function react(v, r) {
  act('reacting', () => relay.publish({kind: 7, content: '+',
    tags: [['e', r.ev.id, RELAY], ['p', r.ev.pubkey], ['h', v.ch], ['k', String(r.ev.kind)]]}));
}

function replyTo(v, r) {
  if (v.kind !== 'thread') { go(link(v.ch, r.ev.id)); return; }
  v.parent = r.ev;
  const c = document.querySelector('.compose');
  c.querySelector('.target').textContent = r.ev.id === v.root ? '' : 'replying to ' + nameOf(r.ev.pubkey);
  c.querySelector('textarea').focus();
}

function editRow(v, r) {
  if (r.el.querySelector('.edit')) return;
  const last = v.edits.get(r.ev.id);
  const area = el('textarea', {class: 'edit', rows: '3', 'aria-label': 'edit message'});
  area.value = last ? last.content : r.ev.content;
  const box = el('div', {class: 'editing'}, area,
    el('button', {class: 'save', type: 'button', text: 'save', onclick: () => act('saving', async () => {
      const ev = await relay.publish({kind: 40003, content: area.value, tags: [['e', r.ev.id, RELAY], ['h', v.ch]]});
      applyAux(v, ev);
      box.remove();
    })}),
    el('button', {type: 'button', text: 'cancel', onclick: () => box.remove()}));
  r.body.after(box);
  area.focus();
}

function deleteRow(v, r, button) {
  if (!button.classList.contains('sure')) {
    button.classList.add('sure');
    button.textContent = 'delete: sure?';
    return;
  }
  act('deleting', async () => {
    const ev = await relay.publish({kind: 5, tags: [['e', r.ev.id], ['h', v.ch], ['k', String(r.ev.kind)]]});
    applyAux(v, ev);
  });
}

function composer(v) {
  const area = el('textarea', {rows: '3', placeholder: v.kind === 'thread' ? 'Reply…' : 'Message…', 'aria-label': 'message'});
  const send = () => act('sending', async () => {
    const text = area.value;
    if (!text.trim()) return;
    const tags = [['h', v.ch]];
    if (v.kind === 'thread') {
      const parent = v.parent || v.rootEv;
      // NIP-10 as `buzz-lite post` writes it: the root alone for a direct
      // reply, root and reply deeper, and the parent's author.
      if (!parent) throw new Error('the thread has no message to reply to');
      if (parent.id === v.root) tags.push(['e', v.root, RELAY, 'root']);
      else tags.push(['e', v.root, RELAY, 'root'], ['e', parent.id, RELAY, 'reply']);
      tags.push(['p', parent.pubkey]);
    }
    const ev = await relay.publish({kind: 9, content: text, tags});
    area.value = '';
    live(v, ev);
  });
  area.addEventListener('keydown', (e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) send(); });
  return el('div', {class: 'compose'}, el('p', {class: 'target'}), area,
    el('button', {class: 'send', type: 'button', text: 'Send', onclick: send}));
}

// ---- live ----------------------------------------------------------------

// live applies an event of the open view's subscription (CL-4): a row of
// the window appears, a reply joins its thread, aux applies in place, and
// a 39005 summary moves its row's badge (CW-21).
function live(v, ev) {
  if (v !== state.view || !ev || typeof ev.id !== 'string') return;
  if (v.pending) { v.pending.push(ev); return; } // applied once the first page is shown
  if (ev.kind === 39005) { summary(v, ev); return; }
  if (AUX_KINDS.includes(ev.kind)) { applyAux(v, ev); return; }
  if (ev.kind !== 9 || v.rows.has(ev.id) || tag(ev, 'h') !== v.ch) return;
  const t = thread(ev);
  if (v.kind === 'channel') {
    const broadcast = ev.tags.some((x) => x[0] === 'broadcast' && x[1] === '1') && t.parent === t.root;
    if (t.parent && !v.projection && !broadcast) return; // a quiet reply: its badge comes as a 39005
    const r = row(v, ev);
    drawMarks(v, r);
    v.list.prepend(r.el);
    v.empty.hidden = true;
    seen(v.ch, ev.created_at);
  } else if (v.kind === 'thread' && t.root === v.root) {
    nestRow(v, ev);
  } else {
    return;
  }
  loadNames([ev.pubkey]); // a live author's name and picture, as a page's
}

// summary moves a row's reply badge to a 39005's count (CW-19, CW-21).
function summary(v, ev) {
  const r = v.rows.get(String(tag(ev, 'd')).toLowerCase());
  if (!r || v.kind !== 'channel') return;
  try { r.replies = Number(JSON.parse(ev.content).descendant_count) || 0; } catch { return; }
  drawMarks(v, r);
}

// shown applies what the subscription brought while the first page was
// read: the page has what it had then, live events what came since.
function shown(v) {
  const pending = v.pending;
  v.pending = null;
  for (const ev of pending) live(v, ev);
}

function nestRow(v, ev) {
  const t = thread(ev);
  const parent = v.rows.get(t.parent);
  const r = row(v, ev);
  drawMarks(v, r);
  const li = el('li', {}, r.el);
  const host = parent && parent.el.parentElement.tagName === 'LI' ? parent.el.parentElement : null;
  let tree = host ? host.querySelector(':scope > ul.tree') : v.tree;
  if (!tree) { tree = el('ul', {class: 'tree'}); host.append(tree); }
  tree.append(li);
}

function seen(ch, at) {
  const k = 'buzz-seen:' + ch;
  if (at > Number(localStorage.getItem(k) || 0)) localStorage.setItem(k, String(at));
}

function subscribe(v) {
  relay.subscribe(v.sub, [
    {kinds: [9, ...AUX_KINDS], '#h': [v.ch], since: now() - 10},
    {kinds: [39005], '#h': [v.ch], limit: 0},
  ], (ev) => live(v, ev));
}

// ---- views -----------------------------------------------------------------

function go(href) {
  history.pushState(null, '', href);
  render();
}

async function render() {
  if (!state.signer) return;
  if (state.view) relay.unsubscribe(state.view.sub);
  state.view = null;
  const main = document.querySelector('main');
  const rt = route();
  const gen = ++state.gen;
  const current = () => gen === state.gen;
  delete main.dataset.view;
  try {
    if (rt.kind === 'index') await index(main, current);
    else if (rt.kind === 'channel') await channel(main, rt.ch, current);
    else if (rt.kind === 'thread') await threadView(main, rt.ch, rt.ev, current);
    if (current()) main.dataset.view = rt.kind; // the client's view is shown
  } catch (e) {
    if (current()) status(e.message, true);
  }
}

function notFound(main, title) {
  document.title = 'Not found';
  main.replaceChildren(el('h1', {text: 'Not found'}), el('p', {text: 'There is no channel or message here that you can read.'}));
  if (title) status('');
}

async function index(main, current) {
  const evs = await query([
    {kinds: [39000], limit: 500},
    {kinds: [39002], '#p': [state.pubkey], limit: 500},
    {feed_types: ['activity'], limit: 100},
  ]);
  if (!current()) return;
  const chans = new Map(), mine = new Set(), last = new Map();
  for (const ev of evs) {
    const d = tag(ev, 'd');
    if (ev.kind === 39000 && d) chans.set(d, ev);
    else if (ev.kind === 39002 && d) mine.add(d);
    else if (ev.kind === 9 || ev.kind === 11) {
      const h = tag(ev, 'h');
      if (h && !(last.get(h) >= ev.created_at)) last.set(h, ev.created_at);
    }
  }
  const order = [...chans.keys()].sort((a, b) => (last.get(b) || 0) - (last.get(a) || 0));
  const list = el('ul', {class: 'channels'});
  for (const d of order) {
    const meta = chans.get(d);
    const at = last.get(d);
    const unread = at && at > Number(localStorage.getItem('buzz-seen:' + d) || 0);
    const li = el('li', {class: unread ? 'unread' : ''},
      el('a', {class: 'channel', href: link(d), text: clean(tag(meta, 'name'), 48) || d}));
    const marks = [];
    if (meta.tags.some((t) => t[0] === 'private')) marks.push(el('span', {class: 'private', text: 'private'}));
    if (mine.has(d)) marks.push(el('span', {class: 'member', text: 'member'}));
    if (unread) marks.push(el('span', {class: 'new', text: 'new'}));
    if (marks.length) li.append(' ', el('span', {class: 'marks'}, ...marks));
    const about = clean(tag(meta, 'about'), 280);
    if (about) li.append(el('p', {class: 'about', text: about}));
    if (at) li.append(el('p', {class: 'active'}, 'last message ', when(at)));
    list.append(li);
  }
  const name = el('input', {type: 'text', class: 'new-name', placeholder: 'new channel name', 'aria-label': 'new channel name'});
  const create = el('div', {class: 'create'}, name, el('button', {type: 'button', text: 'Create channel', onclick: () => act('creating', async () => {
    const id = [...crypto.getRandomValues(new Uint8Array(18))].map((b) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'[b % 62]).join('');
    await relay.publish({kind: 9007, tags: [['h', id], ['name', name.value.trim() || id]]});
    go(link(id));
  })}));
  document.title = document.querySelector('header.top .relay').textContent;
  main.replaceChildren(el('h1', {text: document.title}), el('h2', {text: 'Channels'}),
    order.length ? list : el('p', {class: 'empty', text: 'No channels you can read.'}), create);
}

// windowFilter is the window request of CW-1..CW-7, at cursor c.
function windowFilter(ch, c) {
  const f = {kinds: [9], '#h': [ch], limit: PAGE_ROWS, top_level: true, include_summaries: true, include_aux: true};
  if (c) { f.until = c.created_at; f.before_id = c.id; }
  return f;
}

// bounds is the page's 39006 (CW-20, CL-2), or an error.
function bounds(evs, ch, c) {
  const b = evs.filter((e) => e.kind === 39006);
  const want = (ch + ':' + (c ? c.created_at + ':' + c.id : 'head')).toLowerCase();
  if (b.length !== 1 || String(tag(b[0], 'd')).toLowerCase() !== want) throw new Error('the relay answered a window page without its bounds');
  const o = JSON.parse(b[0].content);
  if (typeof o.has_more !== 'boolean' || (o.has_more !== (o.next_cursor != null))) throw new Error('the relay answered inconsistent bounds');
  return o;
}

async function channel(main, ch, current) {
  const v = newView('channel', ch);
  subscribe(v);
  state.view = v;
  const evs = await query([windowFilter(ch, null), {kinds: [39000, 39002], '#d': [ch]}]);
  if (!current()) return;
  const meta = evs.find((e) => e.kind === 39000);
  if (!meta) { notFound(main); relay.unsubscribe(v.sub); return; }
  const members = evs.find((e) => e.kind === 39002);
  let member = !!members && members.tags.some((t) => t[0] === 'p' && t[1] === state.pubkey);
  const priv = meta.tags.some((t) => t[0] === 'private');
  const title = clean(tag(meta, 'name'), 48) || ch;
  document.title = title;
  v.list = el('section', {class: 'rows'});
  v.empty = el('p', {class: 'empty', text: 'No messages.'});
  const pager = el('nav', {class: 'pager'});
  const join = el('button', {class: 'join', type: 'button'});
  const drawJoin = () => { join.textContent = member ? 'Leave' : 'Join'; join.hidden = !member && priv; };
  join.addEventListener('click', () => act(member ? 'leaving' : 'joining', async () => {
    await relay.publish({kind: member ? 9022 : 9021, tags: [['h', ch]]});
    member = !member;
    drawJoin();
  }));
  drawJoin();
  const about = clean(tag(meta, 'about'), 280);
  main.replaceChildren(el('h1', {text: title}), about ? el('p', {class: 'about', text: about}) : null,
    el('div', {class: 'chan-acts'}, join), composer(v), v.list, v.empty, pager);
  const page = (evs, c) => {
    const b = bounds(evs, ch, c);
    v.projection = !!b.thread_replies_in_channel;
    const fresh = [];
    for (const ev of evs) {
      if (ev.kind === 9 && !v.rows.has(ev.id)) { const r = row(v, ev); fresh.push(r); v.list.append(r.el); }
    }
    for (const ev of evs) {
      if (AUX_KINDS.includes(ev.kind)) applyAux(v, ev);
      else if (ev.kind === 39005) summary(v, ev);
    }
    for (const r of fresh) drawMarks(v, r);
    v.empty.hidden = v.rows.size > 0;
    if (fresh.length && !c) seen(ch, fresh[0].ev.created_at);
    loadNames(fresh.map((r) => r.ev.pubkey));
    pager.replaceChildren();
    if (b.has_more) {
      const older = el('button', {class: 'older', type: 'button', text: 'older', onclick: () => {
        older.disabled = true;
        query([windowFilter(ch, b.next_cursor)]).then((evs) => { if (v === state.view) page(evs, b.next_cursor); })
          .catch((e) => { older.disabled = false; status(e.message, true); });
      }});
      pager.append(older);
      new IntersectionObserver((es, o) => { if (es.some((e) => e.isIntersecting)) { o.disconnect(); older.click(); } }).observe(older);
    }
  };
  page(evs, null);
  shown(v);
}

async function threadView(main, ch, root, current) {
  const v = newView('thread', ch);
  v.root = root;
  subscribe(v);
  state.view = v;
  const evs = await query([{ids: [root]}, {'#e': [root], depth_limit: 100, limit: 500, include_aux: true}, {kinds: [39000], '#d': [ch]}]);
  if (!current()) return;
  const meta = evs.find((e) => e.kind === 39000);
  const rootEv = evs.find((e) => e.id === root);
  const replies = evs.filter((e) => e.kind === 9 && e.id !== root && tag(e, 'h') === ch);
  if (!meta || (rootEv ? tag(rootEv, 'h') !== ch : !replies.length)) { notFound(main); relay.unsubscribe(v.sub); return; }
  v.rootEv = rootEv;
  const name = clean(tag(meta, 'name'), 48) || ch;
  document.title = 'Thread in ' + name;
  const section = el('section', {class: 'thread'});
  if (rootEv) section.append(row(v, rootEv).el);
  else section.append(el('article', {class: 'msg', 'data-id': root}, el('p', {class: 'content deleted', text: 'deleted message'})));
  v.tree = el('ul', {class: 'tree'});
  section.append(v.tree);
  main.replaceChildren(el('p', {class: 'crumb'}, el('a', {href: link(ch), text: name})), section, composer(v));
  for (const ev of replies) nestRow(v, ev);
  for (const ev of evs) if (AUX_KINDS.includes(ev.kind)) applyAux(v, ev);
  for (const r of v.rows.values()) drawMarks(v, r);
  shown(v);
  loadNames(evs.map((e) => e.pubkey));
}

// ---- start -------------------------------------------------------------------

// Once signed in the client keeps the page: links of the relay's own
// pages open in place, keeping the signer and the socket.
document.addEventListener('click', (e) => {
  if (!state.signer || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
  const a = e.target.closest && e.target.closest('a[href]');
  if (!a || a.origin !== location.origin || !(a.pathname === '/' || a.pathname.startsWith('/c/'))) return;
  e.preventDefault();
  go(a.pathname + a.search);
});
window.addEventListener('popstate', () => render());

if (RELAY) {
  account();
  if (sessionStorage.getItem('buzz-signer') === 'nip07' && window.nostr) signIn(window.nostr, 'nip07');
}
