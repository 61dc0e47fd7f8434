package main

import _ "embed"

// schema is schema.sql, the whole database schema (RL-2).
//
//go:embed schema.sql
var schema string
