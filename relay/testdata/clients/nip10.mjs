// nostr-tools' NIP-10 reading of thread tags (relay/clients_test.go,
// CW-10): buzz-lite's classification must agree with it on the tag sets
// clients write.
//
//   node nip10.mjs < tag-sets.json
//
// Reads a JSON array of tag sets ([][]string each) on stdin and prints a
// JSON array with, for each, the ids nip10.parse gives as reply and root
// ("" when it gives none).

import { readFileSync } from 'node:fs'
import { parse } from 'nostr-tools/nip10'

const sets = JSON.parse(readFileSync(0, 'utf8'))
const out = sets.map((tags) => {
  const r = parse({ tags })
  return { reply: r.reply?.id ?? '', root: r.root?.id ?? '' }
})
process.stdout.write(JSON.stringify(out) + '\n')
