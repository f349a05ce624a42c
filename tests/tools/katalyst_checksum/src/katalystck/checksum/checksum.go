// Package checksum stands in for k8s.io/kubernetes/pkg/kubelet/checkpointmanager/checksum: only
// the type matters here, because go-spew prints its package-qualified name.
package checksum

// Checksum is the stored FNV-1a 32-bit value, widened to 64 bits like the kubelet's.
type Checksum uint64
