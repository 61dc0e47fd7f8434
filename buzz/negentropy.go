package buzz

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Negentropy message structure (NIP-77): a version byte, then ranges, each
// an upper bound (a varint timestamp, a varint length and that many bytes
// of an id prefix), a varint mode and its payload: nothing (skip), a
// 16-byte fingerprint, or a varint count and that many 32-byte ids.
const (
	negVersion     = 0x61
	negModeSkip    = 0
	negModeFinger  = 1
	negModeIDList  = 2
	negFingerBytes = 16
	negIDBytes     = 32
	negMaxVarint   = 8 // bytes: a varint of up to 56 bits
)

// CheckNegentropyMessage checks that a NIP-77 negentropy message (hex) is
// well formed before go-nostr's negentropy reads it, on the relay's side
// or the client's (RL-34): that package trusts the counts and lengths it
// is sent (an id list claiming 2^50 ids is a map of that size, an overlong
// varint a negative length and a panic). A message of another protocol
// version passes: a relay's reconciliation answers it with its own, as
// NIP-77 says, and a client's refuses it.
func CheckNegentropyMessage(msg string) error {
	b, err := hex.DecodeString(msg)
	if err != nil || msg != strings.ToLower(msg) {
		return errors.New("the negentropy message must be lowercase hex")
	}
	if len(b) == 0 {
		return errors.New("empty negentropy message")
	}
	if b[0] != negVersion {
		return nil
	}
	rest := b[1:]
	for len(rest) > 0 {
		var n uint64
		if _, rest, err = readNegVarint(rest); err != nil { // timestamp
			return err
		}
		if n, rest, err = readNegVarint(rest); err != nil {
			return err
		}
		if n > negIDBytes || uint64(len(rest)) < n {
			return errors.New("malformed negentropy bound")
		}
		rest = rest[n:]
		var mode uint64
		if mode, rest, err = readNegVarint(rest); err != nil {
			return err
		}
		switch mode {
		case negModeSkip:
		case negModeFinger:
			if len(rest) < negFingerBytes {
				return errors.New("truncated negentropy fingerprint")
			}
			rest = rest[negFingerBytes:]
		case negModeIDList:
			if n, rest, err = readNegVarint(rest); err != nil {
				return err
			}
			if n > uint64(len(rest)/negIDBytes) {
				return errors.New("truncated negentropy id list")
			}
			rest = rest[n*negIDBytes:]
		default:
			return fmt.Errorf("unknown negentropy mode %d", mode)
		}
	}
	return nil
}

// readNegVarint reads one varint (big-endian groups of 7 bits, high bit
// set on all bytes but the last) of at most negMaxVarint bytes.
func readNegVarint(b []byte) (uint64, []byte, error) {
	var v uint64
	for i := 0; i < len(b) && i < negMaxVarint; i++ {
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, b[i+1:], nil
		}
	}
	return 0, nil, errors.New("malformed negentropy varint")
}
