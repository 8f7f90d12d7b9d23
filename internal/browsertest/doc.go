// Package browsertest holds the tier-1 tests that open drums' pages in a
// real browser: headless Chromium, which only the osworld image has, so
// the package's tests run there. It has no code of its own.
package browsertest
