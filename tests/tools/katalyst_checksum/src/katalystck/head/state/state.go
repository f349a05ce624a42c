// Package state mirrors the checkpoint types of the network QRM plugin at Katalyst's current
// layout (package state). Field order, Go types and JSON tags are what the checksum depends on.
package state

import (
	"katalystck/checksum"
	"katalystck/head/commonstate"
	"katalystck/machine"
)

type AllocationInfo struct {
	commonstate.AllocationMeta `json:",inline"`

	Egress     uint32         `json:"egress"`
	Ingress    uint32         `json:"ingress"`
	Identifier string         `json:"identifier"`
	NSName     string         `json:"ns_name"`
	IfName     string         `json:"if_name"`
	NumaNodes  machine.CPUSet `json:"numa_node"`
	NetClassID string         `json:"net_class_id"`
}

type (
	ContainerEntries map[string]*AllocationInfo
	PodEntries       map[string]ContainerEntries
)

type NICState struct {
	EgressState  BandwidthInfo `json:"egress_state"`
	IngressState BandwidthInfo `json:"ingress_state"`
	PodEntries   PodEntries    `json:"pod_entries"`
}

type BandwidthInfo struct {
	Capacity       uint32
	SysReservation uint32
	Reservation    uint32
	Allocatable    uint32
	Allocated      uint32
	Free           uint32
}

type NICMap map[string]*NICState

type NetworkPluginCheckpoint struct {
	PolicyName   string            `json:"policyName"`
	MachineState NICMap            `json:"machineState"`
	PodEntries   PodEntries        `json:"pod_entries"`
	Checksum     checksum.Checksum `json:"checksum"`
}

// New is what Katalyst decodes into: both maps start empty, not nil, so a member missing from
// the file leaves an empty map while an explicit null makes it nil.
func New() *NetworkPluginCheckpoint {
	return &NetworkPluginCheckpoint{MachineState: NICMap{}, PodEntries: PodEntries{}}
}
