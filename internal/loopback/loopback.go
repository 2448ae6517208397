// Package loopback finds a free port on 127.0.0.1 and asks a server there
// whether it answers, for the tests' and the bench's own redis-servers.
package loopback

import (
	"bufio"
	"errors"
	"net"
	"strconv"
	"time"
)

// FreePort asks the kernel for a free TCP port on 127.0.0.1 and releases
// it: another process may take it before the caller does.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Ping sends one inline PING to addr on a fresh connection and returns nil
// when the reply is +PONG, within about 700ms at most.
func Ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(500 * time.Millisecond)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return errors.New("PING answered " + strconv.Quote(line))
	}
	return nil
}
