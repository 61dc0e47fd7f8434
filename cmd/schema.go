package cmd

// Schema is the text of the module root's schema.sql, the whole SQLite
// schema (RL-2), which the relay binary embeds: the root's main sets it,
// as it sets Version, because a file of the root cannot be embedded from
// here. Opening a SQLite store without it is refused.
var Schema string
