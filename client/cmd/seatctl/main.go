// Command seatctl administers a seatd server; see package
// github.com/seatd/seatd/client/seatctl and `seatctl --help`.
package main

import (
	"os"

	"github.com/seatd/seatd/client/seatctl"
)

func main() { os.Exit(seatctl.Main(os.Args[1:], os.Stdout, os.Stderr)) }
