//go:build !unix

package main

import "os"

// maxRSS is not known on this system; the report leaves it out.
func maxRSS(*os.ProcessState) int64 { return 0 }
