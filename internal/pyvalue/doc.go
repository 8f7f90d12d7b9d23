// Package pyvalue is Python's value semantics where drums must reproduce
// them exactly: json.loads (Decode) and Flask's jsonify (Jsonify); bool(),
// type().__name__, ==, in, <, float(), str() and repr() of JSON-shaped values
// (nil, bool, float64 or json.Number, string, []any, map[string]any; Go's int
// and []string too); repr of floats and strings; str.strip, splitlines and
// universal newlines; bytes.decode; shlex.split; str(OSError); Python
// literals (ParseLiteral, and the string and number literals pyauto's
// snippets hold). CPython is the reference, and the tests ask
// /usr/bin/python3 where it is installed. guestd, atspi, pyauto and tasks
// share it; it knows none of them.
package pyvalue
