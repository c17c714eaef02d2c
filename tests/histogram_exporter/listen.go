package main

import (
	"fmt"
	"net"
	"os"
)

// listenOn opens the address and prints the port it got on stdout, so a
// test can ask for port 0 and learn which one was given.
func listenOn(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stdout, "%d\n", ln.Addr().(*net.TCPAddr).Port)
	return ln, nil
}
