// rust-nostr (@rust-nostr/nostr-sdk, WASM) against a private channel
// (relay/clients_test.go, RL-12, RL-13).
//
//   node rust-nostr.mjs <relay-url> <member-secret-key-hex> <private-channel>
//
// 1. anonymous: a Client without a signer fetches the channel and gets
//    nothing.
// 2. member: a Client with the member's keys (automatic authentication, the
//    SDK's default, turned on once the challenge on connect has been read,
//    so that it authenticates when told auth-required) fetches the channel's kind 9 events, then COUNTs them.
// Prints one JSON object on stdout; exits 1 on any failure.

import { createRequire } from 'node:module'
import { TracingWebSocket, args, connections, deadline, done, fail, received, sleep, withTimeout } from './wire.mjs'

const require = createRequire(import.meta.url)
const version = require('@rust-nostr/nostr-sdk/package.json').version

// challenged waits until the relay's challenge on connect has reached the
// SDK, which reads messages in a task of its own: a challenge that comes in
// during a fetch ends an anonymous fetch at once, and makes a signer answer
// it before its REQ, so without this wait which path the wire shows is
// down to timing.
async function challenged(connection) {
  await received(connection, 'AUTH', 5_000)
  await sleep(200)
}

async function main() {
  deadline(40_000)
  // The SDK takes the global WebSocket when there is one (Node 20 has none,
  // and it falls back to ws): give it ws, recording the wire.
  globalThis.WebSocket = TracingWebSocket
  const sdk = require('@rust-nostr/nostr-sdk')
  sdk.loadWasmSync()
  const { Alphabet, Client, Duration, Filter, Keys, Kind, NostrSigner, SingleLetterTag } = sdk

  const { url, memberSK, channel } = args()
  const keys = Keys.parse(memberSK)
  const filter = () => new Filter().kind(new Kind(9)).customTags(SingleLetterTag.lowercase(Alphabet.H), [channel])
  const result = { library: '@rust-nostr/nostr-sdk', version, pubkey: keys.publicKey.toHex() }

  // 1. Anonymous.
  {
    const client = new Client()
    const first = connections.length
    await client.addRelay(url)
    await client.connect()
    await client.waitForConnection(Duration.fromSecs(5))
    await challenged(first)
    let events = []
    let error = ''
    try {
      events = (await withTimeout(client.fetchEvents(filter(), Duration.fromSecs(10)), 15_000, 'anonymous fetch')).toVec()
    } catch (err) {
      error = String(err?.message ?? err)
    }
    result.anonymous = { events: events.map((ev) => ev.id.toHex()), error, wire: connections[first]?.wire ?? [] }
    await client.shutdown()
  }

  // 2. Member, authenticating automatically.
  {
    const client = new Client(NostrSigner.keys(keys))
    const first = connections.length
    client.automaticAuthentication(false)
    await client.addRelay(url)
    await client.connect()
    await client.waitForConnection(Duration.fromSecs(5))
    await challenged(first)
    client.automaticAuthentication(true)
    const events = (await withTimeout(client.fetchEvents(filter(), Duration.fromSecs(10)), 15_000, 'member fetch')).toVec()
    const relay = await client.relay(url)
    let count = null
    let countError = ''
    try {
      count = Number(await withTimeout(relay.countEvents(filter(), Duration.fromSecs(10)), 15_000, 'member COUNT'))
    } catch (err) {
      countError = String(err?.message ?? err)
    }
    result.member = {
      events: events.map((ev) => ev.id.toHex()),
      count,
      countError,
      wire: connections[first]?.wire ?? [],
    }
    await client.shutdown()
  }
  done(result)
}

main().catch(fail)
