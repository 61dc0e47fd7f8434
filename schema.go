package main

import _ "embed"

// schema is schema.sql, the whole SQLite schema (RL-2), embedded here at
// the top level where the design card keeps it and handed to the
// commands (cmd.Schema).
//
//go:embed schema.sql
var schema string
