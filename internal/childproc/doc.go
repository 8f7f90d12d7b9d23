// Package childproc is how drums' host side starts a long-lived child (the
// daemon under drums tasks, OSWorld's Python worker): in a process group of
// its own, and told with a signal when its parent dies.
package childproc
