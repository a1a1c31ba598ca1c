#include "node/backends/gpu/GpuSelection.hpp"

#include "common/text.hpp"

#include <algorithm>
#include <charconv>

namespace colmet::node::backends::gpu {

namespace {

constexpr int k_nvidia_major = 195;
constexpr int k_nvidia_ctl_minor = 255;

bool parse_int(std::string_view s, int &out)
{
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

std::vector<std::string_view> split(std::string_view s, char sep)
{
    std::vector<std::string_view> parts;
    while (true) {
        const size_t at = s.find(sep);
        parts.push_back(s.substr(0, at));
        if (at == std::string_view::npos)
            return parts;
        s.remove_prefix(at + 1);
    }
}

// The GPU minors a devices.list allows; nullopt-like `all` when it allows
// every NVIDIA device (or every device).
void allowed_minors(std::string_view text, std::vector<int> &minors, bool &all)
{
    all = false;
    for (std::string_view line : split(text, '\n')) {
        line = text::trim(line);
        if (line.empty())
            continue;
        // "a *:* rwm", "c 195:0 rw", "c 195:* rwm"
        const size_t sp = line.find(' ');
        const std::string_view type = line.substr(0, sp);
        std::string_view rest = sp == std::string_view::npos ? std::string_view{} : text::trim(line.substr(sp));
        const std::string_view numbers = rest.substr(0, rest.find(' '));
        if (type == "a") {
            all = true;
            continue;
        }
        const size_t colon = numbers.find(':');
        if (type != "c" || colon == std::string_view::npos)
            continue;
        const std::string_view major = numbers.substr(0, colon), minor = numbers.substr(colon + 1);
        int m = 0;
        if (major == "*" || (parse_int(major, m) && m == k_nvidia_major)) {
            if (minor == "*")
                all = true;
            else if (int n = 0; parse_int(minor, n) && n < k_nvidia_ctl_minor)
                minors.push_back(n);
        }
    }
}

}  // namespace

Result<Selection> select_gpus(const std::vector<DeviceId> &devices, std::string_view devices_list,
                              std::string_view list, std::string_view list_source)
{
    Selection out;
    if (!text::trim(devices_list).empty()) {
        std::vector<int> minors;
        bool all = false;
        allowed_minors(devices_list, minors, all);
        if (!all) {
            for (const auto &d : devices)
                if (d.minor >= 0 && std::find(minors.begin(), minors.end(), d.minor) != minors.end())
                    out.indices.push_back(d.index);
            out.source = "devices cgroup";
            out.exclusive = true;
            return out;
        }
    }
    const std::string_view items = text::trim(list);
    if (!items.empty() && items != "all") {
        for (std::string_view item : split(items, ',')) {
            item = text::trim(item);
            if (item.empty() || item == "NoDevFiles")
                continue;
            int n = -1;
            const bool number = parse_int(item, n);
            auto it = std::find_if(devices.begin(), devices.end(),
                                   [&](const DeviceId &d) { return number ? d.minor == n : d.uuid == item; });
            if (it == devices.end())
                return Error::invalid(std::string(list_source) + ": '" + std::string(item) +
                                      "' names no GPU of this node" +
                                      (number ? " (numbers are /dev/nvidia<N> numbers)" : ""));
            out.indices.push_back(it->index);
        }
        std::sort(out.indices.begin(), out.indices.end());
        out.indices.erase(std::unique(out.indices.begin(), out.indices.end()), out.indices.end());
        out.source = std::string(list_source);
        return out;
    }
    for (const auto &d : devices)
        out.indices.push_back(d.index);
    out.source = "every GPU of the node (the job's are not known)";
    return out;
}

}  // namespace colmet::node::backends::gpu
