#include "AllocationCounter.hpp"

#include <cstdlib>
#include <new>

namespace {
bool g_counting = false;
size_t g_allocations = 0;
} // namespace

void *operator new(std::size_t size)
{
    if (g_counting)
        ++g_allocations;
    if (void *p = std::malloc(size == 0 ? 1 : size))
        return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

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

} // namespace colmet::test
