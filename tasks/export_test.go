package tasks

import "github.com/worksteal/worksteal/internal/taskenv"

// EncodeEnvelope and DecodeEnvelope open the envelope to the tests of
// package tasks_test: the fuzz target, the benchmark's filling, and tasks
// written by hand.
func EncodeEnvelope(typ, codec string, args []byte) []byte {
	return taskenv.Envelope{Type: typ, Codec: codec, Args: args}.Encode()
}

// ReencodeEnvelope decodes an envelope of any version and encodes it
// again.
func ReencodeEnvelope(b []byte) ([]byte, error) {
	e, err := taskenv.Decode(b)
	if err != nil {
		return nil, err
	}
	return e.Encode(), nil
}

func DecodeEnvelope(b []byte) (typ, codec string, args []byte, err error) {
	e, err := taskenv.Decode(b)
	return e.Type, e.Codec, e.Args, err
}

// JSONForTest and UnJSONForTest are the default codec's, for a test codec
// built on them.
func JSONForTest(v any) ([]byte, error)      { return jsonCodec{}.Marshal(v) }
func UnJSONForTest(data []byte, v any) error { return jsonCodec{}.Unmarshal(data, v) }
