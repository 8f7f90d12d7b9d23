// Package osworld is OSWorld's task semantics, as drums reproduces them: the
// task JSON model, setup steps with SetupController's behaviour (Chromium
// tabs through internal/cdp), getters, the metrics in Go where a corpus
// recorded from OSWorld's own Python proves them equal, OSWorld's Python
// worker as the evaluator of record, and the file cache and its mirror. It
// reaches a desktop only through guestd/client and knows nothing of the
// runner, the report or the provider daemon (package tasks).
package osworld
