#include "AllocationCounter.hpp"

#include <cstdlib>
#include <new>

namespace {
bool g_counting = false;
size_t g_allocations = 0;
}  // namespace

void *operator new(std::size_t size)
{
    if (g_counting)
        ++g_allocations;
    if (void *p = std::malloc(size == 0 ? 1 : size))
        return p;
    throw std::bad_alloc();
}
void *operator new(std::size_t size, const std::nothrow_t &) noexcept
{
    if (g_counting)
        ++g_allocations;
    return std::malloc(size == 0 ? 1 : size);
}
void *operator new[](std::size_t size) { return ::operator new(size); }
void *operator new[](std::size_t size, const std::nothrow_t &tag) noexcept { return ::operator new(size, tag); }
// Every form of delete matches the malloc above (the standard library's
// std::stable_sort, for one, uses the nothrow forms).
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }

namespace colmet::test {

void start_counting_allocations()
{
    g_allocations = 0;
    g_counting = true;
}

size_t stop_counting_allocations()
{
    g_counting = false;
    return g_allocations;
}

}  // namespace colmet::test
