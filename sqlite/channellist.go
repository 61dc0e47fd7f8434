package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// channelsAfterSQL lists channels in store order after a number, each
// open one with the created_at of its newest message that is not deleted
// (RL-6): one seek into events_projection per channel, which holds the
// channel's live messages, replies included, and finds the maximum at the
// end of the channel's range. Reactions, edits, deletions and moderation
// events are no message.
const channelsAfterSQL = `SELECT c.seq, c.h,
	CASE WHEN c.private = 0 AND c.deleted_at IS NULL
		THEN coalesce((SELECT max(e.created_at) FROM events e
			WHERE e.channel = c.seq AND e.row_class >= 1 AND e.deleted_at IS NULL), 0)
		ELSE 0 END
	FROM channels c WHERE c.seq > ? ORDER BY c.seq LIMIT ?`

// ChannelsAfter lists up to limit channels in the order the store numbered
// them, after number after (0: from the first), private and deleted ones
// too: the caller decides with its access rule what it may show (CW-25).
// A call reads limit channels whatever the community holds.
func (s *Store) ChannelsAfter(ctx context.Context, after int64, limit int) ([]buzz.ChannelActivity, error) {
	out := make([]buzz.ChannelActivity, 0, limit)
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		st, err := s.prepared(ctx, tx, channelsAfterSQL)
		if err != nil {
			return fmt.Errorf("list channels: %w", err)
		}
		rows, err := st.QueryContext(ctx, after, limit)
		if err != nil {
			return fmt.Errorf("list channels: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var ch buzz.ChannelActivity
			if err := rows.Scan(&ch.Seq, &ch.H, &ch.LastEventAt); err != nil {
				return fmt.Errorf("list channels: %w", err)
			}
			out = append(out, ch)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list channels: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
