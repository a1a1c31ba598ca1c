#include "node/ChooseCollector.hpp"

#include "common/collectors.hpp"
#include "common/text.hpp"

namespace colmet::node {

namespace {

// The chosen collector's ack endpoint: derived, "none", or the list's entry.
Result<std::string> choose_ack_uri(const std::string &ack_uri, const std::string &data_uri, size_t chosen,
                                   size_t collectors)
{
    if (ack_uri == k_no_ack_endpoint)
        return std::string();
    if (ack_uri.empty()) {
        auto derived = ack_endpoint_of(data_uri);
        return derived ? derived : derived.error().with_context("--ack-uri");
    }
    auto list = parse_collector_list(ack_uri);
    if (!list)
        return list.error().with_context("--ack-uri");
    if (list->size() != collectors)
        return Error::invalid("--ack-uri lists " + std::to_string(list->size()) + " endpoints for " +
                              std::to_string(collectors) +
                              " collectors: give one per collector, in --zeromq-uri's "
                              "order, or none to derive them");
    return (*list)[chosen];
}

}  // namespace

Result<ZmqOptions> choose_collector(const ZmqOptions &options, std::string_view job_id)
{
    auto collectors = parse_collector_list(options.uri);
    if (!collectors)
        return collectors.error().with_context("--zeromq-uri");
    ZmqOptions out = options;
    const size_t chosen = collector_index(*collectors, job_id);
    out.uri = (*collectors)[chosen];
    auto ack = choose_ack_uri(options.ack_uri, out.uri, chosen, collectors->size());
    if (!ack)
        return ack.error();
    out.ack_uri = std::move(*ack);
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
