// Package machine mirrors the layout of Katalyst's machine.CPUSet (package machine, an exported
// flag and an unexported set) and its JSON form, written from the type's documented behaviour.
package machine

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// CPUSet is a set of ints. A zero CPUSet (Initialed false, nil map) is what the JSON string
// "nil" decodes to; every parsed set, even an empty one, has Initialed true and a non-nil map.
type CPUSet struct {
	Initialed bool
	elems     map[int]struct{}
}

func newSet() CPUSet { return CPUSet{Initialed: true, elems: map[int]struct{}{}} }

// UnmarshalJSON sees the raw JSON token: quotes are stripped but escapes are not decoded.
func (s *CPUSet) UnmarshalJSON(b []byte) error {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return errors.New("cpuset: not a JSON string")
	}
	text := string(b[1 : len(b)-1])
	if text == "nil" {
		*s = CPUSet{}
		return nil
	}
	parsed, err := parse(text)
	if err != nil {
		return err
	}
	*s = parsed
	return nil
}

func (s CPUSet) MarshalJSON() ([]byte, error) {
	if !s.Initialed {
		return []byte(`"nil"`), nil
	}
	return []byte(`"` + s.String() + `"`), nil
}

// parse reads a Linux list ("0-3,8"). Like Katalyst's parser: an item with more than one '-'
// is ignored, a reversed range adds nothing, strconv.Atoi decides what a number is.
func parse(text string) (CPUSet, error) {
	out := newSet()
	if text == "" {
		return out, nil
	}
	for _, item := range strings.Split(text, ",") {
		bounds := strings.Split(item, "-")
		switch len(bounds) {
		case 1:
			n, err := strconv.Atoi(bounds[0])
			if err != nil {
				return newSet(), err
			}
			out.elems[n] = struct{}{}
		case 2:
			lo, err := strconv.Atoi(bounds[0])
			if err != nil {
				return newSet(), err
			}
			hi, err := strconv.Atoi(bounds[1])
			if err != nil {
				return newSet(), err
			}
			for n := lo; n <= hi; n++ {
				out.elems[n] = struct{}{}
			}
		}
	}
	return out, nil
}

// String gives the canonical list form with runs collapsed.
func (s CPUSet) String() string {
	ids := make([]int, 0, len(s.elems))
	for n := range s.elems {
		ids = append(ids, n)
	}
	sort.Ints(ids)
	var parts []string
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(ids[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ids[i], ids[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
