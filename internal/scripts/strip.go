package scripts

import "strings"

// stripLua returns src without its comments and with its string literals
// emptied: the code alone, where a name is a use of it (see used). The
// scripts have no long comments or long strings (--[[ ]], [[ ]]).
func stripLua(src string) string {
	var b strings.Builder
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == '-' && strings.HasPrefix(src[i:], "--"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			b.WriteByte('\n')
		case c == '\'' || c == '"':
			b.WriteByte(c)
			for i++; i < len(src) && src[i] != c; i++ {
				if src[i] == '\\' {
					i++
				}
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
