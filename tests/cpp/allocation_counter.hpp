// Counts heap allocations, a deterministic measure of the work a call does (the same on any
// machine, under any load), for tests that bound work where they used to assert seconds.
#pragma once

#include <cstdint>
#include <functional>

namespace vramplan_test {

// The heap allocations (operator new calls, from any thread) made while `fn` runs.
std::int64_t allocations_of(const std::function<void()>& fn);

}  // namespace vramplan_test
