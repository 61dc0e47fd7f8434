// nostr-tools against a private channel (relay/clients_test.go, RL-12,
// RL-13, RL-14).
//
//   node nostr-tools.mjs <relay-url> <member-secret-key-hex> <private-channel>
//
// 1. anonymous: a SimplePool without onauth subscribes to the channel and
//    must be CLOSED with auth-required; its COUNT is answered.
// 2. member: a SimplePool with onauth (the member's key) subscribes; the
//    pool authenticates on the auth-required CLOSED and re-sends the REQ,
//    which returns the stored messages up to EOSE. Then the member publishes
//    a kind 9 to the channel, which the open subscription receives live,
//    and counts the channel.
// Prints one JSON object on stdout; exits 1 on any failure.

import { readFileSync } from 'node:fs'
import { SimplePool, useWebSocketImplementation } from 'nostr-tools/pool'
import { finalizeEvent, getPublicKey } from 'nostr-tools/pure'
import { hexToBytes } from 'nostr-tools/utils'
import { TracingWebSocket, args, connections, deadline, done, fail, withTimeout } from './wire.mjs'

// nostr-tools exports no ./package.json: read the installed one.
const version = JSON.parse(readFileSync(new URL('./node_modules/nostr-tools/package.json', import.meta.url))).version

async function main() {
  deadline(40_000)
  useWebSocketImplementation(TracingWebSocket)
  const { url, memberSK, channel } = args()
  const sk = hexToBytes(memberSK)
  const filter = { kinds: [9], '#h': [channel] }
  const result = { library: 'nostr-tools', version, pubkey: getPublicKey(sk) }

  // 1. Anonymous: no onauth, so the CLOSED is final.
  {
    const pool = new SimplePool()
    const first = connections.length
    const events = []
    const closed = await withTimeout(
      new Promise((resolve) => {
        pool.subscribe([url], filter, {
          onevent: (ev) => events.push(ev.id),
          // The pool calls oneose for a CLOSED too, just before onclose.
          oneose: () => setTimeout(() => resolve(['(EOSE without CLOSED)']), 2000),
          onclose: (reasons) => resolve(reasons.map((r) => r.reason)),
        })
      }),
      10_000,
      'anonymous REQ',
    )
    const relay = await pool.ensureRelay(url)
    const count = await withTimeout(relay.count([filter], {}), 10_000, 'anonymous COUNT')
    result.anonymous = { events, closed, count, wire: connections[first]?.wire ?? [] }
    pool.destroy()
  }

  // 2. Member: onauth signs the AUTH event with the member's key.
  {
    const pool = new SimplePool()
    const first = connections.length
    const onauth = async (template) => finalizeEvent(template, sk)
    const stored = []
    const live = []
    let eose
    const eosed = new Promise((resolve, reject) => (eose = { resolve, reject }))
    let liveWaiter = null
    let afterEOSE = false
    const sub = pool.subscribe([url], filter, {
      onauth,
      onevent: (ev) => {
        if (!afterEOSE) return stored.push(ev.id)
        live.push(ev.id)
        liveWaiter?.()
      },
      oneose: () => {
        afterEOSE = true
        eose.resolve()
      },
      onclose: (reasons) => eose.reject(new Error('member subscription closed: ' + JSON.stringify(reasons))),
    })
    await withTimeout(eosed, 15_000, 'member REQ up to EOSE')

    const message = finalizeEvent(
      {
        kind: 9,
        created_at: Math.floor(Date.now() / 1000),
        tags: [['h', channel]],
        content: 'sent by nostr-tools ' + version,
      },
      sk,
    )
    const gotLive = new Promise((resolve) => {
      liveWaiter = () => live.includes(message.id) && resolve()
    })
    const [published] = await Promise.allSettled(pool.publish([url], message, { onauth }))
    if (published.status !== 'fulfilled') throw new Error('publish refused: ' + String(published.reason))
    await withTimeout(gotLive, 10_000, 'live delivery of the published message')

    const relay = await pool.ensureRelay(url)
    const count = await withTimeout(relay.count([filter], {}), 10_000, 'member COUNT')
    sub.close()
    result.member = {
      events: stored,
      published: message.id,
      publishReason: published.value,
      live,
      count,
      wire: connections[first]?.wire ?? [],
    }
    pool.destroy()
  }
  done(result)
}

main().catch(fail)
