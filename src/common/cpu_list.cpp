#include "common/cpu_list.hpp"

#include "common/text.hpp"

#include <algorithm>

namespace colmet {

Result<std::vector<int>> parse_cpu_list(std::string_view text)
{
    constexpr uint64_t k_max_cpu = 65535;
    std::vector<int> cpus;
    text = text::trim(text);
    while (!text.empty()) {
        auto comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        auto dash = item.find('-');
        auto first = text::parse_u64(item.substr(0, dash));
        auto last = dash == std::string_view::npos ? first : text::parse_u64(item.substr(dash + 1));
        if (!first || !last || *first > *last || *last > k_max_cpu)
            return Error::parse("invalid CPU list item '" + std::string(item) + "'");
        for (uint64_t c = *first; c <= *last; ++c)
            cpus.push_back(static_cast<int>(c));
    }
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    return cpus;
}

}  // namespace colmet
