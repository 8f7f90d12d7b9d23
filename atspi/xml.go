package atspi

import (
	"strings"
	"unicode/utf8"
)

// The XML is written the way OSWorld's server writes it with lxml on
// libxml2 (guest-api.md §4.11): no declaration, no whitespace between
// elements, the eight namespace declarations on the root only, attributes in
// insertion order, `<tag …/>` for an empty element.

// namespaces are the prefixes and URIs in the order lxml declares them.
var namespaces = [...][2]string{
	{"st", "https://accessibility.ubuntu.example.org/ns/state"},
	{"attr", "https://accessibility.ubuntu.example.org/ns/attributes"},
	{"cp", "https://accessibility.ubuntu.example.org/ns/component"},
	{"doc", "https://accessibility.ubuntu.example.org/ns/document"},
	{"docattr", "https://accessibility.ubuntu.example.org/ns/document/attributes"},
	{"txt", "https://accessibility.ubuntu.example.org/ns/text"},
	{"val", "https://accessibility.ubuntu.example.org/ns/value"},
	{"act", "https://accessibility.ubuntu.example.org/ns/action"},
}

// element is one node of the output. Its tag, attribute names and every
// string in it have passed the checks lxml makes when the element is built.
type element struct {
	tag      string
	attrs    []xmlAttr
	text     string
	children []*element
}

// xmlAttr is an attribute; prefix is "" or one of namespaces.
type xmlAttr struct {
	prefix, local, value string
}

func (e *element) attr(prefix, local string) (string, bool) {
	for _, a := range e.attrs {
		if a.prefix == prefix && a.local == local {
			return a.value, true
		}
	}
	return "", false
}

// render writes e with the namespace declarations on it, as the root.
func render(e *element) string {
	var b strings.Builder
	e.write(&b, true)
	return b.String()
}

func (e *element) write(b *strings.Builder, root bool) {
	b.WriteByte('<')
	b.WriteString(e.tag)
	if root {
		for _, ns := range namespaces {
			b.WriteString(" xmlns:")
			b.WriteString(ns[0])
			b.WriteString(`="`)
			b.WriteString(ns[1])
			b.WriteByte('"')
		}
	}
	for _, a := range e.attrs {
		b.WriteByte(' ')
		if a.prefix != "" {
			b.WriteString(a.prefix)
			b.WriteByte(':')
		}
		b.WriteString(a.local)
		b.WriteString(`="`)
		escape(b, a.value, true)
		b.WriteByte('"')
	}
	if e.text == "" && len(e.children) == 0 {
		b.WriteString("/>")
		return
	}
	b.WriteByte('>')
	escape(b, e.text, false)
	for _, c := range e.children {
		c.write(b, false)
	}
	b.WriteString("</")
	b.WriteString(e.tag)
	b.WriteByte('>')
}

// escape is libxml2's escaping: markup characters as entities and CR as a
// character reference; in an attribute value (attr) also quotes as an
// entity and LF/TAB as character references, which text keeps literal.
func escape(b *strings.Builder, s string, attr bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '&':
			b.WriteString("&amp;")
		case c == '<':
			b.WriteString("&lt;")
		case c == '>':
			b.WriteString("&gt;")
		case c == '\r':
			b.WriteString("&#13;")
		case attr && c == '"':
			b.WriteString("&quot;")
		case attr && c == '\n':
			b.WriteString("&#10;")
		case attr && c == '\t':
			b.WriteString("&#9;")
		default:
			b.WriteByte(c)
		}
	}
}

// xmlString reports whether lxml accepts s as an attribute value or text:
// no C0 controls other than TAB, LF, CR, and neither U+FFFE nor U+FFFF.
// D-Bus strings are valid UTF-8, so nothing else can be wrong.
func xmlString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 {
			if c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			continue
		}
		// U+FFFE and U+FFFF are EF BF BE and EF BF BF.
		if c == 0xEF && i+2 < len(s) && s[i+1] == 0xBF && (s[i+2] == 0xBE || s[i+2] == 0xBF) {
			return false
		}
	}
	return true
}

// xmlName reports whether lxml accepts s as a tag or attribute local name:
// an XML 1.0 (fifth edition) Name without a colon, as libxml2 2.9 checks it.
func xmlName(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i, r := range s {
		if !nameStartChar(r) && (i == 0 || !nameChar(r)) {
			return false
		}
	}
	return true
}

func nameStartChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		return true
	case r < 0xC0:
		return false
	}
	return r <= 0xD6 || (r >= 0xD8 && r <= 0xF6) || (r >= 0xF8 && r <= 0x2FF) ||
		(r >= 0x370 && r <= 0x37D) || (r >= 0x37F && r <= 0x1FFF) ||
		(r >= 0x200C && r <= 0x200D) || (r >= 0x2070 && r <= 0x218F) ||
		(r >= 0x2C00 && r <= 0x2FEF) || (r >= 0x3001 && r <= 0xD7FF) ||
		(r >= 0xF900 && r <= 0xFDCF) || (r >= 0xFDF0 && r <= 0xFFFD) ||
		(r >= 0x10000 && r <= 0xEFFFF)
}

func nameChar(r rune) bool {
	return nameStartChar(r) || r == '-' || r == '.' || (r >= '0' && r <= '9') ||
		r == 0xB7 || (r >= 0x300 && r <= 0x36F) || (r >= 0x203F && r <= 0x2040)
}
