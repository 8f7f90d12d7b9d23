// Package scripts holds the shell scripts the Makefile and CI run (deps,
// as-root); its tests run them over fake commands on PATH. It has no Go
// API.
package scripts
