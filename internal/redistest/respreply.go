package redistest

import (
	"bytes"
	"strconv"
)

// replyLen returns the length of the one whole reply (RESP2 or RESP3) at the
// start of b, or 0 if b holds only part of one. An attribute (|) counts with
// the reply it annotates. It is what [Net] uses to cut a server's stream into
// replies and pushed messages.
func replyLen(b []byte) (int, error) {
	return replyEnd(b, 0)
}

// replyEnd returns the position after the reply that starts at b[pos], or 0 if
// it is not complete yet.
func replyEnd(b []byte, pos int) (int, error) {
	if pos >= len(b) {
		return 0, nil
	}
	kind := b[pos]
	v, next, err := replyHeader(b, pos)
	if err != nil || next == 0 {
		return 0, err
	}
	switch kind {
	case '+', '-', ':', '_', ',', '#', '(':
		return next, nil
	case '$', '!', '=':
		if v < 0 {
			return next, nil
		}
		end := next + v
		if len(b) < end+2 {
			return 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return 0, errRESP
		}
		return end + 2, nil
	case '*', '~', '>', '%', '|':
		n := max(v, 0)
		if kind == '%' || kind == '|' {
			n *= 2
		}
		for range n {
			if next, err = replyEnd(b, next); err != nil || next == 0 {
				return 0, err
			}
		}
		if kind == '|' {
			return replyEnd(b, next)
		}
		return next, nil
	}
	return 0, errRESP
}

// replyHeader parses the type byte and line at b[pos]: the number it carries
// for the types that carry one (-1 allowed), and the position after the
// line, or next == 0 if the line is not complete yet.
func replyHeader(b []byte, pos int) (v, next int, err error) {
	i := bytes.Index(b[pos:], []byte("\r\n"))
	if i < 0 {
		return 0, 0, nil
	}
	next = pos + i + 2
	switch b[pos] {
	case '$', '!', '=', '*', '~', '>', '%', '|':
		v, err = strconv.Atoi(string(b[pos+1 : pos+i]))
		if err != nil || v < -1 || v > maxRESPLen {
			return 0, 0, errRESP
		}
	}
	return v, next, nil
}

// pushKind returns the first element of a whole reply that is an array or a
// push of bulk strings ("message", "subscribe", "pong", ...), lower-cased, or
// "" for any other reply.
func pushKind(reply []byte) string {
	if len(reply) == 0 || (reply[0] != '>' && reply[0] != '*') {
		return ""
	}
	v, next, err := replyHeader(reply, 0)
	if err != nil || next == 0 || v < 1 || next >= len(reply) || reply[next] != '$' {
		return ""
	}
	size, start, err := replyHeader(reply, next)
	if err != nil || start == 0 || size < 0 || start+size > len(reply) {
		return ""
	}
	return string(bytes.ToLower(reply[start : start+size]))
}
