package buzz

import (
	"fmt"
	"math"
)

// Rows are a store's result rows as a listing reads them, row by row:
// database/sql's and pgx's rows both are.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ActivityFrom is the position a listing by activity reads before (CW-25):
// after's, or one before which every channel stands when after is nil.
func ActivityFrom(after *ChannelPosition) ChannelPosition {
	if after == nil {
		return ChannelPosition{LastMessageAt: math.MaxInt64, Seq: math.MaxInt64}
	}
	return *after
}

// ScanChannelActivity reads the up to limit rows of a listing by activity,
// each a channel's seq, h and last_message_at, in their order.
func ScanChannelActivity(rows Rows, limit int) ([]ChannelActivity, error) {
	out := make([]ChannelActivity, 0, limit)
	for rows.Next() {
		var ch ChannelActivity
		if err := rows.Scan(&ch.Seq, &ch.H, &ch.LastMessageAt); err != nil {
			return nil, fmt.Errorf("list channels: %w", err)
		}
		out = append(out, ch)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list channels: %w", err)
	}
	return out, nil
}
