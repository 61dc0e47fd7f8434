// NIP-29 as its clients do it: nostr-tools' nip29 helpers and NDK's
// NDKSimpleGroup against a live relay (relay/nip29_clients_test.go, RL-36,
// CW-2).
//
//   node nip29.mjs <relay-url> <owner-secret-key-hex> <uuid|ndk> [main|limited]
//
// <uuid|ndk> is the form of every group id the script makes: a canonical
// UUID, or the 24 mixed-case letters and digits NDKSimpleGroup makes when
// given no id. The `main` part (the default) runs against a relay with
// default settings: create, edit, load with every flag, admins, members,
// roles, join, duplicate join, post and read back, leave, a private group
// joined with an invite code, and a subgroup tree. The `limited` part runs
// against a relay with open writes off, a list of allowed kinds
// (BUZZ_NIP29_KINDS, comma-separated) and the owner a relay admin: the
// flags that say so.
//
// Nothing here knows what the relay answers: every check compares what the
// libraries parsed from the relay with what the script did. Prints one
// JSON object on stdout: the libraries, the ids made, and one entry per
// check ({id, piece, ok, detail}); a check the script never reached is
// reported as failed. Exits 1 only when it cannot run at all.

import { readFileSync } from 'node:fs'
import { randomUUID } from 'node:crypto'
import { SimplePool, useWebSocketImplementation } from 'nostr-tools/pool'
import { finalizeEvent, generateSecretKey, getPublicKey } from 'nostr-tools/pure'
import * as nip29 from 'nostr-tools/nip29'
import { fetchRelayInformation } from 'nostr-tools/nip11'
import { bytesToHex, hexToBytes, normalizeURL } from 'nostr-tools/utils'
import { TracingWebSocket, deadline, done, fail, sleep, withTimeout } from './wire.mjs'

globalThis.WebSocket = TracingWebSocket
useWebSocketImplementation(TracingWebSocket)
const { default: NDK, NDKEvent, NDKPrivateKeySigner, NDKRelayAuthPolicies, NDKRelaySet, NDKSimpleGroup } = await import(
  '@nostr-dev-kit/ndk'
)

const installed = (name) =>
  JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version

