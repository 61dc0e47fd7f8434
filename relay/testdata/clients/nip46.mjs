// NIP-46 sign-in through this relay (relay/clients_test.go,
// TestClientsNIP46Bunker, CW-26): the web client's bunker module against
// a remote signer nobody here wrote.
//
//   node nip46.mjs <relay-url> <bunker-secret-key-hex> <secret>
//
// The remote signer is NDK's NDKNip46Backend holding the bunker key, on
// the relay; it accepts a connection only with the bunker URL's secret
// (NDK's applyToken hook). The client is web/assets/nip46.js as the page
// loads it (nostr-tools' BunkerSigner), with the global WebSocket a
// browser has. It connects by a bunker:// URL naming the relay, asks for
// the public key and for a signed event, and once more with a wrong
// secret, which the bunker refuses.
// Prints one JSON object on stdout; exits 1 on any failure.

import { readFileSync } from 'node:fs'
import { verifyEvent } from 'nostr-tools/pure'
import { hexToBytes } from 'nostr-tools/utils'
import { TracingWebSocket, connections, deadline, done, fail, sleep, withTimeout } from './wire.mjs'

// A page's module uses the browser's global WebSocket; here, ws's, traced.
globalThis.WebSocket = TracingWebSocket
const { default: NDK, NDKNip46Backend, NDKPrivateKeySigner, NDKRelayAuthPolicies } = await import('@nostr-dev-kit/ndk')
const { connectBunker, parseBunkerURL, bunkerRelays } = await import(
  new URL('../../../web/assets/nip46.js', import.meta.url).href
)

const ndkVersion = JSON.parse(readFileSync(new URL('./node_modules/@nostr-dev-kit/ndk/package.json', import.meta.url))).version

async function main() {
  deadline(40_000)
  const [url, bunkerSK, secret] = process.argv.slice(2)
  if (!url || !/^[0-9a-f]{64}$/.test(bunkerSK || '') || !secret) {
    fail('usage: node nip46.mjs <relay-url> <bunker-secret-key-hex> <secret>')
  }
  const result = { bunker: 'ndk', ndkVersion, methods: [] }

  // The bunker: NDK signs in on the relay's challenge (a relay with
  // public_read off serves only authenticated readers), then listens for
  // requests to its key.
  const key = new NDKPrivateKeySigner(hexToBytes(bunkerSK))
  // No outbox model and no user relays: NDK would otherwise also dial its
  // default outbox relays on the internet.
  const ndk = new NDK({ explicitRelayUrls: [url], signer: key, enableOutboxModel: false, autoConnectUserRelays: false })
  ndk.relayAuthDefaultPolicy = NDKRelayAuthPolicies.signIn({ ndk })
  const authed = new Promise((resolve) => ndk.pool.once('relay:authed', resolve))
  ndk.connect(5000)
  await withTimeout(authed, 10_000, 'the bunker signing in')
  const connected = new Set()
  const backend = new NDKNip46Backend(
    ndk,
    key,
    async ({ pubkey, method }) => {
      result.methods.push(method)
      return method === 'connect' || connected.has(pubkey)
    },
    [url],
  )
  backend.applyToken = async (pubkey, token) => {
    if (token !== secret) throw new Error('wrong secret')
    connected.add(pubkey)
  }
  await backend.start()
  // 24133 is ephemeral: a request sent before the bunker's subscription
  // is live reaches nobody. Wait for its EOSE.
  await withTimeout(subscribed(), 10_000, "the bunker's subscription")
  const bunkerPubkey = (await key.user()).pubkey
  result.bunkerPubkey = bunkerPubkey

  // The client, as the page runs it.
  const bunkerURL = `bunker://${bunkerPubkey}?relay=${encodeURIComponent(url)}&secret=${encodeURIComponent(secret)}`
  result.parsed = parseBunkerURL(bunkerURL)
  result.relays = bunkerRelays(bunkerURL)
  const clientConns = connections.length
  const authURLs = []
  const signer = await connectBunker(bunkerURL, { timeout: 15_000, onauth: (u) => authURLs.push(u) })
  result.pubkey = await signer.getPublicKey()
  const template = {
    kind: 1,
    created_at: Math.floor(Date.now() / 1000),
    tags: [],
    content: 'signed by a NIP-46 bunker through buzz-lite',
  }
  result.template = template
  result.event = await signer.signEvent(template)
  result.verified = verifyEvent({ ...result.event })
  signer.close()
  result.authURLs = authURLs
  result.client = connections.slice(clientConns)

  // A bunker URL with the wrong secret: the bunker's refusal, in its words.
  const wrong = `bunker://${bunkerPubkey}?relay=${encodeURIComponent(url)}&secret=not-${encodeURIComponent(secret)}`
  try {
    const s = await connectBunker(wrong, { timeout: 15_000 })
    s.close()
    result.wrongSecret = '(connected)'
  } catch (err) {
    result.wrongSecret = err.message
  }
  done(result)
}

// subscribed resolves once a connection has sent a REQ for kind 24133
// and received its EOSE.
async function subscribed() {
  for (;;) {
    for (const c of connections) {
      const req = c.wire.find(([dir, label, , filters]) => dir === '>' && label === 'REQ' && filters.includes('24133'))
      if (req && c.wire.some(([dir, label, sub]) => dir === '<' && label === 'EOSE' && sub === req[2])) return
    }
    await sleep(20)
  }
}

main().catch(fail)
