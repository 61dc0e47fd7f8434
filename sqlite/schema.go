package sqlite

import _ "embed"

// Schema is schema.sql, the whole database schema (RL-2), for
// Options.Schema.
//
//go:embed schema.sql
var Schema string