// The checks of each part, in order: [id, the piece of the contract it shows].
const PLAN = {
  main: [
    ['create', 'RL-10 9007 by NDKSimpleGroup.createGroup, CW-2 group id'],
    ['edit-metadata', 'RL-10 9002 by NDKSimpleGroup.setMetadata'],
    ['metadata-signed', 'RL-11 39000 signed by NIP-11 pubkey, d = the id as written (CW-2)'],
    ['metadata-nostr-tools', 'RL-36 name, picture, about in 39000 (nostr-tools parseGroupMetadataEvent)'],
    ['metadata-ndk', 'RL-36 name, picture, about in 39000 (NDKSimpleGroupMetadata)'],
    ['open-flags', 'RL-36 flags of an open group: not private, restricted, hidden or closed'],
    ['admins', 'RL-11 39001 lists the creator as owner (nostr-tools loadGroup)'],
    ['members', 'RL-11 39002 lists the creator (nostr-tools loadGroup, NDK getMembers)'],
    ['roles', 'RL-36 39003 lists owner, admin and member with descriptions'],
    ['join-open', 'RL-10 9021 by NDKSimpleGroup.requestToJoin joins an open group'],
    ['join-relay-9000', 'RL-36 an accepted 9021 makes the relay publish a relay-signed 9000 put-user'],
    ['join-members', 'RL-11 the joiner is in 39002 (nostr-tools, NDK)'],
    ['join-duplicate', 'RL-36 a member\'s second 9021 answers "duplicate: already a member"'],
    ['post-read', 'RL-14 a member\'s kind 9 with h (NDK) read back by nostr-tools'],
    ['leave', 'RL-10 9022 with `previous` (nostr-tools generateGroupLeaveRequestEventTemplate)'],
    ['leave-relay-9001', 'RL-36 a 9022 makes the relay publish a relay-signed 9001 remove-user'],
    ['leave-members', 'RL-11 the leaver is gone from 39002'],
    ['private-create', 'RL-10 9007 + 9002 private with picture (nostr-tools templates)'],
    ['private-hidden', 'RL-36 hidden: non-members (anonymous, authenticated) cannot fetch a private group\'s 39000'],
    ['private-flags', 'RL-36 private, restricted, hidden, closed on a private group without an invite (loadGroup, NDK access)'],
    ['private-join-refused', 'RL-36, RL-29 a 9021 without a code to a private group answers as for no group'],
    ['invite-create', 'RL-36 9009 create-invite with a code by the owner (nostr-tools template)'],
    ['invite-not-closed', 'RL-36 closed is dropped while an invite code is live'],
    ['invite-wrong-code', 'RL-36, RL-29 a 9021 with a wrong code answers as for no group'],
    ['invite-join', 'RL-36 a 9021 with the live code joins the private group; the relay\'s 9000 follows'],
    ['invite-member-reads', 'RL-12 the new member loads the group and reads its posts; anonymous reads none'],
    ['invite-revoke', 'RL-36 a 9005 of the 9009 revokes the code: its 9021 answers as for no group, closed again'],
    ['subgroup-parent', 'RL-36 parent set by 9002 (nostr-tools metadata.parent) survives into 39000'],
    ['subgroup-tree', 'RL-36 the tree built from 39000 parent tags as NIP-29 tells clients'],
    ['subgroup-missing-parent', 'RL-36 a parent that does not exist makes a root'],
    ['subgroup-cycle', 'RL-36 a 9002 making a cycle (self included) is refused; the tree is unchanged'],
    ['subgroup-reparent', 'RL-36 re-parenting by a 9002 of the child\'s admin'],
    ['subgroup-clear', 'RL-36 a 9002 with ["parent", ""] makes a root'],
    ['subgroup-parent-deleted', 'RL-36 a deleted parent (9008) leaves its children roots'],
    ['subgroup-access', 'RL-12, RL-36 a parent\'s members are not a private child\'s'],
  ],
  limited: [
    ['limited-create', 'RL-10 9007 + 9002 by a relay admin under allowed_kinds'],
    ['limited-restricted', 'RL-36 restricted on an open group when open_write is off'],
    ['limited-write-refused', 'RL-14 a non-member\'s kind 9 is refused there, as restricted says'],
    ['limited-supported-kinds', 'RL-36 supported_kinds lists the configured kinds'],
  ],
}

const [url, ownerHex, form, part = 'main'] = process.argv.slice(2)
if (!url || !/^[0-9a-f]{64}$/.test(ownerHex || '') || !['uuid', 'ndk'].includes(form) || !PLAN[part]) {
  fail('usage: node nip29.mjs <relay-url> <owner-secret-key-hex> <uuid|ndk> [main|limited]')
}
const relayURL = normalizeURL(url)

// --- checks ---------------------------------------------------------------

const checks = new Map(PLAN[part].map(([id, piece]) => [id, { id, piece, ok: false, detail: 'not reached' }]))

class Mismatch extends Error {}

// expect fails the running check with what when cond is false.
function expect(cond, what) {
  if (!cond) throw new Mismatch(what)
}

// check runs fn as check id: passed when fn returns, failed with the
// mismatch or error it throws.
async function check(id, fn) {
  const c = checks.get(id)
  if (!c) fail(`check ${id} is not in the plan of part ${part}`)
  const start = Date.now()
  try {
    await fn()
    c.ok = true
    c.detail = ''
  } catch (err) {
    c.detail = err instanceof Mismatch ? err.message : `threw: ${err?.message ?? err}`
  }
  c.ms = Date.now() - start
  return c.ok
}

const show = (v) => JSON.stringify(v)

// --- actors ---------------------------------------------------------------

