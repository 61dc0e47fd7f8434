package verify

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	mrand "math/rand/v2"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/nbd-wtf/go-nostr"
)

// Events checks each of evs as Event does and sets errs[i] (len(errs) ==
// len(evs)) to what Event(evs[i]) returns. The signatures are verified
// together (BIP-340 batch verification): one multi-scalar multiplication
// for all of them, whose doublings they share and whose additions use
// small signed-digit tables of each point, costs each signature about
// 0.55-0.7 of a verification of its own from 8 events on
// (BenchmarkVerifyBatch). When the batch does not hold, each event is
// verified alone, which gives each verdict as Event does: a bad
// signature costs the events checked with it at most that batch check
// besides their own verification, however many are bad (halving the
// batch instead would cost a flood of bad signatures several batch
// checks each).
func (v *Verifier) Events(evs []*nostr.Event, errs []error) {
	terms := make([]batchTerm, 0, len(evs))
	for i, ev := range evs {
		t, ok := v.term(ev)
		if !ok {
			errs[i] = v.Event(ev)
			continue
		}
		t.index = i
		errs[i] = nil
		terms = append(terms, t)
	}
	if len(terms) > 2 && batchHolds(terms) {
		return
	}
	for _, t := range terms {
		errs[t.index] = v.hashed(evs[t.index], t.hash)
	}
}

// batchTerm is one event's part of a batch: its hash, its signature's R
// (lifted from r with an even y, as BIP-340 fixes it) and s, its author's
// point, and the challenge e of BIP-340.
type batchTerm struct {
	index int
	hash  [32]byte
	r     btcec.JacobianPoint
	s     btcec.ModNScalar
	e     btcec.ModNScalar
	p     btcec.JacobianPoint
}

// term is ev's part of a batch, false when anything about ev (its id,
// its pubkey or signature as text, an r that is no point's x) is not as
// a valid event's: Event then says what. Such an event is left out of the
// batch: it cannot make the others' batch fail.
func (v *Verifier) term(ev *nostr.Event) (batchTerm, bool) {
	var t batchTerm
	if len(ev.PubKey) != 64 || len(ev.Sig) != 128 {
		return t, false
	}
	t.hash = sha256.Sum256(ev.Serialize())
	if ev.ID != hex.EncodeToString(t.hash[:]) {
		return t, false
	}
	var pk [32]byte
	if _, err := hex.Decode(pk[:], []byte(ev.PubKey)); err != nil {
		return t, false
	}
	key, err := v.key(pk)
	if err != nil {
		return t, false
	}
	var sig [64]byte
	if _, err := hex.Decode(sig[:], []byte(ev.Sig)); err != nil {
		return t, false
	}
	if overflow := t.r.X.SetByteSlice(sig[:32]); overflow {
		return t, false
	}
	if !btcec.DecompressY(&t.r.X, false, &t.r.Y) {
		return t, false
	}
	t.r.Z.SetInt(1)
	// As btcec's verification (go-nostr's CheckSignature) reads s: modulo
	// the group order.
	t.s.SetByteSlice(sig[32:])
	t.e.SetBytes(challenge(sig[:32], pk[:], t.hash[:]))
	key.AsJacobian(&t.p)
	return t, true
}

// challengeTag is SHA-256 of BIP-340's challenge tag, which a tagged hash
// writes twice before its data.
var challengeTag = sha256.Sum256([]byte("BIP0340/challenge"))

// challenge is BIP-340's e before its reduction: tagged_hash(
// "BIP0340/challenge", r || P || m).
func challenge(r, p, m []byte) *[32]byte {
	h := sha256.New()
	h.Write(challengeTag[:])
	h.Write(challengeTag[:])
	h.Write(r)
	h.Write(p)
	h.Write(m)
	var e [32]byte
	h.Sum(e[:0])
	return &e
}

// batchHolds reports whether every term's signature holds: for random
// a_i of 128 bits (a_0 = 1), which an attacker cannot foresee,
//
//	(Σ a_i·s_i)·G = Σ a_i·R_i + Σ (a_i·e_i)·P_i
//
// holds. A single signature holds exactly when s·G - e·P is R (BIP-340's
// verification); if one of them does not, the sums differ but with
// probability 2^-128.
func batchHolds(terms []batchTerm) bool {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return false // the caller verifies each alone
	}
	rng := mrand.NewChaCha8(seed)
	points := make([]scaledPoint, 0, 2*len(terms))
	var sum btcec.ModNScalar
	for i := range terms {
		t := &terms[i]
		var a btcec.ModNScalar
		if i == 0 {
			a.SetInt(1)
		} else {
			var b [16]byte
			rng.Read(b[:])
			a.SetByteSlice(b[:])
		}
		var as, ae btcec.ModNScalar
		sum.Add(as.Mul2(&a, &t.s))
		ae.Mul2(&a, &t.e)
		points = append(points, newScaledPoint(&t.r, &a), newScaledPoint(&t.p, &ae))
	}
	normalizeTables(points)
	var rhs, lhs btcec.JacobianPoint
	multiScalarMult(points, &rhs)
	btcec.ScalarBaseMultNonConst(&sum, &lhs)
	return lhs.EquivalentNonConst(&rhs)
}

