// Counting calls to the global operator new, for tests that check a hot path
// allocates nothing. Linking colmet_alloc_counter replaces operator new and
// delete in the test binary (with malloc/free plus a counter).
#pragma once

#include <cstddef>
#include <vector>

namespace colmet::test {

void start_counting_allocations();
size_t stop_counting_allocations();  // allocations since start

// Allocations made by three sample() calls after one warm-up call.
template <typename Backend>
size_t allocations_in_samples(Backend &backend, std::vector<double> &values)
{
    backend.sample(values);  // warm-up
    start_counting_allocations();
    for (int i = 0; i < 3; ++i)
        backend.sample(values);
    return stop_counting_allocations();
}

}  // namespace colmet::test
