package pyvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"
)

// Decode parses a whole body as one JSON value, numbers as json.Number (the
// literal kept, so that it prints back the way Python would). Like Python's
// json.loads it rejects invalid UTF-8 and trailing data.
func Decode(body []byte) (any, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("empty body")
		}
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("extra data after the JSON value")
	}
	return v, nil
}
