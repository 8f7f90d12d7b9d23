package osworld

import (
	"net/url"
	"regexp"
	"strings"
)

var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+\-.]*://`)

// secondLevel lists second-level labels under a country code that act as a
// public suffix ("co.uk", "com.sg"). OSWorld uses tldextract's public suffix
// list; for the URLs tasks compare (sites' home pages and paths) this short
// rule gives the same domain.
var secondLevel = map[string]bool{"co": true, "com": true, "org": true, "net": true, "ac": true, "gov": true, "edu": true, "ne": true, "or": true}

// registeredDomain splits a lower-case host into subdomain and domain with
// the public suffix removed.
func registeredDomain(host string) (sub, domain string) {
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	labels := strings.Split(host, ".")
	if len(labels) < 2 || isIPv4(host) {
		return "", host
	}
	suffix := 1
	if n := len(labels); n >= 3 && len(labels[n-1]) == 2 && secondLevel[labels[n-2]] {
		suffix = 2
	}
	rest := labels[:len(labels)-suffix]
	return strings.Join(rest[:len(rest)-1], "."), rest[len(rest)-1]
}

func isIPv4(h string) bool {
	parts := strings.Split(h, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// normalizeURL is compare_urls' normalisation: default scheme http, lower
// case, "www" dropped when it is the only subdomain, the public suffix
// dropped, a lone "/" path dropped; params, query and fragment kept when
// full.
func normalizeURL(raw string, full bool) string {
	if !schemeRE.MatchString(raw) {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	sub, dom := registeredDomain(strings.ToLower(u.Host))
	if sub == "www" {
		sub = ""
	}
	netloc := dom
	if sub != "" {
		netloc = sub + "." + dom
	}
	p := u.EscapedPath()
	if p == "/" {
		p = ""
	}
	out := strings.ToLower(u.Scheme) + "://" + netloc + p
	if full {
		if u.RawQuery != "" || u.ForceQuery {
			out += "?" + u.RawQuery
		}
		if u.Fragment != "" {
			out += "#" + u.EscapedFragment()
		}
	}
	return out
}

// compareURLs is OSWorld's metrics.utils.compare_urls.
func compareURLs(a, b string, full bool) bool {
	return normalizeURL(a, full) == normalizeURL(b, full)
}