// A person: secret key, pubkey, a nostr-tools pool (authenticated when
// authed) and, on demand, an NDK instance signed in as them.
async function person(sk, { authed = true } = {}) {
  const p = { sk, pk: sk && getPublicKey(sk), pool: new SimplePool() }
  if (authed) {
    const relay = await p.pool.ensureRelay(relayURL)
    for (let t = Date.now(); !relay.challenge; await sleep(10)) {
      if (Date.now() - t > 5000) throw new Error('no AUTH challenge within 5 s')
    }
    await withTimeout(
      relay.auth((template) => finalizeEvent(template, sk)),
      5000,
      'nostr-tools AUTH',
    )
  }
  return p
}

const anonymous = () => person(null, { authed: false })

// ndkFor signs in to the relay with NDK as sk: NDK's signIn policy answers
// the challenge, and reads wait until it has (NDK does not retry a REQ
// closed with auth-required). ndk.connect is not awaited: it resolves when
// every relay's status is exactly "connected", which a relay that has
// challenged or authenticated the connection no longer is, so it would
// only time out.
async function ndkFor(sk) {
  const ndk = new NDK({ explicitRelayUrls: [relayURL], signer: new NDKPrivateKeySigner(bytesToHex(sk)) })
  ndk.relayAuthDefaultPolicy = NDKRelayAuthPolicies.signIn({ ndk })
  const authed = new Promise((resolve) => ndk.pool.once('relay:authed', resolve))
  ndk.connect(5000)
  await withTimeout(authed, 5000, 'NDK AUTH')
  return { ndk, relaySet: NDKRelaySet.fromRelayUrls([relayURL], ndk) }
}

// send publishes template signed by who with nostr-tools and returns the
// relay's answer: { ok, reason, event }.
async function send(who, template) {
  const event = finalizeEvent({ created_at: Math.floor(Date.now() / 1000), content: '', ...template }, who.sk)
  const [r] = await Promise.allSettled(who.pool.publish([relayURL], event))
  const reason = r.status === 'fulfilled' ? r.value : String(r.reason?.message ?? r.reason)
  return { ok: r.status === 'fulfilled', reason, event }
}

async function mustSend(who, template, what) {
  const r = await send(who, template)
  expect(r.ok, `${what}: refused with ${show(r.reason)}`)
  return r.event
}

// ndkPublish publishes with NDK and turns its error into the relay's reason.
async function ndkPublish(what, fn) {
  try {
    return await withTimeout(fn(), 10_000, what)
  } catch (err) {
    const reasons = err?.errors ? [...err.errors.values()].map((e) => String(e?.message ?? e)) : []
    throw new Mismatch(`${what}: ${err?.message ?? err} ${show(reasons)}`)
  }
}

// --- reads ----------------------------------------------------------------

let relayInformation

const ref = (id) => ({ id, host: new URL(relayURL).host })

// load is nostr-tools' loadGroup as who: metadata, admins, members.
const load = (who, id) =>
  withTimeout(
    nip29.loadGroup({ pool: who.pool, groupReference: ref(id), normalizedRelayURL: relayURL, relayInformation }),
    10_000,
    `loadGroup ${id}`,
  )

// metadataOf is the group's 39000 as nostr-tools fetches and parses it, or
// null when the relay gives who none.
async function metadataOf(who, id) {
  try {
    const ev = await withTimeout(
      nip29.fetchGroupMetadataEvent({ pool: who.pool, groupReference: ref(id), normalizedRelayURL: relayURL, relayInformation }),
      10_000,
      `39000 of ${id}`,
    )
    return { event: ev, metadata: nip29.parseGroupMetadataEvent(ev) }
  } catch (err) {
    if (String(err?.message).includes('not found')) return null
    throw err
  }
}

const query = (who, filter) => withTimeout(who.pool.querySync([relayURL], filter), 10_000, show(filter))

// eventually retries read until it gives something truthy, for the relay's
// own events, which may follow the OK of what caused them.
async function eventually(read, ms = 3000) {
  for (let t = Date.now(); ; await sleep(100)) {
    const got = await read()
    if (got || Date.now() - t > ms) return got
  }
}

