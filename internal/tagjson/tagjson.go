// Package tagjson writes and reads an event's tags as the JSON array they
// are on the wire, byte for byte as signed: the stores keep tags so.
package tagjson

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nbd-wtf/go-nostr"
)

// Tags are stored as the JSON array they are on the wire, written and read
// by this small codec rather than encoding/json: it escapes exactly as NIP-01
// serialization does and leaves every other byte alone (encoding/json would
// replace invalid UTF-8 and so change what the signature covers), and it is
// several times faster on the read path, where every returned event passes
// through it.

// AppendTags appends the JSON array of tags to dst.
func AppendTags(dst []byte, tags nostr.Tags) []byte {
	dst = append(dst, '[')
	for i, tag := range tags {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		for j, s := range tag {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, s)
		}
		dst = append(dst, ']')
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string with the escapes of NIP-01. The
// bytes between escapes go in runs: every served event's content passes
// through here, and a byte at a time was a twentieth of a window page.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		run := i
		for i+8 <= len(s) && !escapeIn(load64(s[i:i+8])) {
			i += 8
		}
		for i < len(s) && !needsEscape[s[i]] {
			i++
		}
		dst = append(dst, s[run:i]...)
		if i == len(s) {
			break
		}
		switch c := s[i]; {
		case c == '"':
			dst = append(dst, '\\', '"')
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return append(dst, '"')
}

// load64 is the first eight bytes of s as a little-endian word (the
// compiler makes it one load).
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// escapeIn reports whether any of the eight bytes of w needs an escape:
// one below 0x20, a quote or a backslash (the bit tricks of "Bit Twiddling
// Hacks", exact for whether such a byte is there, not for which).
func escapeIn(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (w - 0x20*ones) &^ w
	quote := w ^ '"'*ones
	backslash := w ^ '\\'*ones
	return (below|(quote-ones)&^quote|(backslash-ones)&^backslash)&highs != 0
}

// Plain reports whether AppendString writes s as it is, between quotes.
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if needsEscape[s[i]] {
			return false
		}
	}
	return true
}

// needsEscape marks the bytes AppendString escapes: quote, backslash and
// the control characters.
var needsEscape = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

var ErrMalformed = errors.New("malformed stored tags")

// Parse reads a JSON array of arrays of strings.
func Parse(s string) (nostr.Tags, error) {
	p := tagParser{s: s}
	p.skipSpace()
	if !p.eat('[') {
		return nil, ErrMalformed
	}
	tags := nostr.Tags{}
	p.skipSpace()
	if p.eat(']') {
		return tags, p.end()
	}
	for {
		tag, err := p.tag()
		if err != nil {
			return nil, err
		}
		tags = append(tags, tag)
		p.skipSpace()
		if p.eat(']') {
			return tags, p.end()
		}
		if !p.eat(',') {
			return nil, ErrMalformed
		}
	}
}

type tagParser struct {
	s string
	i int
}

func (p *tagParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *tagParser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *tagParser) end() error {
	p.skipSpace()
	if p.i != len(p.s) {
		return ErrMalformed
	}
	return nil
}

func (p *tagParser) tag() (nostr.Tag, error) {
	p.skipSpace()
	if !p.eat('[') {
		return nil, ErrMalformed
	}
	tag := make(nostr.Tag, 0, 4)
	p.skipSpace()
	if p.eat(']') {
		return tag, nil
	}
	for {
		p.skipSpace()
		str, err := p.str()
		if err != nil {
			return nil, err
		}
		tag = append(tag, str)
		p.skipSpace()
		if p.eat(']') {
			return tag, nil
		}
		if !p.eat(',') {
			return nil, ErrMalformed
		}
	}
}

func (p *tagParser) str() (string, error) {
	if !p.eat('"') {
		return "", ErrMalformed
	}
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != '"' && p.s[p.i] != '\\' {
		p.i++
	}
	if p.i < len(p.s) && p.s[p.i] == '"' {
		p.i++
		return p.s[start : p.i-1], nil
	}
	buf := []byte(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch c {
		case '"':
			return string(buf), nil
		case '\\':
			if p.i >= len(p.s) {
				return "", ErrMalformed
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", ErrMalformed
				}
				if utf16.IsSurrogate(r) {
					save := p.i
					if p.eat('\\') && p.eat('u') {
						if r2, ok := p.hex4(); ok {
							if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
								buf = utf8.AppendRune(buf, d)
								continue
							}
						}
					}
					p.i = save
					r = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", ErrMalformed
			}
		default:
			buf = append(buf, c)
		}
	}
	return "", ErrMalformed
}

func (p *tagParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+4], 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

// Valid reports whether s is a JSON array of arrays of strings, as
// parseTags would read it, without building anything: a stored event is
// served from its columns as they are, once they are known to be sound.
func Valid(s string) bool {
	p := tagParser{s: s}
	p.skipSpace()
	if !p.eat('[') {
		return false
	}
	p.skipSpace()
	if p.eat(']') {
		return p.end() == nil
	}
	for {
		p.skipSpace()
		if !p.eat('[') {
			return false
		}
		p.skipSpace()
		if !p.eat(']') {
			for {
				p.skipSpace()
				if !p.skipStr() {
					return false
				}
				p.skipSpace()
				if p.eat(']') {
					break
				}
				if !p.eat(',') {
					return false
				}
			}
		}
		p.skipSpace()
		if p.eat(']') {
			return p.end() == nil
		}
		if !p.eat(',') {
			return false
		}
	}
}

// skipStr moves past a JSON string, checking its escapes.
func (p *tagParser) skipStr() bool {
	if !p.eat('"') {
		return false
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if p.i >= len(p.s) {
				return false
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := p.hex4(); !ok {
					return false
				}
			default:
				return false
			}
		}
	}
	return false
}
