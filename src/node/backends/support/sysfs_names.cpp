#include "node/backends/support/sysfs_names.hpp"

#include "common/file_io.hpp"
#include "common/text.hpp"

#include <algorithm>
#include <charconv>
#include <system_error>

namespace colmet::node::backends {

std::string metric_part(std::string_view text)
{
    std::string out;
    bool gap = false;
    for (char c : text) {
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
            if (gap && !out.empty())
                out += '_';
            out += c;
            gap = false;
        } else {
            gap = true;
        }
        if (out.size() >= 48)
            break;
    }
    return out.empty() ? std::string("unnamed") : out;
}

std::vector<NumberedEntry> numbered_entries(const std::filesystem::path &dir, std::string_view prefix,
                                            std::string_view suffix)
{
    std::vector<NumberedEntry> out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        std::string_view rest(name);
        if (!rest.starts_with(prefix) || !rest.ends_with(suffix))
            continue;
        rest = rest.substr(prefix.size(), rest.size() - prefix.size() - suffix.size());
        unsigned long n = 0;
        auto [ptr, err] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
        if (rest.empty() || err != std::errc() || ptr != rest.data() + rest.size())
            continue;
        out.push_back({std::move(name), n});
    }
    std::sort(out.begin(), out.end(), [](const auto &a, const auto &b) { return a.number < b.number; });
    return out;
}

std::vector<std::string> subdirectories(const std::filesystem::path &dir)
{
    std::vector<std::string> out;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_directory(ec))
            out.push_back(it->path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

std::optional<std::string> read_trimmed(const std::filesystem::path &path)
{
    auto text = read_file(path);
    if (!text)
        return std::nullopt;
    return std::string(text::trim(*text));
}

}  // namespace colmet::node::backends
