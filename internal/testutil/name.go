package testutil

import (
	"crypto/rand"
	"math/big"
)

// RandomName is n random lower-case letters and digits: the random part
// of a test run's prefix for host-global names (links, nftables tables,
// cgroups), which must start with a letter the caller puts first.
func RandomName(n int) string {
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	for i := range b {
		v, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alpha))))
		b[i] = alpha[v.Int64()]
	}
	return string(b)
}
