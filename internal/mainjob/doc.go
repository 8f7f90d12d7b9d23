// Package mainjob is `drums run`, the main job end to end: the desktops'
// image, the provider daemon, desktops leased in parallel with one
// OSWorld-style episode driven on each, the built-in tasks, and the table
// of what each scored. It reaches desktops only through the daemon and the
// guest API (package tasks); the image store and the daemon's binary are the
// caller's, given as Host.
package mainjob