// relayEvent is the relay-signed moderation event of kind in group id
// naming pubkey in its p tag, as who reads it, or undefined.
const relayEvent = (who, kind, id, pubkey) =>
  eventually(async () =>
    (await query(who, { kinds: [kind], '#h': [id], '#p': [pubkey], authors: [relayInformation.self] })).find(
      (ev) => ev.tags.some((t) => t[0] === 'p' && t[1] === pubkey),
    ),
  )

const memberPubkeys = async (who, id) =>
  nip29
    .parseGroupMembersEvent(
      await nip29.fetchGroupMembersEvent({ pool: who.pool, groupReference: ref(id), normalizedRelayURL: relayURL, relayInformation }),
    )
    .map((m) => m.pubkey)

// newID is a group id of the script's form.
const newID = (ndk) => (form === 'uuid' ? randomUUID() : new NDKSimpleGroup(ndk, undefined).groupId)

// --- the main part ----------------------------------------------------------

async function main(ids) {
  const owner = await person(hexToBytes(ownerHex))
  const member = await person(generateSecretKey())
  const invitee = await person(generateSecretKey())
  const outsider = await person(generateSecretKey())
  const anon = await anonymous()
  const ownerNDK = await ndkFor(owner.sk)
  const memberNDK = await ndkFor(member.sk)

  await openGroup(ids, { owner, member, anon, ownerNDK, memberNDK })
  await privateGroup(ids, { owner, invitee, outsider, anon, ownerNDK })
  await subgroups(ids, { owner, invitee, ownerNDK })
}