// window is the width of the signed digits (wNAF) of the multi-scalar
// multiplication: each point keeps its odd multiples 1..15, and a scalar
// of 256 bits has about 43 digits that are not zero.
const window = 5

// scaledPoint is a point to multiply by a scalar: the point's odd
// multiples, and the scalar's signed digits, least significant first.
type scaledPoint struct {
	table  [1 << (window - 2)]btcec.JacobianPoint
	digits [257]int8
	n      int
}

func newScaledPoint(p *btcec.JacobianPoint, k *btcec.ModNScalar) scaledPoint {
	var sp scaledPoint
	sp.table[0].Set(p)
	var twice btcec.JacobianPoint
	btcec.DoubleNonConst(p, &twice)
	for j := 1; j < len(sp.table); j++ {
		btcec.AddNonConst(&sp.table[j-1], &twice, &sp.table[j])
	}
	sp.n = wnaf(k, &sp.digits)
	return sp
}

// wnaf writes k's width-window non-adjacent form into digits, least
// significant first: every digit zero or odd within ±2^(window-1), and
// any window of them at most one not zero. It returns how many digits
// there are.
func wnaf(k *btcec.ModNScalar, digits *[257]int8) int {
	b := k.Bytes()
	var limbs [5]uint64 // little-endian; the fifth takes a carry
	for i := range 4 {
		for j := range 8 {
			limbs[i] |= uint64(b[31-8*i-j]) << (8 * j)
		}
	}
	n := 0
	for limbs != [5]uint64{} {
		var d int64
		if limbs[0]&1 == 1 {
			d = int64(limbs[0] & (1<<window - 1))
			if d >= 1<<(window-1) {
				d -= 1 << window
			}
			if d > 0 {
				limbs[0] -= uint64(d) // its low bits are d: no borrow
			} else {
				add := uint64(-d)
				for i := range limbs {
					limbs[i] += add
					if limbs[i] >= add {
						break
					}
					add = 1
				}
			}
		}
		digits[n] = int8(d)
		n++
		for i := range 4 {
			limbs[i] = limbs[i]>>1 | limbs[i+1]<<63
		}
		limbs[4] >>= 1
	}
	return n
}

// normalizeTables brings every table point to z = 1 with one field
// inversion for all of them (Montgomery's trick), so that adding one to
// the sum is the cheaper addition of a point with z = 1.
func normalizeTables(points []scaledPoint) {
	n := len(points) * len(points[0].table)
	at := func(i int) *btcec.JacobianPoint { return &points[i/len(points[0].table)].table[i%len(points[0].table)] }
	prefix := make([]btcec.FieldVal, n)
	var acc btcec.FieldVal
	acc.SetInt(1)
	for i := range n {
		acc.Mul(&at(i).Z)
		prefix[i].Set(&acc)
	}
	var inv btcec.FieldVal
	inv.Set(&prefix[n-1]).Inverse()
	for i := n - 1; i >= 0; i-- {
		p := at(i)
		var zInv, z2 btcec.FieldVal
		if i > 0 {
			zInv.Mul2(&inv, &prefix[i-1])
		} else {
			zInv.Set(&inv)
		}
		inv.Mul(&p.Z)
		z2.SquareVal(&zInv)
		p.X.Mul(&z2).Normalize()
		p.Y.Mul(z2.Mul(&zInv)).Normalize()
		p.Z.SetInt(1)
	}
}

// multiScalarMult sets result to the sum of every point times its scalar:
// one run of doublings over the longest scalar's digits, each point's
// digit added from its table at its place (Straus's method).
func multiScalarMult(points []scaledPoint, result *btcec.JacobianPoint) {
	longest := 0
	for i := range points {
		longest = max(longest, points[i].n)
	}
	var q, neg btcec.JacobianPoint
	for bit := longest - 1; bit >= 0; bit-- {
		btcec.DoubleNonConst(&q, &q)
		for i := range points {
			sp := &points[i]
			if bit >= sp.n {
				continue
			}
			switch d := sp.digits[bit]; {
			case d > 0:
				btcec.AddNonConst(&q, &sp.table[d>>1], &q)
			case d < 0:
				neg.Set(&sp.table[(-d)>>1])
				neg.Y.Negate(1).Normalize()
				btcec.AddNonConst(&q, &neg, &q)
			}
		}
	}
	result.Set(&q)
}
