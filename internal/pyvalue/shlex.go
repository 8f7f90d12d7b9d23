package pyvalue

import "errors"

// Python's shlex.split raises these ValueErrors; their texts are the ones
// upstream would show.
var (
	ErrNoClosingQuotation = errors.New("No closing quotation")
	ErrNoEscapedCharacter = errors.New("No escaped character")
)

// ShlexSplit is Python's shlex.split(s) (POSIX mode, comments off,
// whitespace_split): whitespace is space, tab, CR and LF; single quotes
// are literal; in double quotes a backslash escapes only " and \ (and is
// kept otherwise); outside quotes a backslash escapes any character; ”
// gives an empty word; # is an ordinary character.
func ShlexSplit(s string) ([]string, error) {
	const (
		stWhite = iota
		stWord
		stSingle
		stDouble
		stEscape
	)
	var (
		words   []string
		word    []byte
		inWord  bool // a word has started (possibly empty, from quotes)
		state   = stWhite
		escFrom int // the state an escape returns to
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch state {
		case stWhite, stWord:
			switch c {
			case ' ', '\t', '\r', '\n':
				if inWord {
					words = append(words, string(word))
					word, inWord = word[:0], false
				}
				state = stWhite
			case '\'':
				state, inWord = stSingle, true
			case '"':
				state, inWord = stDouble, true
			case '\\':
				escFrom, state, inWord = stWord, stEscape, true
			default:
				word = append(word, c)
				state, inWord = stWord, true
			}
		case stSingle:
			if c == '\'' {
				state = stWord
			} else {
				word = append(word, c)
			}
		case stDouble:
			switch c {
			case '"':
				state = stWord
			case '\\':
				escFrom, state = stDouble, stEscape
			default:
				word = append(word, c)
			}
		case stEscape:
			if escFrom == stDouble && c != '"' && c != '\\' {
				word = append(word, '\\')
			}
			word = append(word, c)
			state = escFrom
		}
	}
	switch state {
	case stSingle, stDouble:
		return nil, ErrNoClosingQuotation
	case stEscape:
		return nil, ErrNoEscapedCharacter
	}
	if inWord {
		words = append(words, string(word))
	}
	return words, nil
}
