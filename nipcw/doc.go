// Package nipcw is the channel-window wire contract shared by the relay and
// its clients (channel-window.md): the kinds of its vocabulary and which of
// them have a place in a thread, the extension fields of a `POST /query`
// filter and the path each filter takes (CW-1..CW-8, RL-16..RL-20), the
// composite Cursor, the content of the thread summary (39005) and window
// bounds (39006) overlays and the bounds' `d` tag. It does no I/O and
// imports neither the relay nor the store.
package nipcw
