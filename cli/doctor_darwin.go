package cli

import "syscall"

// translated reports whether this process runs under Rosetta 2
// (sysctl.proc_translated is 1 there, 0 natively, absent on Intel Macs).
func translated() bool {
	v, err := syscall.SysctlUint32("sysctl.proc_translated")
	return err == nil && v == 1
}
