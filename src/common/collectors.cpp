#include "common/collectors.hpp"

#include "common/names.hpp"

#include <algorithm>
#include <cctype>

namespace colmet {
namespace {

std::string_view trim_blanks(std::string_view s)
{
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!s.empty() && blank(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && blank(s.back()))
        s.remove_suffix(1);
    return s;
}

// "scheme://address": a lower-case scheme, a non-empty printable address.
bool endpoint_like(std::string_view uri)
{
    const size_t sep = uri.find("://");
    if (sep == std::string_view::npos || sep == 0 || sep + 3 == uri.size())
        return false;
    for (char c : uri.substr(0, sep))
        if (!std::islower(static_cast<unsigned char>(c)))
            return false;
    return std::all_of(uri.begin(), uri.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u > 0x20 && u < 0x7f;
    });
}

// splitmix64's finaliser: FNV-1a alone mixes the last bytes poorly.
uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

}  // namespace

Result<std::vector<std::string>> parse_collector_list(std::string_view text)
{
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t comma = text.find_first_of(",\n", start);
        const std::string_view item =
            trim_blanks(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (item.empty())
            return Error::invalid("collector list '" + std::string(text) + "': an empty address");
        if (!endpoint_like(item))
            return Error::invalid("collector address '" + std::string(item) +
                                  "' is not a ZeroMQ endpoint such as tcp://collector:5556");
        if (std::find(out.begin(), out.end(), item) != out.end())
            return Error::invalid("collector address '" + std::string(item) + "' is listed twice");
        if (out.size() == k_max_collectors)
            return Error::invalid("more than " + std::to_string(k_max_collectors) + " collectors listed");
        out.emplace_back(item);
        if (comma == std::string_view::npos)
            return out;
        start = comma + 1;
    }
}

size_t collector_index(const std::vector<std::string> &collectors, std::string_view job_id)
{
    size_t best = 0;
    uint64_t best_score = 0;
    std::string key;
    for (size_t i = 0; i < collectors.size(); ++i) {
        key.assign(collectors[i]);
        key.push_back('\n');
        key.append(job_id);
        const uint64_t score = mix(fnv1a64(key));
        if (i == 0 || score > best_score) {
            best = i;
            best_score = score;
        }
    }
    return best;
}

Result<std::string> ack_endpoint_of(std::string_view data_uri)
{
    const size_t sep = data_uri.find("://");
    if (sep == std::string_view::npos || !endpoint_like(data_uri))
        return Error::invalid("'" + std::string(data_uri) + "' is not a ZeroMQ endpoint");
    const std::string_view scheme = data_uri.substr(0, sep);
    if (scheme == "ipc" || scheme == "inproc")
        return std::string(data_uri) + ".ack";
    const size_t colon = data_uri.rfind(':');
    const std::string_view port = colon > sep ? data_uri.substr(colon + 1) : std::string_view();
    unsigned value = 0;
    const bool digits = !port.empty() && port.size() <= 5 &&
                        std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits)
        for (char c : port)
            value = value * 10 + static_cast<unsigned>(c - '0');
    if (scheme != "tcp" || !digits || value == 0 || value >= 65535)
        return Error::invalid("no acknowledgement endpoint follows from '" + std::string(data_uri) +
                              "' (the rule needs tcp://HOST:PORT with PORT below 65535, or ipc://): set it "
                              "explicitly, or 'none' for no acknowledgements");
    return std::string(data_uri.substr(0, colon + 1)) + std::to_string(value + 1);
}

}  // namespace colmet
