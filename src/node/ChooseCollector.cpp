// choose_collector(): one job's collector out of a configured list.
#include "common/collectors.hpp"
#include "common/text.hpp"
#include "node/Transport.hpp"

namespace colmet::node {

Result<ZmqOptions> choose_collector(const ZmqOptions &options, std::string_view job_id)
{
    auto collectors = parse_collector_list(options.uri);
    if (!collectors)
        return collectors.error().with_context("--zeromq-uri");
    ZmqOptions out = options;
    const size_t chosen = collector_index(*collectors, job_id);
    out.uri = (*collectors)[chosen];
    if (options.curve_server_key.find(',') == std::string::npos)
        return out;
    // One key file per collector, in the order of the addresses.
    std::vector<std::string> keys;
    size_t start = 0;
    while (true) {
        const size_t comma = options.curve_server_key.find(',', start);
        const std::string_view all = options.curve_server_key;
        keys.emplace_back(text::trim(all.substr(start, comma == std::string::npos ? comma : comma - start)));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    if (keys.size() != collectors->size())
        return Error::invalid("--curve-server-key lists " + std::to_string(keys.size()) + " key files for " +
                              std::to_string(collectors->size()) +
                              " collectors: give one file for all, or one per collector in the same order");
    for (const auto &key : keys)
        if (key.empty())
            return Error::invalid("--curve-server-key: an empty file name in the list");
    out.curve_server_key = keys[chosen];
    return out;
}

}  // namespace colmet::node