async function openGroup(ids, { owner, member, anon, ownerNDK, memberNDK }) {
  const G = (ids.open = newID(ownerNDK.ndk))
  const picture = `https://pictures.example/${encodeURIComponent(G)}.png`
  const meta = { name: `Open ${G}`, about: 'made by NDKSimpleGroup', picture }
  const group = new NDKSimpleGroup(ownerNDK.ndk, ownerNDK.relaySet, G)

  if (!(await check('create', () => ndkPublish('createGroup', () => group.createGroup())))) return
  await check('edit-metadata', () => ndkPublish('setMetadata', () => group.setMetadata(meta)))

  await check('metadata-signed', async () => {
    const got = await metadataOf(anon, G)
    expect(got, `no 39000 of ${G} signed by NIP-11 pubkey ${relayInformation.pubkey}`)
    expect(got.event.pubkey === relayInformation.self, `39000 signed by ${got.event.pubkey}, NIP-11 self is ${relayInformation.self}`)
    expect(got.metadata.id === G, `d = ${show(got.metadata.id)}, want ${show(G)}`)
  })
  await check('metadata-nostr-tools', async () => {
    const { metadata: m } = await load(anon, G)
    for (const k of ['name', 'about', 'picture']) expect(m[k] === meta[k], `${k} = ${show(m[k])}, want ${show(meta[k])}`)
  })
  await check('metadata-ndk', async () => {
    const m = await new NDKSimpleGroup(memberNDK.ndk, memberNDK.relaySet, G).getMetadata()
    for (const k of ['name', 'about', 'picture']) expect(m[k] === meta[k], `NDK ${k} = ${show(m[k])}, want ${show(meta[k])}`)
  })
  await check('open-flags', async () => {
    const { metadata: m } = await load(anon, G)
    for (const f of ['isPrivate', 'isRestricted', 'isHidden', 'isClosed']) expect(!m[f], `${f} is set: ${show(m)}`)
    const n = await new NDKSimpleGroup(memberNDK.ndk, memberNDK.relaySet, G).getMetadata()
    expect(n.access !== 'closed', `NDK access = ${show(n.access)}`)
  })
  await check('admins', async () => {
    const { admins } = await load(anon, G)
    const a = admins.find((x) => x.pubkey === owner.pk)
    expect(a?.label === 'owner', `admins ${show(admins)}: want the creator ${owner.pk} labelled "owner"`)
  })
  await check('members', async () => {
    const { members } = await load(anon, G)
    expect(members.some((m) => m.pubkey === owner.pk), `members ${show(members)} lack the creator`)
    const ndkMembers = (await new NDKSimpleGroup(memberNDK.ndk, memberNDK.relaySet, G).getMembers()).map((u) => u.pubkey)
    expect(ndkMembers.includes(owner.pk), `NDK members ${show(ndkMembers)} lack the creator`)
  })
  await check('roles', async () => {
    const ev = await withTimeout(
      nip29.fetchGroupRolesEvent({ pool: anon.pool, groupReference: ref(G), normalizedRelayURL: relayURL, relayInformation }),
      10_000,
      '39003',
    )
    const roles = nip29.parseGroupRolesEvent(ev)
    for (const name of ['owner', 'admin', 'member']) {
      const r = roles.find((x) => x.name === name)
      expect(r?.description, `roles ${show(roles)}: want ${name} with a description`)
    }
  })

  // Join, as NDK does it; then the relay's own 9000, and the member list.
  const joined = await check('join-open', () =>
    ndkPublish('requestToJoin', () => new NDKSimpleGroup(memberNDK.ndk, memberNDK.relaySet, G).requestToJoin(member.pk)),
  )
  await check('join-relay-9000', async () => {
    expect(joined, 'the join was refused')
    const ev = await relayEvent(anon, 9000, G, member.pk)
    expect(ev, `no 9000 by the relay (${relayInformation.self}) naming ${member.pk} in ${G}`)
  })
  await check('join-members', async () => {
    const nt = await memberPubkeys(anon, G)
    expect(nt.includes(member.pk), `39002 ${show(nt)} lacks the joiner`)
    const ndkMembers = (await new NDKSimpleGroup(memberNDK.ndk, memberNDK.relaySet, G).getMembers()).map((u) => u.pubkey)
    expect(ndkMembers.includes(member.pk), `NDK members ${show(ndkMembers)} lack the joiner`)
  })
  await check('join-duplicate', async () => {
    // A reason of its own: the same tags in the same second as NDK's join
    // would be the same event, which a relay takes as already stored.
    const r = await send(member, nip29.generateGroupJoinRequestEventTemplate(G, undefined, 'joining again'))
    expect(!r.ok && r.reason === 'duplicate: already a member', `second 9021: ok=${r.ok} ${show(r.reason)}`)
  })

  // Post with NDK, read with nostr-tools.
  await check('post-read', async () => {
    const post = new NDKEvent(memberNDK.ndk, { kind: 9, content: 'posted by NDK', tags: [['h', G]] })
    await ndkPublish('kind 9', () => post.publish(memberNDK.relaySet))
    const got = await query(anon, { kinds: [9], '#h': [G] })
    expect(got.some((e) => e.id === post.id && e.pubkey === member.pk), `read back ${show(got.map((e) => e.id))}, want ${post.id}`)
  })

  // Leave with `previous`: the first 8 characters of the last events the
  // member saw in the group, its own left out, as NIP-29 tells clients.
  const seen = await query(member, { '#h': [G], limit: 50 })
  const previous = seen.filter((e) => e.pubkey !== member.pk).slice(0, 3).map((e) => e.id.slice(0, 8))
  const left = await check('leave', async () => {
    expect(previous.length > 0, `no events of others in the group to reference: ${show(seen.map((e) => e.id))}`)
    await mustSend(member, nip29.generateGroupLeaveRequestEventTemplate(G, 'bye', previous), '9022')
  })
  await check('leave-relay-9001', async () => {
    expect(left, 'the leave was refused')
    const ev = await relayEvent(anon, 9001, G, member.pk)
    expect(ev, `no 9001 by the relay (${relayInformation.self}) naming ${member.pk} in ${G}`)
  })
  await check('leave-members', async () => {
    const nt = await memberPubkeys(anon, G)
    expect(!nt.includes(member.pk), `39002 ${show(nt)} still lists the leaver`)
  })
}

