// Shared by the client scripts: arguments, a WebSocket that records what
// crosses the wire, and the JSON result on stdout (relay/clients_test.go).

import WebSocket from 'ws'

// args reads `<relay-url> <member-secret-key-hex> <private-channel>` from
// the command line (or BUZZ_RELAY_URL, BUZZ_MEMBER_SK, BUZZ_CHANNEL).
export function args() {
  const [url, memberSK, channel] = process.argv.slice(2)
  const a = {
    url: url || process.env.BUZZ_RELAY_URL,
    memberSK: memberSK || process.env.BUZZ_MEMBER_SK,
    channel: channel || process.env.BUZZ_CHANNEL,
  }
  if (!a.url || !/^[0-9a-f]{64}$/.test(a.memberSK || '') || !a.channel) {
    fail('usage: node ' + process.argv[1] + ' <relay-url> <member-secret-key-hex> <private-channel>')
  }
  return a
}

// connections lists, in the order they were opened, every connection a
// TracingWebSocket made, each with the messages that crossed it.
export const connections = []

// TracingWebSocket is ws's WebSocket, recording each message in a short
// form: [direction, label, subscription or event id, detail], and its
// closing as ['<', 'close', code].
export class TracingWebSocket extends WebSocket {
  constructor(...a) {
    super(...a)
    const conn = { url: String(a[0]), wire: [] }
    connections.push(conn)
    this._wire = conn.wire
    this.on('message', (data) => this._wire.push(summary('<', String(data))))
    this.on('close', (code) => this._wire.push(['<', 'close', String(code)]))
  }

  send(data, ...rest) {
    this._wire.push(summary('>', String(data)))
    return super.send(data, ...rest)
  }
}

function summary(dir, text) {
  let m
  try {
    m = JSON.parse(text)
  } catch {
    return [dir, 'not-json', text.slice(0, 200)]
  }
  if (!Array.isArray(m)) return [dir, 'not-array', text.slice(0, 200)]
  const [label, a, b, c] = m
  switch (label) {
    case 'EVENT': // > ["EVENT", ev]  < ["EVENT", sub, ev]
      return dir === '>' ? [dir, label, a?.id] : [dir, label, a, b?.id]
    case 'AUTH': // > ["AUTH", ev]  < ["AUTH", challenge]
      return dir === '>' ? [dir, label, a?.id, tagValue(a, 'challenge'), tagValue(a, 'relay')] : [dir, label, a]
    case 'OK':
      return [dir, label, a, String(b), c ?? '']
    case 'REQ':
    case 'COUNT':
      if (dir === '<') return [dir, label, a, String(b?.count)]
      return [dir, label, a, JSON.stringify(m.slice(2))]
    case 'CLOSED':
    case 'NOTICE':
      return [dir, label, a, b ?? '']
    default:
      return [dir, String(label), a === undefined ? '' : String(a)]
  }
}

function tagValue(ev, name) {
  return ev?.tags?.find((t) => t[0] === name)?.[1] ?? ''
}

// withTimeout rejects with what when p has not settled within ms.
export function withTimeout(p, ms, what) {
  let timer
  const t = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)
  })
  return Promise.race([p, t]).finally(() => clearTimeout(timer))
}

// received waits until a message labelled label has come in on connection
// i: a client that sends its REQ before the relay's challenge has arrived
// meets the challenge in the middle of its fetch, and what it does then is
// the library's own race, not what the relay answered.
export async function received(i, label, ms) {
  const until = Date.now() + ms
  while (!connections[i]?.wire.some(([dir, l]) => dir === '<' && l === label)) {
    if (Date.now() > until) throw new Error(`no ${label} within ${ms} ms on connection ${i}`)
    await sleep(10)
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// done prints the result as one line of JSON and exits 0.
export function done(result) {
  process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0))
}

// fail prints why on stderr, with the wire so far, and exits 1.
export function fail(why) {
  process.stderr.write(`FAIL: ${why instanceof Error ? why.stack : why}\n`)
  for (const [i, c] of connections.entries()) {
    process.stderr.write(`connection ${i} (${c.url}):\n`)
    for (const m of c.wire) process.stderr.write('  ' + JSON.stringify(m) + '\n')
  }
  process.exit(1)
}

// The whole script must finish well within the Go test's timeout.
export function deadline(ms) {
  setTimeout(() => fail(`script did not finish within ${ms} ms`), ms)
}
