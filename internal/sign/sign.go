// Package sign makes BIP-340 Schnorr signatures with one key, the relay's,
// byte for byte as btcec's schnorr.Sign makes them (the nonce of RFC 6979,
// no check by verification), but with what depends only on the key (its
// point, its parity) worked out once: go-nostr's Event.Sign derives the
// public key twice for every signature, two of its three multiplications
// of the curve's generator. The relay signs its overlays (RL-21, CW-21)
// many times a second.
package sign

import (
	"encoding/hex"
	"errors"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	secp "github.com/decred/dcrd/dcrec/secp256k1/v4"
)

// rfc6979ExtraDataV0 is what BIP-340 signing feeds RFC 6979 beside the key
// and the message, so that its nonces differ from ECDSA's:
// SHA-256("BIP-340"), as in btcec's schnorr package.
var rfc6979ExtraDataV0 = [32]byte{
	0xa3, 0xeb, 0x4c, 0x18, 0x2f, 0xae, 0x7e, 0xf4,
	0xe8, 0x10, 0xc6, 0xee, 0x13, 0xb0, 0xe9, 0x26,
	0x68, 0x6d, 0x71, 0xe8, 0x7f, 0x39, 0x4f, 0x79,
	0x9c, 0x00, 0xa5, 0x21, 0x03, 0xcb, 0x4e, 0x17,
}

// Key is a secret key ready to sign.
type Key struct {
	d      btcec.ModNScalar // the secret, negated when its point's y is odd (BIP-340)
	dBytes [32]byte         // d as the nonce derivation reads it
	px     [32]byte         // the x coordinate of the public key
}

// ErrKey is a secret key that signs nothing: zero, or not 32 bytes.
var ErrKey = errors.New("invalid secret key")

// NewKey prepares the 64-hex secret key for signing, read as go-nostr
// reads it (reduced modulo the group order).
func NewKey(secretHex string) (*Key, error) {
	secret, err := hex.DecodeString(secretHex)
	if err != nil || len(secret) != 32 {
		return nil, ErrKey
	}
	priv, pub := btcec.PrivKeyFromBytes(secret)
	if priv.Key.IsZero() {
		return nil, ErrKey
	}
	k := &Key{d: priv.Key}
	point := pub.SerializeCompressed()
	if point[0] == secp.PubKeyFormatCompressedOdd {
		k.d.Negate()
	}
	k.d.PutBytes(&k.dBytes)
	copy(k.px[:], point[1:])
	return k, nil
}

// PubKey is the key's public key as nostr writes it: 64 lowercase hex.
func (k *Key) PubKey() string { return hex.EncodeToString(k.px[:]) }

// Sign signs the 32-byte hash (an event's id): the signature
// schnorr.Sign(key, hash, schnorr.FastSign()) makes, steps 6-13 of
// BIP-340 as btcec implements them.
func (k *Key) Sign(hash [32]byte) [64]byte {
	for iteration := uint32(0); ; iteration++ {
		nonce := btcec.NonceRFC6979(k.dBytes[:], hash[:], rfc6979ExtraDataV0[:], nil, iteration)
		var r btcec.JacobianPoint
		btcec.ScalarBaseMultNonConst(nonce, &r)
		r.ToAffine()
		if r.Y.IsOdd() {
			nonce.Negate()
		}
		rx := r.X.Bytes()
		challenge := chainhash.TaggedHash(chainhash.TagBIP0340Challenge, rx[:], k.px[:], hash[:])
		var e btcec.ModNScalar
		if overflow := e.SetBytes((*[32]byte)(challenge)); overflow != 0 {
			// btcec tries the next nonce; a hash past the order is
			// about as likely as guessing the key.
			nonce.Zero()
			continue
		}
		s := new(btcec.ModNScalar).Mul2(&e, &k.d).Add(nonce)
		nonce.Zero()
		var sig [64]byte
		copy(sig[:32], rx[:])
		s.PutBytesUnchecked(sig[32:])
		return sig
	}
}