// refusal is the answer to a 9021 to a group id that does not exist: what
// a refused join to a private group must look like (RL-29).
async function refusal(who, ndk) {
  const r = await send(who, nip29.generateGroupJoinRequestEventTemplate(newID(ndk)))
  expect(!r.ok, `a 9021 to a group that does not exist was accepted`)
  return r.reason
}

async function privateGroup(ids, { owner, invitee, outsider, anon, ownerNDK }) {
  const P = (ids.private = newID(ownerNDK.ndk))
  const created = await check('private-create', async () => {
    await mustSend(owner, nip29.generateCreateGroupEventTemplate(P), '9007')
    const metadata = { id: P, name: `Private ${P}`, about: 'members only', picture: 'https://pictures.example/p.png', isPrivate: true }
    await mustSend(owner, nip29.generateEditGroupMetadataEventTemplate({ metadata }), '9002')
  })
  if (!created) return

  await check('private-hidden', async () => {
    expect((await metadataOf(anon, P)) === null, 'an anonymous client fetched the 39000')
    expect((await metadataOf(outsider, P)) === null, 'an authenticated non-member fetched the 39000')
  })
  const privateFlags = async (closed) => {
    const { metadata: m } = await load(owner, P)
    for (const f of ['isPrivate', 'isRestricted', 'isHidden']) expect(m[f], `${f} is not set: ${show(m)}`)
    expect(!!m.isClosed === closed, `isClosed = ${show(m.isClosed)}, want ${closed}`)
    const n = await new NDKSimpleGroup(ownerNDK.ndk, ownerNDK.relaySet, P).getMetadata()
    expect((n.access === 'closed') === closed, `NDK access = ${show(n.access)}, want closed: ${closed}`)
  }
  await check('private-flags', () => privateFlags(true))

  const noGroup = await refusal(invitee, ownerNDK.ndk)
  await check('private-join-refused', async () => {
    const r = await send(invitee, nip29.generateGroupJoinRequestEventTemplate(P))
    expect(!r.ok && r.reason === noGroup, `9021 without a code: ok=${r.ok} ${show(r.reason)}; no group answers ${show(noGroup)}`)
  })

  const code = `code-${randomUUID()}`
  let invite
  await check('invite-create', async () => {
    invite = await mustSend(owner, nip29.generateCreateInviteEventTemplate(P, code), '9009')
  })
  await check('invite-not-closed', () => privateFlags(false))
  await check('invite-wrong-code', async () => {
    const r = await send(invitee, nip29.generateGroupJoinRequestEventTemplate(P, `${code}-wrong`))
    expect(!r.ok && r.reason === noGroup, `9021 with a wrong code: ok=${r.ok} ${show(r.reason)}; no group answers ${show(noGroup)}`)
  })
  await check('invite-join', async () => {
    await mustSend(invitee, nip29.generateGroupJoinRequestEventTemplate(P, code), '9021 with the code')
    expect(await relayEvent(invitee, 9000, P, invitee.pk), `no 9000 by the relay naming ${invitee.pk} in ${P}`)
  })
  await check('invite-member-reads', async () => {
    const { members } = await load(invitee, P)
    expect(members.some((m) => m.pubkey === invitee.pk), `members ${show(members)} lack the invitee`)
    const post = await mustSend(owner, { kind: 9, content: 'for members', tags: [['h', P]] }, 'owner\'s kind 9')
    const got = await query(invitee, { kinds: [9], '#h': [P] })
    expect(got.some((e) => e.id === post.id), `the invitee reads ${show(got.map((e) => e.id))}, want ${post.id}`)
    const seen = await query(anon, { kinds: [9], '#h': [P] })
    expect(seen.length === 0, `anonymous reads ${show(seen.map((e) => e.id))}`)
  })
  await check('invite-revoke', async () => {
    expect(invite, 'no invite to revoke')
    await mustSend(owner, nip29.generateDeleteEventEventTemplate(P, invite.id), '9005 of the 9009')
    const r = await send(outsider, nip29.generateGroupJoinRequestEventTemplate(P, code))
    expect(!r.ok && r.reason === noGroup, `9021 with a revoked code: ok=${r.ok} ${show(r.reason)}; no group answers ${show(noGroup)}`)
    await privateFlags(true)
  })
}

