package taskenv

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/worksteal/worksteal/internal/names"
	"github.com/worksteal/worksteal/internal/qstore"
)

// ErrDecode is package tasks' ErrDecode, which every error of [Decode]
// wraps.
var ErrDecode = errors.New("tasks: cannot decode")

// UniqueKeyMax bounds a task's unique key, in bytes. The queue's key is
// the task type, ':' and this key: at most 128+1+256 bytes, within the
// queue's bound.
const UniqueKeyMax = 256

// queueUniqueMax bounds the queue's key, type ':' key, as a chain's
// envelope carries it.
const queueUniqueMax = 128 + 1 + UniqueKeyMax

// The first byte of every envelope: its version. A tasks.Mux that does
// not know a version fails the task with ErrDecode rather than misreading
// it.
const (
	envelopeV1 = 1 // a task
	envelopeV2 = 2 // a step of a chain
)

// Envelope is a task as a queue item's payload holds it. Version 1, a
// task on its own:
//
//	byte    version (envelopeV1)
//	uvarint length of the type, then the type
//	uvarint length of the codec's name, then the name
//	bytes   the encoded arguments, to the end
//
// Version 2, a step of a chain, adds after the codec's name:
//
//	uvarint length of the chain's id, then the id ("" at step 1: the
//	        chain is named after its first item)
//	uvarint length of the queue's unique key the chain holds, then the
//	        key ("" for none)
//	uvarint the step, 1 to steps
//	uvarint the chain's steps, at most qstore.ChainStepsMax
//	byte    1 if this step's arguments are the previous result, else 0
//	uvarint length of the previous step's result, then the result
//	        (empty at step 1)
//	then for each step after this one: a byte, 1 if its arguments are
//	        the previous result (and none follow), else 0 and the
//	        uvarint length of its arguments, then them; the uvarint
//	        length of its type, then the type
//
// and ends with this step's encoded arguments (none when piped).
type Envelope struct {
	Type  string
	Codec string
	Args  []byte // encoded with Codec; a piped step's are the previous step's result
	Chain *Chain // nil: version 1
}

// Chain is what a step of a chain carries: where it is, the previous
// step's result and the steps still to come.
type Chain struct {
	ID          string // "" at step 1: the chain is named after its first item
	Unique      string // the queue's unique key, handed on step to step; "" for none
	Step, Steps int
	Piped       bool // Args are Prev
	Prev        []byte
	Rest        []Step
}

// Step is a step still to come, its arguments encoded.
type Step struct {
	Type  string
	Piped bool
	Args  []byte
}

// Encode is e as a payload.
func (e Envelope) Encode() []byte {
	n := 1 + 2*binary.MaxVarintLen64 + len(e.Type) + len(e.Codec) + len(e.Args)
	if c := e.Chain; c != nil {
		n += 6*binary.MaxVarintLen64 + len(c.ID) + len(c.Unique) + len(c.Prev)
		for _, s := range c.Rest {
			n += 1 + 2*binary.MaxVarintLen64 + len(s.Type) + len(s.Args)
		}
	}
	b := make([]byte, 0, n)
	if e.Chain == nil {
		b = append(b, envelopeV1)
	} else {
		b = append(b, envelopeV2)
	}
	b = appendBytes(b, e.Type)
	b = appendBytes(b, e.Codec)
	if c := e.Chain; c != nil {
		b = appendBytes(b, c.ID)
		b = appendBytes(b, c.Unique)
		b = binary.AppendUvarint(b, uint64(c.Step))
		b = binary.AppendUvarint(b, uint64(c.Steps))
		b = append(b, flag(c.Piped))
		b = appendBytes(b, c.Prev)
		for _, s := range c.Rest {
			b = append(b, flag(s.Piped))
			if !s.Piped {
				b = appendBytes(b, s.Args)
			}
			b = appendBytes(b, s.Type)
		}
		if c.Piped {
			return b
		}
	}
	return append(b, e.Args...)
}

func appendBytes[S string | []byte](b []byte, s S) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func flag(on bool) byte {
	if on {
		return 1
	}
	return 0
}

