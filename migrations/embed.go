// Package migrations holds seatd's PostgreSQL schema as plain, numbered SQL
// files in goose format (-- +goose Up / -- +goose Down). They are embedded in
// the binary; server/distributed applies them (Open, or `seatd migrate`).
package migrations

import "embed"

// FS holds every migration file (NNNNN_name.sql), in version order by name.
//
//go:embed *.sql
var FS embed.FS