// tree builds the group tree as NIP-29 tells clients to: fetch
// {"kinds":[39000]}; events without a `parent` tag (or with an empty one)
// are roots, the rest hang under the d their parent names. A parent that
// is missing or deleted must therefore be gone from the child's 39000 for
// the child to show as a root: the relay's part. Returned as
// { id: [children] } over ours, with roots under "".
async function tree(who, ours) {
  const evs = await query(who, { kinds: [39000], authors: [relayInformation.self] })
  const t = {}
  for (const m of evs.map((e) => nip29.parseGroupMetadataEvent(e)).filter((m) => ours.includes(m.id))) {
    ;(t[m.parent ?? ''] ??= []).push(m.id)
  }
  for (const k in t) t[k].sort()
  return t
}

const sameTree = (got, want) => {
  const norm = (t) => show(Object.keys(t).sort().map((k) => [k, [...t[k]].sort()]))
  return norm(got) === norm(want)
}

async function subgroups(ids, { owner, invitee, ownerNDK }) {
  const root = ids.open
  const [C1, C2, C3, orphan, missing] = [0, 1, 2, 3, 4].map(() => newID(ownerNDK.ndk))
  Object.assign(ids, { child1: C1, child2: C2, grandchild: C3, orphan })
  const edit = (id, name, parent) =>
    mustSend(owner, nip29.generateEditGroupMetadataEventTemplate({ metadata: { id, name, parent } }), `9002 of ${name}`)
  const ours = [root, C1, C2, C3, orphan]
  // parentOf is the parent a group's 39000 names, as the owner loads it.
  const parentOf = async (id) => (await load(owner, id)).metadata.parent

  let made = false
  await check('subgroup-parent', async () => {
    for (const [id, name, parent] of [[C1, 'child 1', root], [C2, 'child 2', root], [C3, 'grandchild', C1], [orphan, 'orphan', missing]]) {
      await mustSend(owner, nip29.generateCreateGroupEventTemplate(id), `9007 of ${name}`)
      await edit(id, name, parent)
    }
    made = true
    expect((await parentOf(C1)) === root, `parent of child 1 = ${show(await parentOf(C1))}, want ${show(root)}`)
  })
  if (!made) return
  const want = { '': [root, orphan], [root]: [C1, C2], [C1]: [C3] }
  await check('subgroup-tree', async () => {
    const got = await tree(owner, ours)
    expect(sameTree(got, want), `tree ${show(got)}, want ${show(want)}`)
  })
  await check('subgroup-missing-parent', async () => {
    const got = await tree(owner, ours)
    expect(got['']?.includes(orphan), `the group whose parent does not exist is not a root: ${show(got)}`)
  })
  await check('subgroup-cycle', async () => {
    for (const [id, parent, what] of [[root, C3, 'root under its grandchild'], [C1, C1, 'child 1 under itself']]) {
      const r = await send(owner, { kind: 9002, tags: [['h', id], ['parent', parent]] })
      expect(!r.ok, `a 9002 putting ${what} was accepted`)
    }
    const got = await tree(owner, ours)
    expect(sameTree(got, want), `tree after refused cycles ${show(got)}, want ${show(want)}`)
  })
  await check('subgroup-reparent', async () => {
    await mustSend(owner, { kind: 9002, tags: [['h', C2], ['parent', C1]] }, '9002 moving child 2 under child 1')
    const got = await tree(owner, ours)
    const moved = { '': [root, orphan], [root]: [C1], [C1]: [C2, C3] }
    expect(sameTree(got, moved), `tree ${show(got)}, want ${show(moved)}`)
  })
  await check('subgroup-clear', async () => {
    expect((await parentOf(C3)) === C1, `before clearing, the grandchild's parent is ${show(await parentOf(C3))}, not child 1`)
    await mustSend(owner, { kind: 9002, tags: [['h', C3], ['parent', '']] }, '9002 with an empty parent')
    expect(!(await parentOf(C3)), `parent = ${show(await parentOf(C3))} after it was cleared`)
    const got = await tree(owner, ours)
    expect(got['']?.includes(C3), `the cleared group is not a root: ${show(got)}`)
  })
  await check('subgroup-parent-deleted', async () => {
    expect((await parentOf(C2)) === C1, `before the deletion, child 2's parent is ${show(await parentOf(C2))}, not child 1`)
    await mustSend(owner, { kind: 9008, tags: [['h', C1]] }, '9008 of child 1')
    const got = await tree(owner, ours)
    expect(got['']?.includes(C2), `child 2, whose parent was deleted, is not a root: ${show(got)}`)
  })
  await check('subgroup-access', async () => {
    expect(ids.private, 'no private group to hang a child under')
    expect((await memberPubkeys(owner, ids.private)).includes(invitee.pk), 'the invitee is not a member of the private parent')
    const child = (ids.privateChild = newID(ownerNDK.ndk))
    await mustSend(owner, nip29.generateCreateGroupEventTemplate(child), '9007 of the private child')
    const metadata = { id: child, name: 'private child', isPrivate: true, parent: ids.private }
    await mustSend(owner, nip29.generateEditGroupMetadataEventTemplate({ metadata }), '9002 of the private child')
    const post = await mustSend(owner, { kind: 9, content: 'child only', tags: [['h', child]] }, 'kind 9 in the child')
    expect((await metadataOf(invitee, child)) === null, 'a member of the parent fetched the private child\'s 39000')
    const got = await query(invitee, { kinds: [9], '#h': [child] })
    expect(!got.some((e) => e.id === post.id), 'a member of the parent reads the private child\'s posts')
  })
}

