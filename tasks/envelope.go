package tasks

import (
	"encoding/binary"
	"fmt"

	"github.com/worksteal/worksteal/internal/names"
)

// envelopeV1 is the first byte of every envelope this version writes. A
// later version (chains, fan-out, unique keys) gets a byte of its own, so
// that a Mux that does not know it fails the task with ErrDecode rather
// than misreading it.
const envelopeV1 = 1

// envelope is a task as a queue item's payload holds it:
//
//	byte    version (envelopeV1)
//	uvarint length of the type, then the type
//	uvarint length of the codec's name, then the name
//	bytes   the encoded arguments, to the end
type envelope struct {
	Type  string
	Codec string
	Args  []byte
}

func (e envelope) encode() []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(e.Type)+len(e.Codec)+len(e.Args))
	b = append(b, envelopeV1)
	b = binary.AppendUvarint(b, uint64(len(e.Type)))
	b = append(b, e.Type...)
	b = binary.AppendUvarint(b, uint64(len(e.Codec)))
	b = append(b, e.Codec...)
	return append(b, e.Args...)
}

// decodeEnvelope reads an envelope; every error wraps ErrDecode. Args
// shares b's memory.
func decodeEnvelope(b []byte) (envelope, error) {
	if len(b) == 0 {
		return envelope{}, fmt.Errorf("%w: empty envelope", ErrDecode)
	}
	if b[0] != envelopeV1 {
		return envelope{}, fmt.Errorf("%w: envelope version %d, want %d", ErrDecode, b[0], envelopeV1)
	}
	rest := b[1:]
	typ, rest, err := readName(rest, "type")
	if err != nil {
		return envelope{}, err
	}
	codec, rest, err := readName(rest, "codec")
	if err != nil {
		return envelope{}, err
	}
	return envelope{Type: typ, Codec: codec, Args: rest}, nil
}

// readName reads a length-prefixed name that names.Check accepts.
func readName(b []byte, what string) (name string, rest []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return "", nil, fmt.Errorf("%w: envelope's %s is cut short", ErrDecode, what)
	}
	// Uvarint accepts padded encodings (0x81 0x00 for 1): refused, so that
	// an envelope has one reading and one encoding.
	var minimal [binary.MaxVarintLen64]byte
	if w != len(binary.AppendUvarint(minimal[:0], n)) {
		return "", nil, fmt.Errorf("%w: envelope's %s has a padded length", ErrDecode, what)
	}
	name = string(b[w : w+int(n)])
	if err := names.Check(name); err != nil {
		return "", nil, fmt.Errorf("%w: envelope's %s: %v", ErrDecode, what, err)
	}
	return name, b[w+int(n):], nil
}
