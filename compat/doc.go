// Package compat is the differential harness: it sends the same request to
// guestd and to OSWorld's unmodified main.py on the same desktop and compares
// the answers field by field after one documented normalisation (Normalize),
// classifying each difference against a reviewed known-differences list.
//
// Two servers, one desktop: both run inside one drums session (option "a"
// of the compat issue). The engine starts guestd on port 5001
// (Request.GuestPort); main.py, staged from $DRUMS_UPSTREAM into the
// session's starting files as in an OSWorld VM (/home/user/server), is
// started inside it as user on its fixed port 5000. So both see the same X
// display, D-Bus and AT-SPI buses, home, windows and processes, with no
// copy that could drift; removing the session ends every process the run
// started. Cases that change the desktop run setup, steps and cleanup once
// per server (upstream first); read-only ones set up once and ask both.
// External runs the same cases on a desktop brought up by someone else.
// Bench times the requests of latency.json against both servers on the
// same desktop, interleaved, for the latency comparison.
package compat