// --- the limited part -----------------------------------------------------

async function limited(ids) {
  const kinds = (process.env.BUZZ_NIP29_KINDS || '').split(',').filter(Boolean)
  if (kinds.length === 0) fail('the limited part needs BUZZ_NIP29_KINDS')
  const owner = await person(hexToBytes(ownerHex))
  const stranger = await person(generateSecretKey())
  const anon = await anonymous()
  const G = (ids.open = newID(undefined))

  if (!(await check('limited-create', async () => {
    await mustSend(owner, nip29.generateCreateGroupEventTemplate(G), '9007')
    await mustSend(owner, nip29.generateEditGroupMetadataEventTemplate({ metadata: { id: G, name: 'limited' } }), '9002')
  }))) return
  await check('limited-restricted', async () => {
    const { metadata: m } = await load(anon, G)
    expect(m.isRestricted && !m.isPrivate, `isRestricted = ${show(m.isRestricted)}, isPrivate = ${show(m.isPrivate)}`)
  })
  await check('limited-write-refused', async () => {
    const r = await send(stranger, { kind: 9, content: 'not a member', tags: [['h', G]] })
    expect(!r.ok && r.reason.startsWith('restricted: '), `a non-member's kind 9: ok=${r.ok} ${show(r.reason)}`)
  })
  await check('limited-supported-kinds', async () => {
    const { metadata: m } = await load(anon, G)
    const got = [...(m.supportedKinds ?? [])].sort()
    expect(show(got) === show([...kinds].sort()), `supportedKinds = ${show(m.supportedKinds)}, configured ${show(kinds)}`)
  })
}

async function run() {
  deadline(50_000)
  relayInformation = await withTimeout(fetchRelayInformation(relayURL), 5000, 'NIP-11')
  const ids = {}
  await (part === 'main' ? main(ids) : limited(ids))
  done({
    libraries: { 'nostr-tools': installed('nostr-tools'), '@nostr-dev-kit/ndk': installed('@nostr-dev-kit/ndk') },
    form,
    part,
    ids,
    checks: [...checks.values()],
  })
}

run().catch(fail)
