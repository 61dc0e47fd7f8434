// Package buzz holds the domain of buzz-lite that every other package shares:
// which kinds play which role, how a channel event's NIP-10 tags classify it
// in a thread (CW-10, CW-11), and the rejections a client is told about, with
// their exact wire messages. It does no I/O and knows nothing of SQL, HTTP or
// khatru.
package buzz
