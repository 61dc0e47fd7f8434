package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// channelsByActivitySQL lists the open channels by their last message,
// newest first, before position (?1, ?2): one range of channels_activity,
// read backwards, which holds the open channels only.
const channelsByActivitySQL = `SELECT seq, h, last_message_at FROM channels INDEXED BY channels_activity
	WHERE private = 0 AND deleted_at IS NULL AND (last_message_at, seq) < (?1, ?2)
	ORDER BY last_message_at DESC, seq DESC LIMIT ?3`

// ChannelsByActivity lists up to limit open channels, the newest last
// message first, after position after (nil: from the first) (CW-25).
func (s *Store) ChannelsByActivity(ctx context.Context, after *buzz.ChannelPosition, limit int) ([]buzz.ChannelActivity, error) {
	from := buzz.ActivityFrom(after)
	var out []buzz.ChannelActivity
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		st, err := s.prepared(ctx, tx, channelsByActivitySQL)
		if err != nil {
			return fmt.Errorf("list channels: %w", err)
		}
		rows, err := st.QueryContext(ctx, from.LastMessageAt, from.Seq, limit)
		if err != nil {
			return fmt.Errorf("list channels: %w", err)
		}
		defer rows.Close()
		out, err = buzz.ScanChannelActivity(rows, limit)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
