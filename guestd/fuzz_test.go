package guestd

import (
	"errors"
	"mime/multipart"
	"strings"
	"testing"
	"unicode/utf8"
)

// The fuzz targets of guestd's request parsing: a request body from a
// client (or a web page) never panics a parser, and what parses means one
// thing. The seed corpus is in testdata/fuzz; make fuzz runs each briefly.

// Form bodies, urlencoded and multipart, parse to valid UTF-8 fields or a
// client error, never a panic.
func FuzzForm(f *testing.F) {
	f.Add("file_path=%2Ftmp%2Fa+b&x=", false)
	f.Add("a=%zz&=&&b=%41%", false)
	f.Add("--X\r\nContent-Disposition: form-data; name=\"file_path\"\r\n\r\n/tmp/a\r\n--X\r\nContent-Disposition: form-data; name=\"file_data\"; filename=\"a\"\r\n\r\ndata\r\n--X--\r\n", true)
	f.Add("--X\r\nContent-Disposition: form-data\r\n\r\n\xff\r\n--X--", true)
	f.Fuzz(func(t *testing.T, body string, isMultipart bool) {
		var fm form
		if isMultipart {
			var err error
			fm, err = readMultipart(multipart.NewReader(strings.NewReader(body), "X"), nil)
			if err != nil {
				var re *replyError
				if !errors.As(err, &re) || !re.input {
					t.Fatalf("multipart %q: an error that is not the client's: %v", body, err)
				}
				return
			}
		} else {
			fm = parseURLEncoded(body)
		}
		for k, vs := range fm {
			for _, v := range vs {
				if !utf8.ValidString(v) {
					t.Fatalf("%q: field %q = %q is not UTF-8", body, k, v)
				}
			}
		}
	})
}
