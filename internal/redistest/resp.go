package redistest

import (
	"bytes"
	"errors"
	"strconv"
)

// maxRESPLen bounds array lengths and bulk string sizes the parser accepts
// (Redis's own proto-max-bulk-len default is 512MB).
const maxRESPLen = 512 << 20

var errRESP = errors.New("redistest: malformed RESP command")

// respParser reassembles the commands a client writes — RESP arrays of bulk
// strings, *N\r\n$len\r\narg\r\n... — from Write calls that may split one
// command or carry several. It is not safe for concurrent use.
type respParser struct {
	buf    []byte
	broken bool // malformed input seen; the parser stays silent from then on
}

// feed appends b and returns every command completed by it, oldest first.
// Incomplete trailing bytes are kept for the next call. On malformed input
// feed returns the commands parsed before it and stops recognising commands
// on this stream for good (resynchronising inside a byte stream is guesswork).
func (p *respParser) feed(b []byte) [][]string {
	if p.broken {
		return nil
	}
	p.buf = append(p.buf, b...)
	var cmds [][]string
	for len(p.buf) > 0 {
		args, n, err := parseCommand(p.buf)
		if err != nil {
			p.broken, p.buf = true, nil
			return cmds
		}
		if n == 0 {
			break
		}
		cmds = append(cmds, args)
		p.buf = p.buf[n:]
	}
	if len(p.buf) == 0 {
		p.buf = nil // let a large command's buffer go
	}
	return cmds
}

// parseCommand parses one command at the start of b. It returns n == 0 and
// no error if b holds only part of a command.
func parseCommand(b []byte) (args []string, n int, err error) {
	count, pos, err := parseHeader(b, 0, '*')
	if err != nil || pos == 0 {
		return nil, 0, err
	}
	args = make([]string, 0, min(count, 16))
	for range count {
		size, next, err := parseHeader(b, pos, '$')
		if err != nil || next == 0 {
			return nil, 0, err
		}
		end := next + size
		if len(b) < end+2 {
			return nil, 0, nil
		}
		if b[end] != '\r' || b[end+1] != '\n' {
			return nil, 0, errRESP
		}
		args = append(args, string(b[next:end]))
		pos = end + 2
	}
	return args, pos, nil
}

// parseHeader parses a "<kind><number>\r\n" line starting at b[pos]. It
// returns the number and the position after the line, or next == 0 if the
// line is not complete yet.
func parseHeader(b []byte, pos int, kind byte) (v, next int, err error) {
	if pos >= len(b) {
		return 0, 0, nil
	}
	if b[pos] != kind {
		return 0, 0, errRESP
	}
	i := bytes.Index(b[pos:], []byte("\r\n"))
	if i < 0 {
		if len(b)-pos > 32 {
			return 0, 0, errRESP // no number is this long
		}
		return 0, 0, nil
	}
	v, err = strconv.Atoi(string(b[pos+1 : pos+i]))
	if err != nil || v < 0 || v > maxRESPLen {
		return 0, 0, errRESP
	}
	return v, pos + i + 2, nil
}
