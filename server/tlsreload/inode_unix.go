//go:build unix

package tlsreload

import (
	"os"
	"syscall"
)

// inode is the file's inode number: a replacement renamed into place has
// another one even when its size and modification time match.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino) // uint32 on some platforms
	}
	return 0
}
