// Package browsertest drives headless Chromium for the tier-1 tests that
// open drums' pages in a real browser (Start, Page): Debian's chromium,
// which only the osworld image has, run in that image or, for a test
// already running there, directly, and spoken to over DevTools' pipe.
// Its own tests open a desktop's live view.
package browsertest
