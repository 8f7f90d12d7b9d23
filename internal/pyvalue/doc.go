// Package pyvalue gives decoded JSON values the semantics OSWorld's Python
// code applies to them: json.loads' rules (Decode), bool(), type().__name__,
// float(), str() and repr(). Values are what encoding/json puts in an any:
// nil, bool, float64 (json.Number when decoded by Decode, which keeps an int
// literal apart from a float), string, []any and map[string]any; int and
// []string, which Go code builds, are taken too. guestd (request bodies) and
// tasks (task files, getter results) share it; it knows neither.
package pyvalue
