#pragma once

namespace qpi {

// Round trip of one cache line between two threads, in ns (min of `repeats`
// runs of `iters` round trips). The benchmark uses it to see where the host
// has put our vCPUs: on this project's shared VMs it reads ~90 ns when both
// vCPUs sit on one core complex and ~360 ns when the host has moved one away
// for a while, and in the far state onnxruntime's 2-thread latency is 35%
// worse while FMA and single-thread bandwidth are unchanged.
double core_to_core_ns(int iters, int repeats);

}  // namespace qpi
