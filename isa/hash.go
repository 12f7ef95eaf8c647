package isa

import (
	"crypto/sha256"
	"encoding/hex"
)

// Hash returns the hex SHA-256 of p's .smbc encoding; state.json records it
// so that a resume can tell whether the program changed. It returns "" when
// p cannot be encoded (see MarshalBinary).
func (p *Program) Hash() string {
	b, err := p.MarshalBinary()
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