// Decode reads an envelope; every error wraps [ErrDecode]. Its byte
// slices share b's memory.
func Decode(b []byte) (Envelope, error) {
	if len(b) == 0 {
		return Envelope{}, fmt.Errorf("%w: empty envelope", ErrDecode)
	}
	if b[0] != envelopeV1 && b[0] != envelopeV2 {
		return Envelope{}, fmt.Errorf("%w: envelope version %d, want %d or %d", ErrDecode, b[0], envelopeV1, envelopeV2)
	}
	rest := b[1:]
	typ, rest, err := readName(rest, "type")
	if err != nil {
		return Envelope{}, err
	}
	codec, rest, err := readName(rest, "codec")
	if err != nil {
		return Envelope{}, err
	}
	e := Envelope{Type: typ, Codec: codec}
	if b[0] == envelopeV2 {
		if e.Chain, rest, err = readChain(rest); err != nil {
			return Envelope{}, err
		}
		if e.Chain.Piped {
			if len(rest) > 0 {
				return Envelope{}, fmt.Errorf("%w: envelope's piped step has arguments", ErrDecode)
			}
			rest = e.Chain.Prev
		}
	}
	e.Args = rest
	return e, nil
}

func readChain(b []byte) (*Chain, []byte, error) {
	c := &Chain{}
	id, b, err := readBytes(b, "chain id")
	if err != nil {
		return nil, nil, err
	}
	c.ID = string(id)
	if len(c.ID) > qstore.ChainIDMax {
		return nil, nil, fmt.Errorf("%w: envelope's chain id is too long", ErrDecode)
	}
	unique, b, err := readBytes(b, "chain's unique key")
	if err != nil {
		return nil, nil, err
	}
	c.Unique = string(unique)
	if len(c.Unique) > queueUniqueMax {
		return nil, nil, fmt.Errorf("%w: envelope's chain unique key is too long", ErrDecode)
	}
	var step, steps uint64
	if step, b, err = readUvarint(b, "step"); err != nil {
		return nil, nil, err
	}
	if steps, b, err = readUvarint(b, "steps"); err != nil {
		return nil, nil, err
	}
	if steps < 1 || steps > qstore.ChainStepsMax || step < 1 || step > steps || (step == 1) != (c.ID == "") {
		return nil, nil, fmt.Errorf("%w: envelope's chain step %d of %d (chain id of %d bytes)", ErrDecode, step, steps, len(c.ID))
	}
	c.Step, c.Steps = int(step), int(steps)
	if c.Piped, b, err = readFlag(b, "step"); err != nil {
		return nil, nil, err
	}
	if c.Prev, b, err = readBytes(b, "previous result"); err != nil {
		return nil, nil, err
	}
	if c.Step == 1 && (c.Piped || len(c.Prev) > 0) {
		return nil, nil, fmt.Errorf("%w: envelope's first step has a previous result", ErrDecode)
	}
	c.Rest = make([]Step, c.Steps-c.Step)
	for i := range c.Rest {
		s := &c.Rest[i]
		if s.Piped, b, err = readFlag(b, "next step"); err != nil {
			return nil, nil, err
		}
		if !s.Piped {
			if s.Args, b, err = readBytes(b, "next step's arguments"); err != nil {
				return nil, nil, err
			}
		}
		if s.Type, b, err = readName(b, "next step's type"); err != nil {
			return nil, nil, err
		}
	}
	return c, b, nil
}

func readFlag(b []byte, what string) (bool, []byte, error) {
	if len(b) == 0 || b[0] > 1 {
		return false, nil, fmt.Errorf("%w: envelope's %s flag is missing or not 0 or 1", ErrDecode, what)
	}
	return b[0] == 1, b[1:], nil
}

// readUvarint reads a minimal uvarint: Uvarint accepts padded encodings
// (0x81 0x00 for 1), which are refused, so that an envelope has one
// reading and one encoding.
func readUvarint(b []byte, what string) (uint64, []byte, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return 0, nil, fmt.Errorf("%w: envelope's %s is cut short", ErrDecode, what)
	}
	var minimal [binary.MaxVarintLen64]byte
	if w != len(binary.AppendUvarint(minimal[:0], n)) {
		return 0, nil, fmt.Errorf("%w: envelope's %s has a padded length", ErrDecode, what)
	}
	return n, b[w:], nil
}

// readBytes reads a length-prefixed byte string.
func readBytes(b []byte, what string) (data, rest []byte, err error) {
	n, b, err := readUvarint(b, what)
	if err != nil {
		return nil, nil, err
	}
	if n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("%w: envelope's %s is cut short", ErrDecode, what)
	}
	return b[:n:n], b[n:], nil
}

// readName reads a length-prefixed name that names.Check accepts.
func readName(b []byte, what string) (name string, rest []byte, err error) {
	data, rest, err := readBytes(b, what)
	if err != nil {
		return "", nil, err
	}
	name = string(data)
	if err := names.Check(name); err != nil {
		return "", nil, fmt.Errorf("%w: envelope's %s: %v", ErrDecode, what, err)
	}
	return name, rest, nil
}
