package cpumanager

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/utils/cpuset"
)

// Take picks n CPUs out of available, packed as upstream's static policy
// packs them: whole free sockets first while n needs at least a socket,
// then whole free NUMA nodes, then whole free cores, then single CPUs; at
// each step from the socket (and core) with the fewest free CPUs, so that
// the largest free units stay whole for the next request. Ties go to the
// lowest ID. Too few available CPUs is upstream's error ("not enough cpus
// available to satisfy request: requested=N, available=M").
func Take(t *Topology, available cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	if n == 0 {
		return cpuset.New(), nil
	}
	if n < 0 {
		return cpuset.New(), fmt.Errorf("cannot take a negative number of cpus (%d)", n)
	}
	if available.Size() < n {
		return cpuset.New(), fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", n, available.Size())
	}
	a := &accumulator{t: t, free: available, need: n, result: cpuset.New()}
	a.takeWhole(func(c CPU) int { return c.Socket })
	a.takeWhole(func(c CPU) int { return c.NUMANode })
	a.takeWhole(func(c CPU) int { return c.Core })
	a.takeSingles()
	return a.result, nil
}

// TakeAligned takes n CPUs preferring those of the given NUMA nodes: as
// many as it can from them (packed, as Take), the rest from the other
// available CPUs. With no nodes it is Take.
func TakeAligned(t *Topology, available cpuset.CPUSet, n int, nodes []int) (cpuset.CPUSet, error) {
	if len(nodes) == 0 || available.Size() < n {
		return Take(t, available, n)
	}
	aligned := available.Intersection(t.CPUsInNUMANodes(nodes...))
	first, err := Take(t, aligned, min(n, aligned.Size()))
	if err != nil {
		return cpuset.New(), err
	}
	rest, err := Take(t, available.Difference(first), n-first.Size())
	if err != nil {
		return cpuset.New(), err
	}
	return first.Union(rest), nil
}

type accumulator struct {
	t      *Topology
	free   cpuset.CPUSet
	need   int
	result cpuset.CPUSet
}

func (a *accumulator) take(s cpuset.CPUSet) {
	a.result = a.result.Union(s)
	a.free = a.free.Difference(s)
	a.need -= s.Size()
}

// freeIn counts the free CPUs sharing key's unit with c.
func (a *accumulator) count(of func(CPU) int, id int) (free, all int) {
	for _, c := range a.t.cpus {
		if of(c) == id {
			all++
			if a.free.Contains(c.ID) {
				free++
			}
		}
	}
	return free, all
}

// takeWhole takes units (sockets, NUMA nodes or cores) all of whose CPUs
// are free, while the request still needs at least a whole unit; units in
// the emptiest socket first.
func (a *accumulator) takeWhole(of func(CPU) int) {
	for a.need > 0 {
		type unit struct {
			id, size, socketFree int
			cpus                 cpuset.CPUSet
		}
		var units []unit
		for _, id := range a.t.ids(of) {
			free, all := a.count(of, id)
			if free != all || all > a.need {
				continue
			}
			cpus := a.t.filter(func(c CPU) bool { return of(c) == id })
			first, _ := a.t.cpu(cpus.List()[0])
			sf, _ := a.count(func(c CPU) int { return c.Socket }, first.Socket)
			units = append(units, unit{id: id, size: all, socketFree: sf, cpus: cpus})
		}
		if len(units) == 0 {
			return
		}
		slices.SortFunc(units, func(x, y unit) int {
			return cmp.Or(cmp.Compare(x.socketFree, y.socketFree), cmp.Compare(x.cpus.List()[0], y.cpus.List()[0]))
		})
		a.take(units[0].cpus)
	}
}

// takeSingles takes the remaining CPUs one by one: from the socket with
// the fewest free CPUs, within it from the core with the fewest free CPUs
// (a core already split first), lowest ID first.
func (a *accumulator) takeSingles() {
	for a.need > 0 && a.free.Size() > 0 {
		ids := a.free.List()
		best, bestSocket, bestCore := -1, 0, 0
		for _, id := range ids {
			c, _ := a.t.cpu(id)
			sf, _ := a.count(func(c CPU) int { return c.Socket }, c.Socket)
			cf, _ := a.count(func(c CPU) int { return c.Core }, c.Core)
			if best < 0 || sf < bestSocket || (sf == bestSocket && cf < bestCore) {
				best, bestSocket, bestCore = id, sf, cf
			}
		}
		a.take(cpuset.New(best))
	}
}
