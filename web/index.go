package web

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/url"

	"github.com/buzz-lite/buzz-lite/buzz"
)

// index lists the channels an anonymous reader can read by their last
// message, newest first, as chat clients list them, from where the link
// of the page before ended (`after`). The store lists open channels only;
// it reads one channel past a full page, so that a page links on only
// when something follows; when ChannelScan ends the page first (the
// relay's reads need authentication, say), it links on from the last
// channel examined. The link's position is sealed (indexSeal), so that no
// link shows a channel's store number, whose gaps would count the private
// channels.
func (v *View) index(ctx context.Context, q url.Values, p *view) error {
	var after *buzz.ChannelPosition
	if s := q.Get("after"); s != "" {
		pos, err := v.seal.open(s)
		if err != nil {
			return err
		}
		after = &pos
	}
	c := v.d.Store.Community()
	now := v.d.Now()
	var lastShown buzz.ChannelPosition
	more, full := true, false
	for examined := 0; more && !full && examined < ChannelScan; {
		batch, err := v.d.Store.ChannelsByActivity(ctx, after, channelBatch)
		if err != nil {
			return err
		}
		more = len(batch) == channelBatch
		for _, a := range batch {
			pos := a.Position()
			after = &pos
			examined++
			ch := c.ChannelBySeq(a.Seq)
			if !c.CanRead(buzz.Anonymous, ch) {
				continue
			}
			if len(p.Channels) == PageRows {
				// One past the page: the page links on after its last.
				full, more, after = true, true, &lastShown
				break
			}
			item := channelItemOf(ch)
			if a.LastMessageAt > 0 {
				t := newTime(a.LastMessageAt, now)
				item.LastActive = &t
			}
			p.Channels = append(p.Channels, item)
			lastShown = pos
		}
	}
	if more && after != nil {
		p.More = "/?after=" + v.seal.seal(*after)
	}
	return nil
}

// indexSeal turns an index position into the `after` of a link and
// back: the position in a block of AES under a key derived from the
// relay's key, a quarter of it zeros that a forged or altered link fails
// to decrypt to. The same position gives the same link, which a cache may
// keep.
type indexSeal struct{ block cipher.Block }

// newIndexSeal is the index seal of the relay whose key is key.
func newIndexSeal(key string) (indexSeal, error) {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte("buzz-lite web index cursor")) // a hash's Write never fails
	block, err := aes.NewCipher(mac.Sum(nil)[:16])
	if err != nil {
		return indexSeal{}, fmt.Errorf("web index cursor key: %w", err)
	}
	return indexSeal{block: block}, nil
}

// A sealed position is its last message's time and its channel's store
// number, 6 bytes each (any created_at the relay accepts, any store
// number), then 4 zero bytes.
const sealField = 6

func (s indexSeal) seal(pos buzz.ChannelPosition) string {
	var plain, sealed [aes.BlockSize]byte
	put48(plain[:sealField], pos.LastMessageAt)
	put48(plain[sealField:2*sealField], pos.Seq)
	s.block.Encrypt(sealed[:], plain[:])
	return base64.RawURLEncoding.EncodeToString(sealed[:])
}

// open is the position sealed in after; errBadCursor when after is not a
// link the relay made.
func (s indexSeal) open(after string) (buzz.ChannelPosition, error) {
	sealed, err := base64.RawURLEncoding.DecodeString(after)
	if err != nil || len(sealed) != aes.BlockSize {
		return buzz.ChannelPosition{}, errBadCursor
	}
	var plain [aes.BlockSize]byte
	s.block.Decrypt(plain[:], sealed)
	if binary.BigEndian.Uint32(plain[2*sealField:]) != 0 {
		return buzz.ChannelPosition{}, errBadCursor
	}
	return buzz.ChannelPosition{LastMessageAt: get48(plain[:sealField]), Seq: get48(plain[sealField : 2*sealField])}, nil
}

// put48 writes the low 48 bits of v to b, big-endian.
func put48(b []byte, v int64) {
	for i := range sealField {
		b[i] = byte(v >> (8 * (sealField - 1 - i)))
	}
}

// get48 reads what put48 wrote.
func get48(b []byte) int64 {
	var v int64
	for i := range sealField {
		v = v<<8 | int64(b[i])
	}
	return v
}
