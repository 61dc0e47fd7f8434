// Replies, reactions and group reads made by the libraries' own helpers
// (relay/helpers_clients_test.go, CW-10, CW-2, NIP-29).
//
//   BUZZ_ROOT_EVENT='<root event JSON>' node helpers.mjs <relay-url> <member-secret-key-hex> <group-id>
//
// 1. rust-nostr: EventBuilder.textNoteReply makes a direct reply to the
//    root, then a reply to that reply (root given), and EventBuilder.reaction
//    reacts to the direct reply; each gets the group's h tag and is sent.
// 2. nostr-tools: nip25.finishReactionEvent reacts to the root; nip29's
//    fetchGroupMetadataEvent, fetchGroupMembersEvent and fetchGroupAdminsEvent
//    read the group's state, parsed by its parse* functions.
// Prints one JSON object on stdout; exits 1 on any failure.

import { createRequire } from 'node:module'
import { SimplePool, useWebSocketImplementation } from 'nostr-tools/pool'
import { finishReactionEvent } from 'nostr-tools/nip25'
import * as nip29 from 'nostr-tools/nip29'
import { hexToBytes } from 'nostr-tools/utils'
import { TracingWebSocket, args, deadline, done, fail, withTimeout } from './wire.mjs'

const require = createRequire(import.meta.url)

async function main() {
  deadline(40_000)
  globalThis.WebSocket = TracingWebSocket
  useWebSocketImplementation(TracingWebSocket)
  const { url, memberSK, channel: group } = args()
  const rootJSON = process.env.BUZZ_ROOT_EVENT
  if (!rootJSON) fail('BUZZ_ROOT_EVENT is not set')
  const result = {}

  // 1. rust-nostr's NIP-10 reply builder.
  {
    const sdk = require('@rust-nostr/nostr-sdk')
    sdk.loadWasmSync()
    const { Client, Duration, Event, EventBuilder, Keys, NostrSigner, Tag } = sdk
    const keys = Keys.parse(memberSK)
    const client = new Client(NostrSigner.keys(keys))
    await client.addRelay(url)
    await client.connect()
    await client.waitForConnection(Duration.fromSecs(5))
    const root = Event.fromJson(rootJSON)
    const send = async (builder, what) => {
      // A fresh Tag each time: the builder takes ownership of what it is given.
      const ev = builder.tags([Tag.parse(['h', group])]).signWithKeys(keys)
      const out = await withTimeout(client.sendEvent(ev), 10_000, what)
      if (out.failed.length > 0 || out.success.length !== 1) {
        throw new Error(`${what}: not accepted: ${JSON.stringify(out.failed.map((f) => f.error))}`)
      }
      return ev
    }
    const direct = await send(EventBuilder.textNoteReply('rust-nostr direct reply', root), 'direct reply')
    const nested = await send(EventBuilder.textNoteReply('rust-nostr nested reply', direct, root), 'nested reply')
    const reaction = await send(EventBuilder.reaction(direct, '+'), 'reaction')
    const summary = (ev) => ({ id: ev.id.toHex(), kind: ev.kind.asU16(), tags: JSON.parse(ev.asJson()).tags })
    result.rust = { direct: summary(direct), nested: summary(nested), reaction: summary(reaction) }
    await client.shutdown()
  }

  // 2. nostr-tools: a reaction, and the NIP-29 reads of the group's state.
  {
    const pool = new SimplePool()
    const root = JSON.parse(rootJSON)
    const reaction = finishReactionEvent({ content: '+', tags: [['h', group]], created_at: Math.floor(Date.now() / 1000) }, root, hexToBytes(memberSK))
    await withTimeout(Promise.all(pool.publish([url], reaction)), 10_000, 'nostr-tools reaction')
    result.nostrTools = { reaction: { id: reaction.id, tags: reaction.tags } }

    const groupReference = { id: group, host: new URL(url).host }
    const read = async (what, fetch, parse) => {
      try {
        const ev = await withTimeout(fetch({ pool, groupReference, normalizedRelayURL: url }), 10_000, what)
        return { event: ev.id, pubkey: ev.pubkey, parsed: parse(ev) }
      } catch (err) {
        return { error: String(err?.message ?? err) }
      }
    }
    result.nostrTools.metadata = await read('group metadata', nip29.fetchGroupMetadataEvent, nip29.parseGroupMetadataEvent)
    result.nostrTools.members = await read('group members', nip29.fetchGroupMembersEvent, nip29.parseGroupMembersEvent)
    result.nostrTools.admins = await read('group admins', nip29.fetchGroupAdminsEvent, nip29.parseGroupAdminsEvent)
    pool.close([url])
  }
  done(result)
}

main().catch(fail)
