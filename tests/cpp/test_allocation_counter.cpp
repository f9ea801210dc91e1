// The replacement operator new behind allocation_counter.hpp, and its own test.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "allocation_counter.hpp"

// GCC inlines the replacement pair below into this file's own new/delete expressions and then
// flags the malloc/free inside as mismatched; they are a matched pair.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {

std::atomic<bool> g_counting{false};
std::atomic<std::int64_t> g_allocations{0};

}  // namespace

namespace vramplan_test {

std::int64_t allocations_of(const std::function<void()>& fn) {
  g_allocations = 0;
  g_counting = true;
  fn();
  g_counting = false;
  return g_allocations.load();
}

}  // namespace vramplan_test

// Every allocation of the test binary goes through here; only those inside allocations_of are
// counted.
void* operator new(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
// std::stable_sort's temporary buffer comes from the nothrow form: it must reach malloc too, or
// the delete above frees what another allocator made (AddressSanitizer: alloc-dealloc-mismatch).
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  }
  return std::malloc(size == 0 ? 1 : size);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

// The counter counts what it should: three unique_ptr<int> are three allocations, a vector
// reserved once is one, nothing is nothing.
TEST(AllocationCounter, CountsEachAllocation) {
  EXPECT_EQ(vramplan_test::allocations_of([] {}), 0);
  EXPECT_EQ(vramplan_test::allocations_of([] {
              auto a = std::make_unique<int>(1);
              auto b = std::make_unique<int>(2);
              auto c = std::make_unique<int>(3);
              EXPECT_EQ(*a + *b + *c, 6);
            }),
            3);
  EXPECT_EQ(vramplan_test::allocations_of([] {
              std::vector<int> v;
              v.reserve(100);
              v.assign(100, 7);
            }),
            1);
}
