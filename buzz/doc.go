// Package buzz holds the domain of buzz-lite that every other package shares:
// which kinds play which role, how a channel event's NIP-10 tags classify it
// in a thread (CW-10, CW-11), channels, roles and the one rule of who may
// read and write them (RL-10..RL-15), the rules of ingest that read stored
// events over a Lookup (placement, deletions, edits, scope, replacement)
// and the content of group state, the Store the relay asks and the window
// and thread types it serves, and the rejections a client is told about,
// with their exact wire messages. It does no I/O and knows nothing of SQL,
// HTTP or khatru.
package buzz
