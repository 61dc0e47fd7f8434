// NIP-46 remote signing (bunker://) for buzz-lite's web client (CW-26),
// bundled into web/assets/nip46.js by `npm run build` (docs/security.md).
//
// The protocol and its cryptography (NIP-44 encryption, signatures, their
// checks) are nostr-tools' BunkerSigner and @noble's; this file only
// parses the bunker URL, bounds each request in time, and shapes the
// signer as NIP-07's window.nostr, so the client uses either the same way.

import { schnorr } from '@noble/curves/secp256k1.js'
import { BUNKER_REGEX, BunkerSigner } from 'nostr-tools/nip46'
import { finalizeEvent } from 'nostr-tools/pure'

// DEFAULT_TIMEOUT bounds one request to the bunker, in milliseconds: a
// signer whose owner must approve a request on another device needs time,
// a bunker that is gone must not leave the page waiting forever.
const DEFAULT_TIMEOUT = 60_000

// parseBunkerURL reads bunker://<remote signer pubkey>?relay=wss://…&secret=…
// into { pubkey, relays, secret }, or throws an Error that says what is
// wrong. Relays must be ws:// or wss:// URLs (at least one); they are kept
// in the order given, without duplicates. Only bunker:// URLs are taken:
// resolving a NIP-05 name would fetch from a third-party origin, which the
// page's Content-Security-Policy refuses.
export function parseBunkerURL(url) {
  const m = typeof url === 'string' ? url.trim().match(BUNKER_REGEX) : null
  if (!m) throw new Error('not a bunker URL: want bunker://<64 hex pubkey>?relay=wss://…')
  const query = new URLSearchParams(m[2])
  const relays = []
  for (const r of query.getAll('relay')) {
    let u
    try {
      u = new URL(r)
    } catch {
      throw new Error(`bunker URL: relay ${JSON.stringify(r)} is not a URL`)
    }
    if ((u.protocol !== 'ws:' && u.protocol !== 'wss:') || u.username || u.password || u.hash) {
      throw new Error(`bunker URL: relay ${JSON.stringify(r)} is not a ws:// or wss:// relay URL`)
    }
    const s = u.href.replace(/\/$/, '')
    if (!relays.includes(s)) relays.push(s)
  }
  if (relays.length === 0) throw new Error('bunker URL: names no relay (relay=wss://…)')
  return { pubkey: m[1], relays, secret: query.get('secret') }
}

// bunkerRelays is the relays a bunker URL names, as parseBunkerURL reads
// them: the client may check them against the origins its page may
// connect to before it tries.
export function bunkerRelays(url) {
  return parseBunkerURL(url).relays
}

// connectBunker connects to the remote signer a bunker URL names, through
// its relays, as a fresh client key of this page, and resolves to a signer
// shaped as NIP-07's window.nostr: getPublicKey() and signEvent(template),
// plus close(). onauth(url) is called when the bunker asks its owner to
// approve in a page of its own (NIP-46 auth_url): show that URL as a link.
// timeout bounds each request in milliseconds (default 60 s).
export async function connectBunker(url, { onauth, timeout = DEFAULT_TIMEOUT } = {}) {
  const bp = parseBunkerURL(url)
  const clientKey = schnorr.utils.randomSecretKey()
  const signer = BunkerSigner.fromBunker(clientKey, bp, { onauth })
  // The client key also answers a relay's NIP-42 challenge, so that a
  // relay that serves only authenticated readers (buzz-lite with
  // public_read off) still carries the bunker's answers. The signer's own
  // pool is told so: a second pool of nostr-tools/pool would double the
  // module's size. fromBunker has created the pool's relays synchronously
  // and no challenge can have arrived yet; automaticallyAuth covers the
  // relays a switch_relays answer adds.
  const pool = signer.pool
  const auth = () => (ev) => finalizeEvent(ev, clientKey)
  pool.automaticallyAuth = auth
  for (const relay of pool.relays.values()) relay.onauth = auth()
  const close = () => {
    signer.close()
    pool.destroy()
  }
  let pubkey
  try {
    await within(signer.connect(), timeout, 'connect')
    pubkey = await within(signer.getPublicKey(), timeout, 'get_public_key')
  } catch (err) {
    close()
    throw err
  }
  return {
    getPublicKey: async () => pubkey,
    // The bunker's event must be the one asked for, signed by the key it
    // named: a signer that signs as someone else or something else fails
    // here instead of in the relay's refusal. BunkerSigner has checked
    // the id and signature.
    async signEvent(template) {
      const ev = await within(signer.signEvent(template), timeout, 'sign_event')
      if (ev.pubkey !== pubkey || ev.kind !== template.kind || ev.content !== template.content) {
        throw new Error('the bunker signed another event than the one asked for')
      }
      return ev
    },
    close,
  }
}

// within is p, or a rejection once ms have passed without an answer to
// method. The bunker's refusal (a string in NIP-46) becomes an Error that
// carries its words.
function within(p, ms, method) {
  let timer
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the bunker did not answer ${method} within ${Math.round(ms / 1000)} s`)), ms)
  })
  return Promise.race([p, t])
    .catch((err) => {
      throw err instanceof Error ? err : new Error(`the bunker refused ${method}: ${err}`)
    })
    .finally(() => clearTimeout(timer))
}
